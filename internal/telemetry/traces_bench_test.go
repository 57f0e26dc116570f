package telemetry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// BenchmarkTracesPerRun measures what the OTLP lane spends on one finished
// 20-step run (the engine's durable-step workload: each step a turn, a
// model call, one tool call and its result, about 100 events and 60
// spans): reading its events, shaping the records, building and ending the
// spans, protobuf and gzip, and the loopback post. Divide by the run's own
// duration (BenchmarkDurableStep) for the lane's share of a core.
func BenchmarkTracesPerRun(b *testing.B) {
	ctx := context.Background()
	s := openStore(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	x, err := NewTraces(ctx, TracesOptions{URL: srv.URL + "/v1/traces", ServiceName: "bench", Store: s})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = x.Close(ctx) }()
	at := time.Now()
	for i := range b.N {
		add(b, s, stepRun(fmt.Sprint("run-", i), 20, at)...)
	}
	b.ResetTimer()
	if err := x.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if st := x.Status(ctx); st.ExportedRuns != int64(b.N) {
		b.Fatalf("traced %d runs of %d", st.ExportedRuns, b.N)
	}
	b.ReportMetric(float64(x.Status(ctx).ExportedSpans)/float64(b.N), "spans/run")
}

// stepRun is the events of a run of steps durable steps.
func stepRun(runID string, steps int, at time.Time) []event.Event {
	var evs []event.Event
	mk := func(name string, turn int, data any) {
		e := event.New(runID, "sess", name, data)
		e.Turn, e.Time, e.Owner = turn, at, "u"
		evs = append(evs, e)
	}
	mk(event.RunQueued, 0, nil)
	mk(event.RunStarted, 0, nil)
	for n := 1; n <= steps; n++ {
		mk(event.TurnStarted, n, map[string]any{"turn": n, "model": "m", "tools": 1})
		mk(event.ModelCall, n, map[string]any{"model": "m", "provider": "chat", "wall_ms": 1, "latency_ms": 1,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 10}, "finish_reasons": []string{"tool_calls"}})
		if n < steps {
			id := fmt.Sprint("c", n)
			mk(event.ToolCall, n, map[string]any{"call_id": id, "name": "echo", "arguments": map[string]any{"text": "hello"}})
			mk(event.Checkpoint, n, map[string]any{"turn": n})
			mk(event.ToolResult, n, map[string]any{"call_id": id, "name": "echo", "is_error": false, "chars": 5, "preview": "hello"})
		}
	}
	mk(event.RunFinished, steps, map[string]any{"status": store.StatusDone})
	return evs
}
