package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
)

// TestDeltaCarriersOrderOnlyTheirRuns: a commit waits, before it sends,
// for an earlier taker of deltas of its own run or session, and not for a
// taker of another run's; a second taker of the same run's deltas waits
// for the first, so the run's deltas keep their order. The wait is shown
// with an ended context: a commit that must wait returns the context's
// error, one that need not goes on.
func TestDeltaCarriersOrderOnlyTheirRuns(t *testing.T) {
	tail := NewEventTail(&Store{}, "", TailOptions{Holder: "w1"})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()

	tail.SendDelta(event.New("r1", "s1", event.TextDelta, map[string]string{event.KeyDelta: "a"}))
	first, done1, err := tail.ahead(ctx, nil) // the sender takes r1's delta
	if err != nil || len(first) != 1 {
		t.Fatalf("sender took %d payloads, err %v; want the one delta", len(first), err)
	}

	other := event.New("r2", "s2", event.RunFinished, nil)
	if _, done, err := tail.ahead(ended, []*event.Event{&other}); err != nil {
		t.Fatalf("a commit of another run waited for r1's deltas: %v", err)
	} else {
		done()
	}
	same := event.New("r1", "s1", event.RunFinished, nil)
	if _, _, err := tail.ahead(ended, []*event.Event{&same}); !errors.Is(err, context.Canceled) {
		t.Fatalf("r1's run.finished did not wait for r1's delta in flight (err %v)", err)
	}
	sameSession := event.New("r3", "s1", event.RunStarted, nil)
	if _, _, err := tail.ahead(ended, []*event.Event{&sameSession}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a commit of the same session did not wait for its delta in flight (err %v)", err)
	}
	tail.SendDelta(event.New("r1", "s1", event.TextDelta, map[string]string{event.KeyDelta: "b"}))
	if _, _, err := tail.ahead(ended, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second taker of r1's deltas did not wait for the first (err %v)", err)
	}

	done1()
	payloads, done, err := tail.ahead(ended, []*event.Event{&same})
	if err != nil {
		t.Fatalf("r1's run.finished still waits once the delta's notification committed: %v", err)
	}
	done()
	if len(payloads) != 0 {
		t.Fatalf("the delta whose taker gave up came back: %v", payloads)
	}
	tail.relay.Lock()
	left := len(tail.carriers)
	tail.relay.Unlock()
	if left != 0 {
		t.Fatalf("%d carriers left after every taker ended", left)
	}
}

// TestHeartbeatRenewsFreeLeasesBesideABusyOne: on PostgreSQL, while a
// run's write holds one lease row FOR SHARE (its lease guard), the
// heartbeat's renewal of the worker's other leases commits at once rather
// than waiting for that write: their runs' guards are not held up behind
// it. The busy lease is renewed as soon as the write ends, and the count
// covers both.
func TestHeartbeatRenewsFreeLeasesBesideABusyOne(t *testing.T) {
	PostgresOnly(t, "one SQLite writer: no row is locked beside the heartbeat")
	ctx := context.Background()
	s := openTesting(t)
	t0 := time.Now()
	const ttl = time.Minute
	for _, sid := range []string{"busy", "free1", "free2"} {
		if err := s.AcquireSession(ctx, sid, "w1", ttl, t0); err != nil {
			t.Fatal(err)
		}
	}
	write, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = write.Rollback() }() // after the Commit below, a no-op
	var holder string
	if err := write.QueryRowContext(ctx, "SELECT holder FROM session_leases WHERE session_id = ? FOR SHARE", "busy").Scan(&holder); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Second)
	renewed := make(chan int64, 1)
	go func() {
		n, err := s.RenewSessionLeases(ctx, "w1", ttl, later)
		if err != nil {
			t.Error(err)
		}
		renewed <- n
	}()
	want := later.Add(ttl).UnixMilli()
	deadline := time.Now().Add(30 * time.Second) // a hang guard, not a timing assertion
	for {
		var n int
		if err := s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM session_leases WHERE session_id IN ('free1', 'free2') AND expires_at = ?", want).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the free leases were not renewed while another lease's row was held FOR SHARE")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := write.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := <-renewed; n != 3 {
		t.Fatalf("renewed %d leases, want 3", n)
	}
	leases, err := s.SessionLeases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if l.ExpiresAt.UnixMilli() != want {
			t.Fatalf("lease of %s expires at %s, want %s", l.SessionID, l.ExpiresAt, time.UnixMilli(want).UTC())
		}
	}
}

// TestReleaseSessionsGivesUpOnlyTheHoldersOwn: one release of several
// sessions drops the ones the holder leases and leaves another holder's.
func TestReleaseSessionsGivesUpOnlyTheHoldersOwn(t *testing.T) {
	ctx := context.Background()
	s := openTesting(t)
	t0 := time.Now()
	for sid, holder := range map[string]string{"a": "w1", "b": "w1", "c": "w1", "d": "w2"} {
		if err := s.AcquireSession(ctx, sid, holder, time.Minute, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ReleaseSessions(ctx, []string{"a", "c", "d", "nope"}, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseSessions(ctx, nil, "w1"); err != nil {
		t.Fatal(err)
	}
	leases, err := s.SessionLeases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range leases {
		left = append(left, l.SessionID+"="+l.Holder)
	}
	if fmt.Sprint(left) != "[b=w1 d=w2]" {
		t.Fatalf("leases left %v, want [b=w1 d=w2]", left)
	}
}

// TestHeldWritesCommitOrRollBackWithTheirTransaction: a write made with
// execLater in a run-life transaction is seen by the transaction's next
// statement, commits with the transaction (with and without events), and
// one that fails fails the transaction as a whole, its earlier writes
// rolled back with it.
func TestHeldWritesCommitOrRollBackWithTheirTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTesting(t)
	insert := "INSERT INTO sessions (id, owner, created_at) VALUES (?, '', 0)"
	count := func(id string) int {
		t.Helper()
		var n int
		if err := s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM sessions WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	err := s.groupTx(ctx, func(tx *sql.Tx) error {
		if err := s.execLater(ctx, tx, insert, "seen"); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM sessions WHERE id = ?", "seen").Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			t.Errorf("the transaction's next statement saw %d rows of its held write, want 1", n)
		}
		return s.execLater(ctx, tx, insert, "last") // held to the commit, no event
	})
	if err != nil {
		t.Fatal(err)
	}
	if count("seen") != 1 || count("last") != 1 {
		t.Fatalf("committed rows seen=%d last=%d, want 1 and 1", count("seen"), count("last"))
	}

	ev := event.New("", "with-event", event.Recall, nil)
	err = s.groupTx(ctx, func(tx *sql.Tx) error {
		if err := s.execLater(ctx, tx, insert, "with-event"); err != nil {
			return err
		}
		return s.insertEvent(ctx, tx, &ev) // the commit's pipeline carries both
	})
	if err != nil {
		t.Fatal(err)
	}
	if count("with-event") != 1 || ev.ID == 0 {
		t.Fatalf("row %d, event id %d: the held write and the event did not commit together", count("with-event"), ev.ID)
	}

	for _, withEvent := range []bool{false, true} {
		ev := event.New("", "doomed", event.Recall, nil)
		err = s.groupTx(ctx, func(tx *sql.Tx) error {
			if err := s.execLater(ctx, tx, insert, "doomed"); err != nil {
				return err
			}
			if err := s.execLater(ctx, tx, insert, "seen"); err != nil { // a duplicate key
				return err
			}
			if withEvent {
				return s.insertEvent(ctx, tx, &ev)
			}
			return nil
		})
		if err == nil {
			t.Fatalf("with event %v: a failing held write committed", withEvent)
		}
		if n := count("doomed"); n != 0 {
			t.Fatalf("with event %v: the write before the failing one committed (%d rows)", withEvent, n)
		}
	}
	// The connections are clean for the next transaction.
	if err := s.groupTx(ctx, func(tx *sql.Tx) error { return s.execLater(ctx, tx, insert, "after") }); err != nil {
		t.Fatal(err)
	}
	if count("after") != 1 {
		t.Fatal("a transaction after the failed ones did not commit")
	}
}

// openTesting opens a store on the backend under test, closed at cleanup.
func openTesting(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), TestingDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
