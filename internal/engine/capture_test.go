package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/vault"
)

// echoTwice answers turn 1 with an echo call and turn 2 with text.
func echoTwice(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			return model.Response{Model: req.Model, Text: "all done", Usage: model.Usage{InputTokens: 120, OutputTokens: 5, CacheReadTokens: 100}}, nil
		}
	}
	return model.Response{Model: req.Model, Usage: model.Usage{InputTokens: 100, OutputTokens: 7},
		ToolCalls: []model.ToolCall{{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}}}, nil
}

func echoTool() tool.Tool {
	return tool.Func("echo", "echoes its text back", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text(a.Text), nil
	})
}

// With capture on, every served turn has a call row committed with its
// step: the request as assembled (system spine, history, per-turn blocks,
// tool schemas, effort) and the response (text, tool calls, model,
// provider, usage, latency). Reads pass through the redaction: a vault
// value and a credential-shaped string in the prompt never come back.
func TestCaptureStoresEachServedTurnRedactedOnRead(t *testing.T) {
	red := vault.NewRedactor()
	red.Register("KB_TOKEN", "kb-secret-value-42")
	h := newHarnessWith(t, echoTwice, big, func(o *engine.Options) {
		o.CaptureCalls = true
		o.Redact = red.Redact
		o.ReasoningEffort = "low"
		o.TurnBlocks = func(context.Context, string) []string { return []string{"<delta:plan>\n1. echo\n</delta:plan>"} }
	}, echoTool())
	r, _ := h.run(t, "please echo; my token is kb-secret-value-42 and key sk-abcdefghijklmnop1234")
	calls, err := h.svc.InspectCalls(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].Step != 1 || calls[1].Step != 2 {
		t.Fatalf("calls = %+v, want one per step (1, 2)", calls)
	}
	var req struct {
		System   []string `json:"system"`
		Messages []struct {
			Role, Content, Kind string
		} `json:"messages"`
		Tools []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
		Effort    string `json:"reasoning_effort"`
		PrefixKey string `json:"prefix_key"`
	}
	if err := json.Unmarshal(calls[0].Request, &req); err != nil {
		t.Fatalf("request %s: %v", calls[0].Request, err)
	}
	if len(req.System) == 0 || len(req.Tools) != 1 || req.Tools[0].Name != "echo" || !strings.Contains(string(req.Tools[0].Parameters), `"text"`) || req.Effort != "low" || req.PrefixKey == "" {
		t.Errorf("request = %s", calls[0].Request)
	}
	kinds := map[string]int{}
	for _, m := range req.Messages {
		kinds[m.Kind]++
	}
	if kinds["history"] != 1 || kinds["block"] != 1 || req.Messages[0].Role != "user" || !strings.Contains(req.Messages[0].Content, "please echo") {
		t.Errorf("messages = %+v, want the user's message as history, then the plan block", req.Messages)
	}
	raw := string(calls[0].Request)
	if strings.Contains(raw, "kb-secret-value-42") || !strings.Contains(raw, "[vault:KB_TOKEN]") || strings.Contains(raw, "sk-abcdefghijklmnop1234") {
		t.Errorf("request is not redacted on read: %s", raw)
	}
	var resp struct {
		Model     string
		ToolCalls []model.ToolCall `json:"tool_calls"`
		Usage     model.Usage
	}
	if err := json.Unmarshal(calls[0].Response, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Model != "primary" || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "echo" || resp.Usage.InputTokens != 100 {
		t.Errorf("response = %s", calls[0].Response)
	}
	if len(req.Messages) < 1 || !strings.Contains(string(calls[1].Request), `"kind":"history"`) {
		t.Errorf("second request = %s", calls[1].Request)
	}
	if calls[1].Provider != "chat" || calls[1].Usage.CacheReadTokens != 100 || !strings.Contains(string(calls[1].Response), "all done") {
		t.Errorf("second call: provider %q usage %+v response %s", calls[1].Provider, calls[1].Usage, calls[1].Response)
	}
	var req2 struct {
		PrefixKey string `json:"prefix_key"`
	}
	_ = json.Unmarshal(calls[1].Request, &req2)
	if req2.PrefixKey != req.PrefixKey {
		t.Errorf("prefix key changed between turns with the same spine and tools: %q → %q", req.PrefixKey, req2.PrefixKey)
	}
	// The stored bytes are the originals; only the read is redacted.
	rows, _, err := h.svc.InspectRuns(context.Background(), storeFilterAll())
	if err != nil || len(rows) != 1 || rows[0].Calls != 2 {
		t.Fatalf("runs = %+v, %v; want one run with 2 calls", rows, err)
	}
	if strings.Contains(string(rows[0].Request), "kb-secret-value-42") {
		t.Errorf("run request not redacted on read: %s", rows[0].Request)
	}
}

// With capture off (the default) no call row is written.
func TestCaptureOffStoresNothing(t *testing.T) {
	h := newHarness(t, echoTwice, big, echoTool())
	r, _ := h.run(t, "please echo")
	calls, err := h.svc.InspectCalls(context.Background(), r.ID)
	if err != nil || len(calls) != 0 {
		t.Fatalf("calls = %d, %v; want none with capture off", len(calls), err)
	}
	if h.svc.Capturing() {
		t.Error("Capturing() = true with capture off")
	}
}

func storeFilterAll() store.RunFilter { return store.RunFilter{} }
