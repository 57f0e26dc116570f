package perf

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model/scripted"
)

var (
	peakHeap = flag.String("perf.peakheap", "", "write a heap profile taken while all sessions are active to this file")
	fakeAt   = flag.String("perf.fake", "", "serve the scripted endpoint for BenchmarkConcurrent (calls:latency) and print its URL: the benchmark's child process")
)

// TestMain serves the scripted endpoint when the binary runs as
// BenchmarkConcurrent's child, so the memory and CPU the benchmark measures
// are Delta's alone, as in a daemon whose provider is elsewhere.
func TestMain(m *testing.M) {
	flag.Parse()
	if *fakeAt == "" {
		if *peakHeap != "" {
			runtime.MemProfileRate = 4096 // a profile fine enough to name the holders of a few KB per run
		}
		os.Exit(m.Run())
	}
	callsText, latencyText, _ := strings.Cut(*fakeAt, ":")
	calls, err := strconv.Atoi(callsText)
	latency, lerr := time.ParseDuration(latencyText)
	if err != nil || lerr != nil {
		fmt.Fprintln(os.Stderr, "-perf.fake wants calls:latency, e.g. 21:200ms")
		os.Exit(2)
	}
	base := script(calls)
	fake, err := scripted.Start(func(req scripted.ChatRequest) scripted.Reply {
		time.Sleep(latency)
		return base(req)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fake.ForgetRequests()
	fmt.Println(fake.URL())
	_, _ = io.Copy(io.Discard, os.Stdin) // serve until the parent closes stdin (or exits)
	fake.Close()
	os.Exit(0)
}

// startFakeProcess runs the scripted endpoint in a child process (this
// test binary with -perf.fake) and returns its URL and process id.
func startFakeProcess(b *testing.B, calls int, latency time.Duration) (string, int) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", fmt.Sprintf("-perf.fake=%d:%s", calls, latency))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("scripted endpoint process: %v", err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}

// processCPU is the user and system CPU time process pid has used so far,
// from /proc/<pid>/stat (in clock ticks of 10 ms).
func processCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses: state is
	// the first, utime the 12th and stime the 13th.
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkConcurrent runs 256 sessions at once, each 21 model calls
// (20 tool turns and an answer) against an endpoint that takes 200 ms a
// call (served by a child process), through the whole durable path, and
// reports calls/s against the ideal 1,280 (every session waiting only on
// the provider), and the memory each active run holds above the idle
// process (after a first, warming round): live heap, goroutine stacks,
// VmRSS and goroutines, sampled when every session has checkpointed its
// tenth call, and the CPU per call of this process and of the endpoint's.
// Run with -benchtime=1x.
func BenchmarkConcurrent(b *testing.B) {
	const (
		sessions = 256
		calls    = 21
		latency  = 200 * time.Millisecond
	)
	url, fakePID := startFakeProcess(b, calls, latency)
	r := newRigAt(b, calls, sessions, url)
	round := func() time.Duration {
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
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for i := 0; i < b.N; i++ {
		// Warm with a full round: the connection pool, the SQLite page and
		// statement caches and the runtime's pools reach the size they keep
		// when idle, so what the sample adds is what active runs hold.
		round()
		runtime.GC()
		idleHeap, idleRSS, idleStack, idleG := heapInuse(), vmRSS(b), stackInuse(), runtime.NumGoroutine()

		// Sample once every session has checkpointed its tenth call.
		sub := r.broker.Subscribe(4*sessions, func(e event.Event) bool { return e.Name == event.Checkpoint && e.Turn == calls/2 })
		var peak struct {
			heap, rss, stack int64
			g                int
		}
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			seen := map[string]bool{}
			for e := range sub.C {
				seen[e.RunID] = true
				if len(seen) < sessions {
					continue
				}
				runtime.GC()
				peak.heap, peak.rss, peak.stack, peak.g = heapInuse(), vmRSS(b), stackInuse(), runtime.NumGoroutine()
				if *peakHeap != "" {
					if f, err := os.Create(*peakHeap); err == nil {
						_ = pprof.WriteHeapProfile(f)
						f.Close()
					}
				}
				return
			}
		}()
		timing := watchTiming(r.broker, sessions, calls)
		cpu0, fake0, start := cpuTime(b), processCPU(b, fakePID), time.Now()
		elapsed := round()
		cpu, fakeCPU := cpuTime(b)-cpu0, processCPU(b, fakePID)-fake0
		r.broker.Unsubscribe(sub)
		<-sampled
		split := timing.split(start)
		ideal := float64(sessions) / latency.Seconds()
		got := float64(sessions*calls) / elapsed.Seconds()
		b.ReportMetric(got, "calls/s")
		b.ReportMetric(got/ideal, "of-ideal")
		// CPU per call: what a busy machine disturbs far less than
		// throughput (the endpoint is another process, so this is Delta's).
		b.ReportMetric(float64(cpu.Microseconds())/float64(sessions*calls), "cpu-µs/call")
		// The endpoint's CPU per call, in its own process: the harness's
		// share of the same two cores.
		b.ReportMetric(float64(fakeCPU.Microseconds())/float64(sessions*calls), "fake-cpu-µs/call")
		// Where the wall time goes: from the round's start to a run's
		// start (submission and dispatch), each model call as the engine
		// sees it (the endpoint's 200 ms plus the wire, the other process
		// and the scheduler), Delta's own time between one call's return
		// and the next call, and from the last run's end to the last
		// waiter's return.
		b.ReportMetric(split.startMS, "start-ms")
		b.ReportMetric(split.callMS, "call-ms")
		b.ReportMetric(split.betweenMS, "between-ms")
		b.ReportMetric(float64(elapsed-split.lastEnd)/float64(time.Millisecond), "tail-ms")
		if peak.heap > 0 {
			b.ReportMetric(float64(peak.heap-idleHeap)/sessions/1024, "KB-heap/run")
			b.ReportMetric(float64(peak.rss-idleRSS)/sessions/1024, "KB-RSS/run")
			b.ReportMetric(float64(peak.stack-idleStack)/sessions/1024, "KB-stack/run")
			b.ReportMetric(float64(peak.g-idleG)/sessions, "goroutines/run")
		}
	}
}

// timing collects, per run, the times of its start, of each turn's start
// and model call's return (both stamped by the engine as they happen, not
// when delivered), and of its end.
type timing struct {
	b    *event.Broker
	sub  *event.Sub
	done chan struct{}
	runs map[string]*runTimes
}

type runTimes struct {
	started, finished time.Time
	turns             map[int]time.Time // turn → its turn.started
	inCalls           time.Duration     // sum over turns of model.call - turn.started
	calls             int
}

func watchTiming(b *event.Broker, sessions, calls int) *timing {
	names := map[string]bool{event.RunStarted: true, event.TurnStarted: true, event.ModelCall: true, event.RunFinished: true}
	t := &timing{b: b, done: make(chan struct{}), runs: map[string]*runTimes{}}
	t.sub = b.Subscribe(sessions*(2*calls+4), func(e event.Event) bool { return names[e.Name] })
	go func() {
		defer close(t.done)
		for e := range t.sub.C {
			rt := t.runs[e.RunID]
			if rt == nil {
				rt = &runTimes{turns: map[int]time.Time{}}
				t.runs[e.RunID] = rt
			}
			switch e.Name {
			case event.RunStarted:
				rt.started = e.Time
			case event.TurnStarted:
				rt.turns[e.Turn] = e.Time
			case event.ModelCall:
				if at, ok := rt.turns[e.Turn]; ok {
					rt.inCalls += e.Time.Sub(at)
					rt.calls++
				}
			case event.RunFinished:
				rt.finished = e.Time
			}
		}
	}()
	return t
}

type timeSplit struct {
	startMS, callMS, betweenMS float64
	lastEnd                    time.Duration // from the round's start
}

// split stops watching and sums up: the median start, the mean model call
// and the mean time between calls per run.
func (t *timing) split(round time.Time) timeSplit {
	t.b.Unsubscribe(t.sub)
	<-t.done
	var starts []float64
	var in, between time.Duration
	var n int
	var out timeSplit
	for _, rt := range t.runs {
		if rt.started.IsZero() || rt.finished.IsZero() || rt.calls == 0 {
			continue
		}
		starts = append(starts, float64(rt.started.Sub(round))/float64(time.Millisecond))
		in += rt.inCalls
		between += rt.finished.Sub(rt.started) - rt.inCalls
		n += rt.calls
		out.lastEnd = max(out.lastEnd, rt.finished.Sub(round))
	}
	if n == 0 {
		return out
	}
	out.startMS = median(starts)
	out.callMS = float64(in) / float64(n) / float64(time.Millisecond)
	out.betweenMS = float64(between) / float64(n) / float64(time.Millisecond)
	return out
}

func stackInuse() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.StackInuse)
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
