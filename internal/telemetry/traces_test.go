package telemetry

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/telemetry/otlptest"
)

// simulatedRun stores the events a run with one tool call writes: queued,
// started, turn 1 (model call asking for a tool, the call and its result),
// turn 2 (the final model call), finished.
func simulatedRun(t *testing.T, s *store.Store, runID string, at time.Time) {
	t.Helper()
	mk := func(name string, turn int, ms int, data any) event.Event {
		e := event.New(runID, "sess-1", name, data)
		e.Owner, e.TaskID, e.Turn, e.Time = "user-1", "task-1", turn, at.Add(time.Duration(ms)*time.Millisecond)
		return e
	}
	add(t, s,
		mk(event.RunQueued, 0, 0, nil), mk(event.RunStarted, 0, 5, nil),
		mk(event.TurnStarted, 1, 10, map[string]any{"turn": 1, "model": "m-main", "tools": 3}),
		mk(event.ModelCall, 1, 60, map[string]any{"model": "m-main", "provider": "openrouter", "wall_ms": 40, "latency_ms": 40,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 20}, "finish_reasons": []string{"tool_calls"}, "tool_calls": 1}),
		mk(event.ToolCall, 1, 60, map[string]any{"call_id": "c1", "name": "write_file", "arguments": map[string]any{"content": "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX"}}),
		mk(event.ToolResult, 1, 80, map[string]any{"call_id": "c1", "name": "write_file", "is_error": false, "chars": 12, "preview": "wrote 1 file"}),
		mk(event.TurnStarted, 2, 90, map[string]any{"turn": 2, "model": "m-main", "tools": 3}),
		mk(event.ModelCall, 2, 120, map[string]any{"model": "m-main", "provider": "openrouter", "wall_ms": 25,
			"usage": map[string]any{"input_tokens": 150, "output_tokens": 7}}),
		mk(event.RunFinished, 2, 125, map[string]any{"status": "done"}),
	)
}

func newTraces(t *testing.T, s *store.Store, url string, mod func(*TracesOptions)) *Traces {
	t.Helper()
	o := TracesOptions{URL: url + "/v1/traces", ServiceName: "svc", AgentID: "agent-1", Store: s, Timeout: 300 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	x, err := NewTraces(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Close(context.Background()) })
	return x
}

// A receiver that refuses a batch leaves the cursor where it was; the
// next flush sends the same trace with the same span ids, and only then
// does the cursor pass the run.
func TestTracesRetryKeepsTheCursorAndTheIDs(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	rcv := otlptest.Start()
	defer rcv.Close()
	rcv.FailFirst(http.StatusBadRequest) // not retried by the SDK: one failed export
	simulatedRun(t, s, "run-a", time.UnixMilli(1_700_000_000_000))
	x := newTraces(t, s, rcv.URL(), nil)
	if err := x.Flush(ctx); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("flush against a refusing receiver: %v", err)
	}
	if o, _ := s.TraceOutbox(ctx); o.Traced != 0 || o.Pending != 1 {
		t.Fatalf("a refused export moved the cursor: %+v", o)
	}
	if err := x.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.TraceOutbox(ctx); o.Traced == 0 || o.Pending != 0 {
		t.Fatalf("an accepted export did not move the cursor: %+v", o)
	}
	ids := func(sp []otlptest.Span) []string {
		var out []string
		for _, s := range sp {
			out = append(out, s.TraceID+"/"+s.SpanID)
		}
		slices.Sort(out)
		return out
	}
	got, first := ids(rcv.Spans()), ids(rcv.Rejected())
	if len(got) != 6 || !slices.Equal(got, first) {
		t.Fatalf("spans accepted %v, refused first %v: want the same 6 ids", got, first)
	}
	// Nothing left: a third flush sends nothing.
	n := rcv.Requests()
	if err := x.Flush(ctx); err != nil || rcv.Requests() != n {
		t.Fatalf("an idle flush sent %d requests (err %v)", rcv.Requests()-n, err)
	}
	st := x.Status(ctx)
	if !st.Enabled || st.Endpoint != rcv.URL() || st.ExportedSpans != 6 || st.ExportedRuns != 1 || st.PendingRuns != 0 {
		t.Fatalf("status %+v", st)
	}
}

// The tree, the times and the GenAI attributes of a simulated run; the
// planted credential and the arguments stay home without consent.
func TestTracesShape(t *testing.T) {
	for _, payloads := range []bool{false, true} {
		ctx := context.Background()
		s := openStore(t)
		rcv := otlptest.Start()
		at := time.UnixMilli(1_700_000_000_000)
		simulatedRun(t, s, "run-a", at)
		x := newTraces(t, s, rcv.URL(), func(o *TracesOptions) { o.Payloads = payloads })
		if err := x.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rcv.Close()
		by := map[string]otlptest.Span{}
		var chats []otlptest.Span
		for _, sp := range rcv.Spans() {
			if sp.Name == "chat m-main" {
				chats = append(chats, sp)
			} else {
				by[sp.Name] = sp
			}
		}
		root, t1, t2, tool := by["invoke_agent agent-1"], by["turn 1"], by["turn 2"], by["execute_tool write_file"]
		if len(by) != 4 || len(chats) != 2 || root.ParentID != "" || t1.ParentID != root.SpanID || t2.ParentID != root.SpanID || tool.ParentID != t1.SpanID {
			t.Fatalf("payloads=%v: span tree %+v, chats %+v", payloads, by, chats)
		}
		if chats[0].ParentID != t1.SpanID {
			chats[0], chats[1] = chats[1], chats[0]
		}
		if chats[0].ParentID != t1.SpanID || chats[1].ParentID != t2.SpanID {
			t.Fatalf("chat parents %s %s, want turns %s %s", chats[0].ParentID, chats[1].ParentID, t1.SpanID, t2.SpanID)
		}
		for k, v := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m-main", "gen_ai.response.model": "m-main",
			"gen_ai.provider.name": "openrouter", "gen_ai.usage.input_tokens": "100", "gen_ai.usage.output_tokens": "20", "gen_ai.response.finish_reasons": "[tool_calls]"} {
			if chats[0].Attrs[k] != v {
				t.Errorf("chat %s = %q, want %q", k, chats[0].Attrs[k], v)
			}
		}
		if _, has := chats[0].Attrs["delta.tool_calls"]; has != payloads {
			t.Errorf("payloads=%v: the tool-call count present=%v", payloads, has)
		}
		ms := func(n uint64) int64 { return int64(n/1e6) - at.UnixMilli() }
		if ms(chats[0].StartUnixNano) != 20 || ms(chats[0].EndUnixNano) != 60 {
			t.Errorf("chat 1 %d–%d, want 20–60 (model.call minus wall_ms)", ms(chats[0].StartUnixNano), ms(chats[0].EndUnixNano))
		}
		if ms(root.StartUnixNano) != 5 || ms(root.EndUnixNano) != 125 || ms(tool.StartUnixNano) != 60 || ms(tool.EndUnixNano) != 80 ||
			ms(t1.StartUnixNano) != 10 || ms(t1.EndUnixNano) != 80 {
			t.Fatalf("times: root %d–%d, turn 1 %d–%d, tool %d–%d", ms(root.StartUnixNano), ms(root.EndUnixNano),
				ms(t1.StartUnixNano), ms(t1.EndUnixNano), ms(tool.StartUnixNano), ms(tool.EndUnixNano))
		}
		for k, v := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": "250", "gen_ai.usage.output_tokens": "27",
			"gen_ai.conversation.id": "sess-1", "delta.run.id": "run-a", "delta.task.id": "task-1", "user.id": "user-1", "gen_ai.agent.name": "agent-1"} {
			if root.Attrs[k] != v {
				t.Errorf("root %s = %q, want %q", k, root.Attrs[k], v)
			}
		}
		if tool.Attrs["gen_ai.tool.call.id"] != "c1" || tool.Attrs["gen_ai.operation.name"] != "execute_tool" || tool.Attrs["delta.run.id"] != "run-a" {
			t.Errorf("tool attrs %v", tool.Attrs)
		}
		if root.Resource["service.name"] != "svc" || root.Resource["service.instance.id"] == "" {
			t.Errorf("resource %v", root.Resource)
		}
		args, has := tool.Attrs["gen_ai.tool.call.arguments"]
		if has != payloads {
			t.Errorf("payloads=%v: arguments present=%v", payloads, has)
		}
		if strings.Contains(args, "sk-proj-") || (payloads && !strings.Contains(args, "[redacted]")) {
			t.Errorf("arguments %q: the planted credential is not scrubbed", args)
		}
	}
}

// buildRun never panics on whatever data a stored event holds, and a run
// with a run.finished always has exactly one root.
func FuzzBuildRun(f *testing.F) {
	f.Add(event.ToolResult, 1, []byte(`{"call_id":"c1","is_error":true}`))
	f.Add(event.ModelCall, 2, []byte(`{"usage":{"input_tokens":"x"},"finish_reasons":[1,null],"wall_ms":-5}`))
	f.Add(event.Error, 0, []byte(`{"call_id":7,"error.type":"x"}`))
	f.Add(event.TurnStarted, -1, []byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, name string, turn int, data []byte) {
		at := time.UnixMilli(1_700_000_000_000)
		mk := func(name string, turn int, data []byte) event.Event {
			return event.Event{RunID: "r", SessionID: "s", Name: name, Turn: turn, Time: at, Data: data}
		}
		evs := []event.Event{mk(event.RunStarted, 0, nil), mk(event.TurnStarted, 1, []byte(`{"model":"m"}`)),
			mk(event.ToolCall, 1, []byte(`{"call_id":"c1","name":"t"}`)), mk(name, turn, data), mk(event.RunFinished, 1, []byte(`{"status":"failed"}`))}
		tree := buildRun(shaper{payloads: turn%2 == 0}, evs)
		roots := 0
		for _, sp := range tree.spans {
			if !sp.parent.IsValid() {
				roots++
			}
			if sp.end.Before(sp.start) {
				t.Fatalf("span %s ends before it starts", sp.name)
			}
		}
		if name != event.RunFinished && roots != 1 {
			t.Fatalf("%d roots", roots)
		}
	})
}
