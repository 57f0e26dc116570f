package crash

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// BenchmarkRestartResume256 measures a restart with 256 runs in flight:
// from exec of the new process to every one of them calling the model
// again. The fake model holds every call, so the runs stay in flight
// across iterations; each iteration kills the daemon and restarts it.
//
//	go test -run '^$' -bench RestartResume256 -benchtime 5x ./test/crash/
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
	var toHealthy, toResumed time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		d.kill9()
		want := fake.Calls() + inFlight
		b.StartTimer()
		t0 := time.Now()
		d.start()
		toHealthy += time.Since(t0)
		if err := fake.WaitCalls(ctx, want); err != nil {
			b.Fatalf("after restart only %d of %d model calls: %v", fake.Calls(), want, err)
		}
		toResumed += time.Since(t0)
	}
	b.StopTimer()
	// Split the figure: process start to /healthz, and to the last run's
	// model call.
	b.ReportMetric(float64(toHealthy.Milliseconds())/float64(b.N), "ms-to-healthz/op")
	b.ReportMetric(float64(toResumed.Milliseconds())/float64(b.N), "ms-to-all-resumed/op")
	d.kill9()
	fake.Release()
}
