package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// TestRepeatedOrMissingCallIDsDoNotFailTheRun: a provider that numbers its
// tool calls afresh on every response ("call_0" each turn) or sends none
// gets every call run and answered; the conversation keeps one id per call.
func TestRepeatedOrMissingCallIDsDoNotFailTheRun(t *testing.T) {
	var turn atomic.Int32
	provider := func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		u := model.Usage{InputTokens: 10, OutputTokens: 5}
		switch turn.Add(1) {
		case 1:
			return model.Response{Model: req.Model, Usage: u, ToolCalls: []model.ToolCall{{ID: "call_0", Name: "echo", Arguments: json.RawMessage(`{"text":"one"}`)}}}, nil
		case 2:
			return model.Response{Model: req.Model, Usage: u, ToolCalls: []model.ToolCall{{ID: "call_0", Name: "echo", Arguments: json.RawMessage(`{"text":"two"}`)}}}, nil
		case 3:
			return model.Response{Model: req.Model, Usage: u, ToolCalls: []model.ToolCall{
				{ID: "", Name: "echo", Arguments: json.RawMessage(`{"text":"three"}`)},
				{ID: "", Name: "echo", Arguments: json.RawMessage(`{"text":"four"}`)}}}, nil
		}
		return model.Response{Model: req.Model, Usage: u, Text: "all echoed"}, nil
	}
	var runs atomic.Int32
	echo := tool.Func("echo", "echo text", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		runs.Add(1)
		return tool.Text("echoed " + a.Text), nil
	})
	h := newHarness(t, provider, big, echo)
	r, resp := h.run(t, "echo four times")
	if r.Status != store.StatusDone || resp.OutputText != "all echoed" {
		t.Fatalf("run %s: %q (%s)", r.Status, resp.OutputText, r.Error)
	}
	if runs.Load() != 4 {
		t.Fatalf("echo ran %d times, want 4", runs.Load())
	}
	msgs, err := h.st.Messages(context.Background(), r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	results := map[string]string{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ID == "" || seen[c.ID] {
				t.Fatalf("call id %q is empty or repeated in %+v", c.ID, msgs)
			}
			seen[c.ID] = true
		}
		if m.Role == model.RoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	if len(seen) != 4 || len(results) != 4 {
		t.Fatalf("%d calls and %d results, want 4 of each: %v", len(seen), len(results), results)
	}
	for id := range seen {
		if results[id] == "" {
			t.Fatalf("call %s has no result: %v", id, results)
		}
	}
	if !seen["call_0"] || !seen["call_0_2"] || !seen["call_2"] || !seen["call_3"] {
		t.Fatalf("ids %v, want call_0, call_0_2, call_2, call_3", seen)
	}
}

// TestRepeatedCallIDsAcrossCompaction: a provider that names every call
// "call_0" still gets each call run and journalled once, also after
// compaction has moved the earlier calls out of the window.
func TestRepeatedCallIDsAcrossCompaction(t *testing.T) {
	l := &longRun{turns: 40}
	inner := l.provider()
	provider := func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		resp, err := inner(ctx, req, s)
		for i := range resp.ToolCalls {
			resp.ToolCalls[i].ID = "call_0"
		}
		return resp, err
	}
	h := newHarnessWith(t, provider, engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = 12000 }, fetchTool(1500))
	r, resp := h.run(t, "fetch every page")
	if r.Status != store.StatusDone || resp.OutputText != "all pages fetched" {
		t.Fatalf("run %s (%s): %q", r.Status, r.Error, resp.OutputText)
	}
	if len(l.summaries) == 0 {
		t.Fatal("no compaction happened; the test needs one")
	}
	j, err := h.st.Journal(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(j) != 40 {
		t.Fatalf("journal holds %d calls, want 40 distinct ones", len(j))
	}
}
