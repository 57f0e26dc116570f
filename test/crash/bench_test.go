package crash

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkRestartResume256 measures a restart with 256 runs in flight. The
// fake model holds every call, so the runs stay in flight across
// iterations; each iteration SIGKILLs the daemon and starts a new process
// on the same database. One op is exec of the new process → every run
// calling the model again. It reports, each from exec and averaged:
//
//   - ms-to-healthz/op: /healthz answers (the port is served).
//   - ms-to-resumed/op: every run has its durable resume, the run.resumed
//     row that counts the new attempt, committed (read from the database
//     file beside the daemon, polled every 2 ms).
//   - ms-to-model/op: every run has rebuilt its state (conversation,
//     journal, prompt) and its next model request has reached the model.
//     This is what the op measures.
//   - daemon-cpu-ms/op: CPU time (user+sys) the new process used until
//     then, a figure other load on the machine does not inflate.
//
// All 256 resume at once because the daemon runs with
// DELTA_MAX_CONCURRENCY=256: with the default of 8, eight resume and the
// rest stay running rows, ahead of every queued run, until a slot frees.
//
//	go test -run '^$' -bench RestartResume256 -benchtime 5x -count 5 ./test/crash/
func BenchmarkRestartResume256(b *testing.B) {
	const inFlight = 256
	fake := startFake(b)
	fake.Hold()
	d := newDaemon(b, plainBin, fake, "DELTA_MAX_CONCURRENCY=256")
	d.start()
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok := d.submit(client, fmt.Sprintf("Write brief-%d.md about the otter survey.", i)); !ok {
				b.Errorf("task %d not acknowledged", i)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := fake.WaitCalls(ctx, inFlight); err != nil {
		b.Fatalf("only %d of %d runs reached the model: %v", fake.Calls(), inFlight, err)
	}
	db := d.openDB()
	var toHealthy, toResumed, toModel, cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		d.kill9()
		want := fake.Calls() + inFlight
		var lastEvent int64
		if err := db.QueryRow("SELECT COALESCE(MAX(id), 0) FROM events").Scan(&lastEvent); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		resumed := make(chan time.Duration, 1)
		go func() { resumed <- waitResumed(ctx, db, lastEvent, inFlight, t0) }()
		d.start()
		toHealthy += time.Since(t0)
		if err := fake.WaitCalls(ctx, want); err != nil {
			b.Fatalf("after restart only %d of %d model calls: %v", fake.Calls(), want, err)
		}
		toModel += time.Since(t0)
		b.StopTimer()
		cpu += processCPU(b, d.proc.Cmd.Process.Pid)
		r := <-resumed
		if r < 0 {
			b.Fatalf("fewer than %d run.resumed events after restart", inFlight)
		}
		toResumed += r
		b.StartTimer()
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(toHealthy), "ms-to-healthz/op")
	b.ReportMetric(per(toResumed), "ms-to-resumed/op")
	b.ReportMetric(per(toModel), "ms-to-model/op")
	b.ReportMetric(per(cpu), "daemon-cpu-ms/op")
	d.kill9()
	fake.Release()
}

// waitResumed polls until n run.resumed events newer than after are
// committed and returns the time since t0 (-1 when ctx ends first).
func waitResumed(ctx context.Context, db *sql.DB, after int64, n int, t0 time.Time) time.Duration {
	for ctx.Err() == nil {
		var got int
		err := db.QueryRowContext(ctx, "SELECT count(*) FROM events WHERE id > ? AND name = 'run.resumed'", after).Scan(&got)
		if err == nil && got >= n {
			return time.Since(t0)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return -1
}

// processCPU is the user+sys CPU time a live process has used so far.
func processCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read process stat: %v", err)
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the line, in clock ticks (USER_HZ, 100 on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse process stat %q", s)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
