package crash

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// stealLease writes a live lease for another holder straight into the
// daemon's database, as a daemon on another machine sharing the file would.
func stealLease(t *testing.T, d *daemon, holder string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+d.dbPath()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exp := time.Now().Add(time.Hour).UnixMilli()
	if _, err := db.ExecContext(context.Background(), `INSERT INTO writer_lease (id, holder, expires_at) VALUES (1, ?, ?)
		ON CONFLICT(id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at`, holder, exp); err != nil {
		t.Fatalf("steal lease: %v", err)
	}
}

// A daemon whose lease is taken by a different live holder stops with a
// clear error at its next renewal instead of writing beside it.
func TestDaemonExitsWhenAnotherHolderOwnsLease(t *testing.T) {
	d := newDaemon(t, plainBin, startFake(t), "DELTA_LEASE_TTL_MS=5000")
	d.start()
	stealLease(t, d, "other-machine")
	code := d.waitExit(20 * time.Second) // renewal every TTL/3 ≈ 1.7 s
	log := d.logText()
	if code == 0 || !strings.Contains(log, `held by \"other-machine\"`) && !strings.Contains(log, `held by "other-machine"`) {
		t.Fatalf("exit code %d; want a failure naming the other holder; log:\n%s", code, log)
	}
}

// A daemon refuses to start while a different live holder owns the lease,
// and starts once that holder is gone (the lease expired or was released).
func TestDaemonRefusesStartUnderForeignLease(t *testing.T) {
	d := newDaemon(t, plainBin, startFake(t))
	d.start()
	d.stop() // clean stop releases the lease and leaves the schema in place
	stealLease(t, d, "other-machine")
	d.proc = nil
	startErr := d.startExpectingExit()
	if !strings.Contains(startErr, "refusing to start") || !strings.Contains(startErr, "other-machine") {
		t.Fatalf("second start did not refuse clearly; log:\n%s", startErr)
	}
}

// A daemon killed with SIGKILL keeps its lease row; the restart with the
// same holder ID takes it back at once instead of waiting for the TTL.
func TestDaemonReacquiresOwnLeaseAfterKill(t *testing.T) {
	d := newDaemon(t, plainBin, startFake(t))
	d.start()
	d.kill9()
	d.start() // fails the test if the daemon exits or never becomes healthy
}
