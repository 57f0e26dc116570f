package perf

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/scripted"
)

var peakHeap = flag.String("perf.peakheap", "", "write a heap profile taken while all sessions are active to this file")

// BenchmarkConcurrent runs 256 sessions at once, each 21 model calls
// (20 tool turns and an answer) against an endpoint that takes 200 ms a
// call, through the whole durable path, and reports calls/s against the
// ideal 1,280 (every session waiting only on the provider), and the
// memory each active run holds above the idle process: live heap and
// VmRSS, sampled when every session has made its tenth call. Run with
// -benchtime=1x.
func BenchmarkConcurrent(b *testing.B) {
	const (
		sessions = 256
		calls    = 21
		latency  = 200 * time.Millisecond
	)
	for i := 0; i < b.N; i++ {
		var mu sync.Mutex
		var reached int
		sampled := make(chan struct{})
		var sampleOnce sync.Once
		base := script(calls)
		r := newRigWith(b, calls, sessions, func(req scripted.ChatRequest) scripted.Reply {
			n := 0
			for _, m := range req.Messages {
				if m.Role == "assistant" {
					n++
				}
			}
			if n == calls/2 {
				mu.Lock()
				reached++
				all := reached == sessions
				mu.Unlock()
				if all {
					sampleOnce.Do(func() { close(sampled) })
				}
			}
			time.Sleep(latency)
			return base(req)
		})
		r.timed(b, r.delta) // warm: connections, statements, caches
		runtime.GC()
		idleHeap, idleRSS := heapInuse(), vmRSS(b)

		var peak struct{ heap, rss int64 }
		done := make(chan struct{})
		go func() {
			select {
			case <-sampled:
			case <-done:
				return
			}
			runtime.GC()
			peak.heap, peak.rss = heapInuse(), vmRSS(b)
			if *peakHeap != "" {
				if f, err := os.Create(*peakHeap); err == nil {
					_ = pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
		}()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, sessions)
		for s := 0; s < sessions; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if steps, err := r.delta(context.Background()); err != nil || steps != calls {
					errs <- fmt.Errorf("steps %d: %v", steps, err)
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		close(done)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		ideal := float64(sessions) / latency.Seconds()
		got := float64(sessions*calls) / elapsed.Seconds()
		b.ReportMetric(got, "calls/s")
		b.ReportMetric(got/ideal, "of-ideal")
		if peak.heap > 0 {
			b.ReportMetric(float64(peak.heap-idleHeap)/sessions/1024, "KB-heap/run")
			b.ReportMetric(float64(peak.rss-idleRSS)/sessions/1024, "KB-RSS/run")
		}
	}
}

func heapInuse() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// vmRSS is this process's resident set in bytes.
func vmRSS(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n * 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
