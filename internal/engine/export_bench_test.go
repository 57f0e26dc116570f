package engine_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/telemetry"
)

// BenchmarkDurableStepExport is BenchmarkDurableStep with the telemetry
// exporter off and on: on, it posts every event to a loopback collector
// that reads and discards the body, waking every 100 ms (instead of 2 s) so
// the export runs while the steps do. Compare the steps/s of the two.
func BenchmarkDurableStepExport(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("export=%v", on), func(b *testing.B) { benchStepExport(b, on) })
	}
}

func benchStepExport(b *testing.B, export bool) {
	h := newStepHarness(b, nil)
	ctx := context.Background()
	var x *telemetry.Exporter
	if export {
		var err error
		x, err = telemetry.New(ctx, telemetry.Options{URL: discardCollector(b), Outbox: h.st, Interval: 100 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		x.Start(ctx)
		b.Cleanup(func() { _ = x.Close(ctx) })
	}
	measureSteps(b, h)
	// A long enough measurement must have exported concurrently.
	if x != nil && b.Elapsed() > time.Second {
		if st := x.Status(ctx); st.Exported == 0 {
			b.Fatalf("the exporter exported nothing: %+v", st)
		}
	}
}

// BenchmarkDurableStepOTLP is BenchmarkDurableStep with the OTLP trace
// lane off and on: on, every finished run becomes a trace posted to a
// loopback OTLP/HTTP receiver that reads and discards the body, waking
// every 100 ms (instead of 2 s) so the export runs while the steps do.
// Compare the steps/s of the two.
func BenchmarkDurableStepOTLP(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("otlp=%v", on), func(b *testing.B) { benchStepOTLP(b, on) })
	}
}

func benchStepOTLP(b *testing.B, on bool) {
	h := newStepHarness(b, nil)
	ctx := context.Background()
	var x *telemetry.Traces
	if on {
		var err error
		x, err = telemetry.NewTraces(ctx, telemetry.TracesOptions{URL: discardCollector(b) + "/v1/traces", ServiceName: "bench", Store: h.st, Interval: 100 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		x.Start(ctx)
		b.Cleanup(func() { _ = x.Close(ctx) })
	}
	// measureSteps reports the process's CPU per step, the lane's share
	// included: steadier than steps/s on a machine shared with other work.
	measureSteps(b, h)
	// A long enough measurement must have exported concurrently.
	if x != nil && b.Elapsed() > time.Second {
		if st := x.Status(ctx); st.ExportedSpans == 0 {
			b.Fatalf("the OTLP lane exported nothing: %+v", st)
		}
	}
}

// discardCollector is a loopback HTTP server that reads and discards every
// body posted to it, closed when the benchmark ends; it returns its URL.
func discardCollector(b *testing.B) string {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	b.Cleanup(srv.Close)
	return srv.URL
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
