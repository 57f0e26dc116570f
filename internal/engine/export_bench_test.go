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

	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/telemetry"
)

// BenchmarkDurableStepExport is BenchmarkDurableStep with the telemetry
// exporter off and on: on, it posts every event to a loopback collector
// that reads and discards the body, waking every 100 ms (instead of 2 s) so
// the export runs while the steps do. Compare the steps/s of the two.
func BenchmarkDurableStepExport(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("export=%v", on), func(b *testing.B) {
			benchStepLane(b, on, "the exporter", func(ctx context.Context, st *store.Store, url string) func() (int64, any) {
				x := startLane(b, ctx, func() (*telemetry.Exporter, error) {
					return telemetry.New(ctx, telemetry.Options{URL: url, Outbox: st, Interval: 100 * time.Millisecond})
				})
				return func() (int64, any) { s := x.Status(ctx); return s.Exported, s }
			})
		})
	}
}

// BenchmarkDurableStepOTLP is BenchmarkDurableStep with the OTLP trace
// lane off and on: on, every finished run becomes a trace posted to a
// loopback OTLP/HTTP receiver that reads and discards the body, waking
// every 100 ms (instead of 2 s) so the export runs while the steps do.
// Compare the steps/s of the two; the CPU per step includes the lane's
// share, steadier than steps/s on a machine shared with other work.
func BenchmarkDurableStepOTLP(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("otlp=%v", on), func(b *testing.B) {
			benchStepLane(b, on, "the OTLP lane", func(ctx context.Context, st *store.Store, url string) func() (int64, any) {
				x := startLane(b, ctx, func() (*telemetry.Traces, error) {
					return telemetry.NewTraces(ctx, telemetry.TracesOptions{URL: url + "/v1/traces", ServiceName: "bench", Store: st, Interval: 100 * time.Millisecond})
				})
				return func() (int64, any) { s := x.Status(ctx); return s.ExportedSpans, s }
			})
		})
	}
}

// benchStepLane measures the durable-step workload with a telemetry lane
// off or, with on, started by start over the harness's store and posting to
// a loopback collector that discards what it gets. start returns how much
// the lane has exported so far (with its status, for the failure message):
// a long enough measurement must have exported concurrently.
func benchStepLane(b *testing.B, on bool, lane string, start func(ctx context.Context, st *store.Store, url string) (exported func() (int64, any))) {
	h := newStepHarness(b, nil)
	var exported func() (int64, any)
	if on {
		exported = start(context.Background(), h.st, discardCollector(b))
	}
	measureSteps(b, h)
	if exported != nil && b.Elapsed() > time.Second {
		if n, status := exported(); n == 0 {
			b.Fatalf("%s exported nothing: %+v", lane, status)
		}
	}
}

// startLane starts the telemetry lane open makes, failing the benchmark if
// it cannot be made, and closes it when the benchmark ends.
func startLane[L interface {
	Start(context.Context)
	Close(context.Context) error
}](b *testing.B, ctx context.Context, open func() (L, error)) L {
	b.Helper()
	l, err := open()
	if err != nil {
		b.Fatal(err)
	}
	l.Start(ctx)
	b.Cleanup(func() { _ = l.Close(ctx) })
	return l
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
