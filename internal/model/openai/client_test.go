package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
)

const testKey = "sk-test-0123456789abcdef"

func startFake(t *testing.T, script modeltest.Script) *modeltest.Server {
	t.Helper()
	s, err := modeltest.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func basicRequest() model.Request {
	return model.Request{
		Model:  "test/model-1",
		System: []string{"You are Delta.", "Workspace: /tmp/ws."},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "write a brief"},
		},
		Tools: []model.ToolSpec{{
			Name:        "write_file",
			Description: "Write a file in the workspace.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096},"content":{"type":"string"}},"required":["path","content"]}`),
		}},
	}
}

// recorder collects stream deltas in order.
type recorder struct {
	events []string // "t:" text, "r:" reasoning
}

func (r *recorder) stream() model.Stream {
	return model.Stream{
		OnText:      func(d string) { r.events = append(r.events, "t:"+d) },
		OnReasoning: func(d string) { r.events = append(r.events, "r:"+d) },
	}
}

func (r *recorder) joined(prefix string) (s string, n int) {
	for _, e := range r.events {
		if strings.HasPrefix(e, prefix) {
			s += strings.TrimPrefix(e, prefix)
			n++
		}
	}
	return s, n
}

func TestCompleteText(t *testing.T) {
	want := "Hello there, this answer arrives in several deltas."
	fake := startFake(t, modeltest.Sequence(modeltest.TextReply(want)))
	fake.RequireKey(testKey)
	c := openai.New(openai.Options{BaseURL: fake.URL(), APIKey: testKey})

	var rec recorder
	res, err := c.Complete(context.Background(), basicRequest(), rec.stream())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if res.Text != want {
		t.Errorf("Text = %q, want %q", res.Text, want)
	}
	text, n := rec.joined("t:")
	if text != want || n < 3 {
		t.Errorf("OnText got %d deltas joining to %q; want several joining to %q", n, text, want)
	}
	if res.FinishReason != "stop" || res.Model != "test/model-1" || len(res.ToolCalls) != 0 {
		t.Errorf("FinishReason=%q Model=%q ToolCalls=%v", res.FinishReason, res.Model, res.ToolCalls)
	}
	if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 || res.Usage.CostReported {
		t.Errorf("Usage = %+v, want token counts and no reported cost", res.Usage)
	}

	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("fake saw %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Path != "/v1/chat/completions" || !got.Stream || !got.IncludeUsage {
		t.Errorf("path=%q stream=%v include_usage=%v", got.Path, got.Stream, got.IncludeUsage)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer "+testKey {
		t.Errorf("Authorization = %q", h)
	}
	var roles []string
	for _, m := range got.Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	wantRoles := "system:You are Delta.|system:Workspace: /tmp/ws.|user:write a brief"
	if strings.Join(roles, "|") != wantRoles {
		t.Errorf("messages = %q, want %q", strings.Join(roles, "|"), wantRoles)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "write_file" || got.Tools[0].Description != "Write a file in the workspace." {
		t.Fatalf("tools = %+v", got.Tools)
	}
	var schema, wantSchema any
	_ = json.Unmarshal(got.Tools[0].Parameters, &schema)
	_ = json.Unmarshal(basicRequest().Tools[0].Parameters, &wantSchema)
	if gb, _ := json.Marshal(schema); string(gb) != mustCanon(t, basicRequest().Tools[0].Parameters) {
		t.Errorf("tool schema = %s, want %s", gb, basicRequest().Tools[0].Parameters)
	}
	if got.ReasoningEffort != "" || got.Reasoning != nil {
		t.Errorf("reasoning sent without being asked: %q %s", got.ReasoningEffort, got.Reasoning)
	}
}

func mustCanon(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestCompleteToolCallsAssembledAcrossChunks(t *testing.T) {
	calls := []modeltest.ToolCall{
		{ID: "call_a", Name: "write_file", Arguments: `{"path":"notes/brief.md","content":"# Brief\n\nDéjà vu — ünïcödé across fragment boundaries ✓"}`},
		{ID: "call_b", Name: "list_files", Arguments: `{"path":"."}`},
	}
	fake := startFake(t, modeltest.Sequence(modeltest.ToolReply(calls...)))
	c := openai.New(openai.Options{BaseURL: fake.URL()})

	var rec recorder
	res, err := c.Complete(context.Background(), basicRequest(), rec.stream())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if res.FinishReason != "tool_calls" {
		t.Errorf("FinishReason = %q", res.FinishReason)
	}
	if len(res.ToolCalls) != len(calls) {
		t.Fatalf("got %d tool calls, want %d: %+v", len(res.ToolCalls), len(calls), res.ToolCalls)
	}
	for i, want := range calls {
		got := res.ToolCalls[i]
		if got.ID != want.ID || got.Name != want.Name || string(got.Arguments) != want.Arguments {
			t.Errorf("call %d = {%s %s %s}, want {%s %s %s}", i, got.ID, got.Name, got.Arguments, want.ID, want.Name, want.Arguments)
		}
		if !json.Valid(got.Arguments) {
			t.Errorf("call %d arguments are not valid JSON: %s", i, got.Arguments)
		}
	}
	if len(rec.events) != 0 {
		t.Errorf("no text expected, got deltas %q", rec.events)
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	fake := startFake(t, nil)
	c := openai.New(openai.Options{BaseURL: fake.URL()})
	req := basicRequest()
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_1", Name: "write_file", Arguments: json.RawMessage(`{"path":"a.md","content":"x"}`)},
			{ID: "call_2", Name: "noop"}, // no arguments: sent as {}
		}},
		model.Message{Role: model.RoleTool, ToolCallID: "call_1", Name: "write_file", Content: "wrote 1 byte"},
		model.Message{Role: model.RoleTool, ToolCallID: "call_2", Name: "noop", Content: "ok"},
		model.Message{Role: model.RoleAssistant, Content: "Done."},
		model.Message{Role: model.RoleUser, Content: "again"},
	)
	if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Requests()[0].Messages
	if len(msgs) != 8 {
		t.Fatalf("sent %d messages, want 8: %+v", len(msgs), msgs)
	}
	a := msgs[3]
	if a.Role != "assistant" || a.Content != "" || len(a.ToolCalls) != 2 ||
		a.ToolCalls[0] != (modeltest.ToolCall{ID: "call_1", Name: "write_file", Arguments: `{"path":"a.md","content":"x"}`}) ||
		a.ToolCalls[1].Arguments != "{}" {
		t.Errorf("assistant tool-call message = %+v", a)
	}
	if m := msgs[4]; m.Role != "tool" || m.ToolCallID != "call_1" || m.Content != "wrote 1 byte" {
		t.Errorf("tool message = %+v", m)
	}
	if m := msgs[6]; m.Role != "assistant" || m.Content != "Done." || len(m.ToolCalls) != 0 {
		t.Errorf("assistant text message = %+v", m)
	}
	if !strings.Contains(string(fake.Requests()[0].Raw), `"tool_call_id":"call_2"`) {
		t.Errorf("raw body lacks the second tool result: %s", fake.Requests()[0].Raw)
	}
}

func TestUsageAndCost(t *testing.T) {
	tests := []struct {
		name  string
		usage modeltest.Usage
		want  model.Usage
	}{
		{"openrouter cost", modeltest.Usage{PromptTokens: 1200, CompletionTokens: 34, CachedTokens: 1000, Cost: modeltest.USD(0.0123)},
			model.Usage{InputTokens: 1200, OutputTokens: 34, CacheReadTokens: 1000, CostUSD: 0.0123, CostReported: true}},
		{"free model reports zero cost", modeltest.Usage{PromptTokens: 10, CompletionTokens: 2, Cost: modeltest.USD(0)},
			model.Usage{InputTokens: 10, OutputTokens: 2, CostReported: true}},
		{"no cost field", modeltest.Usage{PromptTokens: 7, CompletionTokens: 3},
			model.Usage{InputTokens: 7, OutputTokens: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.usage
			fake := startFake(t, modeltest.Sequence(modeltest.Reply{Text: "hi", Usage: &u, Model: "anthropic/claude-4.5-sonnet-20250929"}))
			res, err := openai.New(openai.Options{BaseURL: fake.URL()}).Complete(context.Background(), basicRequest(), model.Stream{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage != tt.want {
				t.Errorf("Usage = %+v, want %+v", res.Usage, tt.want)
			}
			if res.Model != "anthropic/claude-4.5-sonnet-20250929" {
				t.Errorf("Model = %q, want the served model", res.Model)
			}
		})
	}
}

func TestReasoningDeltasStreamBeforeText(t *testing.T) {
	fake := startFake(t, modeltest.Sequence(modeltest.Reply{Reasoning: "First I think about the request.", Text: "Answer."}))
	var rec recorder
	res, err := openai.New(openai.Options{BaseURL: fake.URL()}).Complete(context.Background(), basicRequest(), rec.stream())
	if err != nil {
		t.Fatal(err)
	}
	r, n := rec.joined("r:")
	if r != "First I think about the request." || n < 2 {
		t.Errorf("reasoning = %q in %d deltas", r, n)
	}
	if !strings.HasPrefix(rec.events[0], "r:") || !strings.HasPrefix(rec.events[len(rec.events)-1], "t:") {
		t.Errorf("reasoning must precede text: %q", rec.events)
	}
	if res.Text != "Answer." {
		t.Errorf("Text = %q (reasoning must not leak into text)", res.Text)
	}
}

// redirectTo returns an http.Client that sends every connection to addr,
// whatever host the URL names, so an openrouter.ai base URL reaches the fake.
func redirectTo(addr string) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	return &http.Client{Transport: tr}
}

func TestReasoningEffortWire(t *testing.T) {
	fake := startFake(t, nil)
	addr := strings.TrimSuffix(strings.TrimPrefix(fake.URL(), "http://"), "/v1")
	tests := []struct {
		name, base, effort string
		wantTop            string // reasoning_effort
		wantObj            string // reasoning object, canonical JSON
	}{
		{"openrouter gets reasoning object", "http://openrouter.ai/v1", " HIGH ", "", `{"effort":"high"}`},
		{"openrouter subdomain", "http://eu.openrouter.ai/v1", "low", "", `{"effort":"low"}`},
		{"direct endpoint gets reasoning_effort", fake.URL(), "medium", "medium", ""},
		{"lookalike host is not openrouter", "http://openrouter.ai.example/v1", "low", "low", ""},
		{"no effort sends neither", "http://openrouter.ai/v1", "", "", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openai.New(openai.Options{BaseURL: tt.base, HTTPClient: redirectTo(addr)})
			req := basicRequest()
			req.ReasoningEffort = tt.effort
			if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
				t.Fatal(err)
			}
			got := fake.Requests()[i]
			if got.ReasoningEffort != tt.wantTop {
				t.Errorf("reasoning_effort = %q, want %q", got.ReasoningEffort, tt.wantTop)
			}
			gotObj := ""
			if got.Reasoning != nil {
				gotObj = mustCanon(t, got.Reasoning)
			}
			if gotObj != tt.wantObj {
				t.Errorf("reasoning = %s, want %s", gotObj, tt.wantObj)
			}
		})
	}
}

func TestNonStreamingAnswerAccepted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","created":1,"model":"served-m","choices":[{"index":0,"message":{"role":"assistant","content":"plain","reasoning":"why","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11,"cost":0.5}}`))
	}))
	defer srv.Close()
	var rec recorder
	res, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1"}).Complete(context.Background(), basicRequest(), rec.stream())
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "plain" || res.Model != "served-m" || res.FinishReason != "tool_calls" ||
		len(res.ToolCalls) != 1 || string(res.ToolCalls[0].Arguments) != `{"a":1}` ||
		res.Usage.CostUSD != 0.5 || !res.Usage.CostReported {
		t.Errorf("res = %+v", res)
	}
	if strings.Join(rec.events, "|") != "r:why|t:plain" {
		t.Errorf("stream events = %q", rec.events)
	}
}

// TestEnvironmentIgnored proves the SDK's environment defaults are off: with
// every OPENAI_* variable pointing elsewhere, the fake still sees our key at
// our URL, and nothing else the environment asked for.
func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: yes")
	fake := startFake(t, nil)

	tests := []struct {
		name, key, wantAuth string
	}{
		{"our key wins", testKey, "Bearer " + testKey},
		{"no key means no Authorization", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fake.Calls()
			_, err := openai.New(openai.Options{BaseURL: fake.URL(), APIKey: tt.key}).Complete(context.Background(), basicRequest(), model.Stream{})
			if err != nil {
				t.Fatalf("Complete: %v (did the env base URL win?)", err)
			}
			reqs := fake.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("fake saw %d new requests, want 1", len(reqs)-before)
			}
			h := reqs[len(reqs)-1].Header
			if got := h.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			for _, name := range []string{"OpenAI-Organization", "OpenAI-Project", "X-From-Env"} {
				if v := h.Get(name); v != "" {
					t.Errorf("header %s = %q came from the environment", name, v)
				}
			}
		})
	}
}

func TestStaticHeadersSent(t *testing.T) {
	fake := startFake(t, nil)
	c := openai.New(openai.Options{BaseURL: fake.URL(), Headers: map[string]string{"X-Title": "Delta", "HTTP-Referer": "https://example.test"}})
	if _, err := c.Complete(context.Background(), basicRequest(), model.Stream{}); err != nil {
		t.Fatal(err)
	}
	h := fake.Requests()[0].Header
	if h.Get("X-Title") != "Delta" || h.Get("HTTP-Referer") != "https://example.test" {
		t.Errorf("headers = %v", h)
	}
}

func TestBadRequestsFailBeforeSending(t *testing.T) {
	fake := startFake(t, nil)
	c := openai.New(openai.Options{BaseURL: fake.URL()})
	mutate := []struct {
		name string
		f    func(*model.Request)
		want string
	}{
		{"no model", func(r *model.Request) { r.Model = "" }, "model is required"},
		{"unknown role", func(r *model.Request) { r.Messages[0].Role = "robot" }, `unknown role "robot"`},
		{"tool result without id", func(r *model.Request) { r.Messages[0] = model.Message{Role: model.RoleTool, Content: "x"} }, "tool_call_id"},
		{"schema not an object", func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(`[1]`) }, "parameters must be a JSON object"},
		{"schema null", func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(`null`) }, "not null"},
		{"nameless tool", func(r *model.Request) { r.Tools[0].Name = "" }, "tool name is required"},
		{"nothing to send", func(r *model.Request) { r.System = nil; r.Messages = nil }, "no messages"},
	}
	for _, tt := range mutate {
		t.Run(tt.name, func(t *testing.T) {
			req := basicRequest()
			tt.f(&req)
			_, err := c.Complete(context.Background(), req, model.Stream{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	if n := fake.Calls(); n != 0 {
		t.Errorf("fake saw %d requests, want 0", n)
	}
}

func TestBadBaseURL(t *testing.T) {
	for _, base := range []string{"ftp://example.test/v1", "not a url", "http://[::1"} {
		_, err := openai.New(openai.Options{BaseURL: base}).Complete(context.Background(), basicRequest(), model.Stream{})
		var me *model.Error
		if !errors.As(err, &me) || me.Retriable {
			t.Errorf("base %q: err = %v, want non-retriable *model.Error", base, err)
		}
	}
}

func TestBaseURLForms(t *testing.T) {
	fake := startFake(t, nil)
	for _, tt := range []struct{ base, wantPath string }{
		{fake.URL(), "/v1/chat/completions"},
		{fake.URL() + "/", "/v1/chat/completions"},
		{strings.TrimSuffix(fake.URL(), "/v1"), "/chat/completions"},
	} {
		before := fake.Calls()
		if _, err := openai.New(openai.Options{BaseURL: tt.base}).Complete(context.Background(), basicRequest(), model.Stream{}); err != nil {
			t.Fatalf("base %q: %v", tt.base, err)
		}
		if got := fake.Requests()[before].Path; got != tt.wantPath {
			t.Errorf("base %q: path %q, want %q", tt.base, got, tt.wantPath)
		}
	}
}
