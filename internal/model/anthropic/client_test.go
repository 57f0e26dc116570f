package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/anthropic"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

const testKey = "sk-ant-test-0123456789abcdef"

func startFake(t testing.TB, script modeltest.Script) *modeltest.Server {
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
		Model:  "claude-sonnet-4-5",
		System: []string{"You are Delta.", "Workspace: /tmp/ws."},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "write a brief"},
		},
		Tools: []model.ToolSpec{{
			Name:        "write_file",
			Description: "Write a file in the workspace.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`),
		}},
	}
}

type recorder struct{ events []string }

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
	fake := startFake(t, modeltest.Sequence(modeltest.Reply{Text: want, Usage: &modeltest.Usage{PromptTokens: 1200, CompletionTokens: 30, CachedTokens: 1000}}))
	fake.RequireKey(testKey)
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL(), APIKey: testKey})
	var rec recorder
	res, err := c.Complete(context.Background(), basicRequest(), rec.stream())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if res.Text != want {
		t.Errorf("Text = %q", res.Text)
	}
	if text, n := rec.joined("t:"); text != want || n < 3 {
		t.Errorf("OnText: %d deltas joining to %q", n, text)
	}
	if res.FinishReason != "stop" || res.Model != "claude-sonnet-4-5" || len(res.ToolCalls) != 0 || res.Extra != nil {
		t.Errorf("res = %+v", res)
	}
	wantUsage := model.Usage{InputTokens: 1200, OutputTokens: 30, CacheReadTokens: 1000}
	if res.Usage != wantUsage {
		t.Errorf("Usage = %+v, want %+v", res.Usage, wantUsage)
	}
	got := fake.Requests()[0]
	if got.Path != "/v1/messages" || !got.Stream {
		t.Errorf("path %q stream %v", got.Path, got.Stream)
	}
	h := got.Header
	if h.Get("X-Api-Key") != testKey || h.Get("Authorization") != "" || h.Get("Anthropic-Version") == "" {
		t.Errorf("auth headers: x-api-key %q authorization %q anthropic-version %q", h.Get("X-Api-Key"), h.Get("Authorization"), h.Get("Anthropic-Version"))
	}
	var roles []string
	for _, m := range got.Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	if s := strings.Join(roles, "|"); s != "system:You are Delta.|system:Workspace: /tmp/ws.|user:write a brief" {
		t.Errorf("messages = %s", s)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "write_file" {
		t.Errorf("tools = %+v", got.Tools)
	}
}

func TestToolUseAssembledAndReplayed(t *testing.T) {
	calls := []modeltest.ToolCall{
		{ID: "toolu_a", Name: "write_file", Arguments: `{"path":"notes/brief.md","content":"Déjà vu — ünïcödé across fragment boundaries ✓"}`},
		{ID: "toolu_b", Name: "list_files", Arguments: `{"path":"."}`},
	}
	fake := startFake(t, modeltest.Sequence(
		modeltest.Reply{Reasoning: "I should write the file first.", ToolCalls: calls},
		modeltest.TextReply("Done."),
	))
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL()})
	req := basicRequest()
	req.ReasoningEffort = "low"
	var rec recorder
	res, err := c.Complete(context.Background(), req, rec.stream())
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != "tool_calls" || len(res.ToolCalls) != 2 {
		t.Fatalf("res = %+v", res)
	}
	for i, want := range calls {
		got := res.ToolCalls[i]
		if got.ID != want.ID || got.Name != want.Name || string(got.Arguments) != want.Arguments {
			t.Errorf("call %d = %+v, want %+v", i, got, want)
		}
	}
	if r, n := rec.joined("r:"); r != "I should write the file first." || n < 2 {
		t.Errorf("reasoning %q in %d deltas", r, n)
	}
	if !strings.Contains(string(res.Extra), `"signature"`) {
		t.Fatalf("Extra lacks the thinking signature: %s", res.Extra)
	}

	// The next turn replays the thinking block; the fake refuses a tool
	// loop continued without it, as the real API does.
	next := req
	next.Messages = append(append([]model.Message(nil), req.Messages...),
		model.Message{Role: model.RoleAssistant, ToolCalls: res.ToolCalls, Extra: res.Extra},
		model.Message{Role: model.RoleTool, ToolCallID: "toolu_a", Name: "write_file", Content: "wrote 40 bytes"},
		model.Message{Role: model.RoleTool, ToolCallID: "toolu_b", Name: "list_files", Content: "notes/"},
	)
	if res, err := c.Complete(context.Background(), next, model.Stream{}); err != nil || res.Text != "Done." {
		t.Fatalf("second turn: %+v %v", res, err)
	}
	sent := fake.Requests()[1]
	var tail []string
	for _, m := range sent.Messages[2:] {
		tail = append(tail, m.Role+":"+m.ToolCallID+":"+m.Content)
	}
	if s := strings.Join(tail, "|"); s != "user::write a brief|assistant::|tool:toolu_a:wrote 40 bytes|tool:toolu_b:notes/" {
		t.Errorf("sent = %s", s)
	}

	// History from another wire has no thinking block to replay: the
	// effort is dropped for that call instead of a certain 400.
	noExtra := next
	noExtra.Messages = append([]model.Message(nil), next.Messages...)
	noExtra.Messages[1].Extra = nil
	if _, err := c.Complete(context.Background(), noExtra, model.Stream{}); err != nil {
		t.Fatalf("continuing a loop without thinking blocks: %v", err)
	}
	if r := fake.Requests()[2].Reasoning; r != nil {
		t.Errorf("thinking sent with a loop that cannot carry it: %s", r)
	}
}

func TestExtraOfAnotherWireIgnored(t *testing.T) {
	fake := startFake(t, nil)
	req := basicRequest()
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Content: "Earlier answer.", Extra: json.RawMessage(`{"responses":{"items":[{"type":"reasoning","encrypted_content":"SEALED"}]}}`)},
		model.Message{Role: model.RoleUser, Content: "again"})
	if _, err := anthropic.New(anthropic.Options{BaseURL: fake.URL()}).Complete(context.Background(), req, model.Stream{}); err != nil {
		t.Fatal(err)
	}
	if raw := string(fake.Requests()[0].Raw); strings.Contains(raw, "SEALED") || strings.Contains(raw, "encrypted") {
		t.Errorf("another wire's sealed payload was sent: %s", raw)
	}
}

// TestEnvironmentIgnored: with every ANTHROPIC_* variable pointing
// elsewhere, the fake still sees our key at our URL and nothing else.
func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: yes")
	t.Setenv("ANTHROPIC_PROFILE", "nope")
	fake := startFake(t, nil)
	tests := []struct{ name, key string }{{"our key wins", testKey}, {"no key means no credential", ""}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fake.Calls()
			_, err := anthropic.New(anthropic.Options{BaseURL: fake.URL(), APIKey: tt.key}).Complete(context.Background(), basicRequest(), model.Stream{})
			if err != nil {
				t.Fatalf("Complete: %v (did the environment win?)", err)
			}
			reqs := fake.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("fake saw %d new requests", len(reqs)-before)
			}
			h := reqs[len(reqs)-1].Header
			if h.Get("X-Api-Key") != tt.key || h.Get("Authorization") != "" || h.Get("X-From-Env") != "" {
				t.Errorf("headers from the environment: %v", h)
			}
		})
	}
}

func TestBaseURLs(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"nope"}}`, 404)
	}))
	defer srv.Close()
	tests := []struct{ base, want string }{
		{srv.URL + "/v1", "/v1/messages"},
		{srv.URL + "/v1/", "/v1/messages"},
		{srv.URL, "/v1/messages"},
		{srv.URL + "/proxy/anthropic/v1", "/proxy/anthropic/v1/messages"},
	}
	for i, tt := range tests {
		_, err := anthropic.New(anthropic.Options{BaseURL: tt.base}).Complete(context.Background(), basicRequest(), model.Stream{})
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 404 || me.Message != "nope" || me.Retriable {
			t.Errorf("%s: err = %v", tt.base, err)
		}
		if len(paths) != i+1 || paths[i] != tt.want {
			t.Errorf("%s: path %v, want %s", tt.base, paths, tt.want)
		}
	}
	for _, bad := range []string{"ftp://x/v1", "not a url", "http://"} {
		_, err := anthropic.New(anthropic.Options{BaseURL: bad}).Complete(context.Background(), basicRequest(), model.Stream{})
		if err == nil || !strings.Contains(err.Error(), "base URL") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestStaticHeadersSent(t *testing.T) {
	fake := startFake(t, nil)
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL(), Headers: map[string]string{"anthropic-beta": "context-1m-2025-08-07"}})
	if _, err := c.Complete(context.Background(), basicRequest(), model.Stream{}); err != nil {
		t.Fatal(err)
	}
	if h := fake.Requests()[0].Header; h.Get("Anthropic-Beta") != "context-1m-2025-08-07" {
		t.Errorf("headers = %v", h)
	}
}

func TestBadRequestsFailBeforeSending(t *testing.T) {
	fake := startFake(t, nil)
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL()})
	tests := []struct {
		name string
		f    func(*model.Request)
		want string
	}{
		{"no model", func(r *model.Request) { r.Model = "" }, "model is required"},
		{"unknown role", func(r *model.Request) { r.Messages[0].Role = "robot" }, `unknown role "robot"`},
		{"tool result without id", func(r *model.Request) { r.Messages = append(r.Messages, model.Message{Role: model.RoleTool}) }, "tool_call_id"},
		{"schema not an object", func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(`[1]`) }, "parameters must be a JSON object"},
		{"schema null", func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(`null`) }, "not null"},
		{"nameless tool", func(r *model.Request) { r.Tools[0].Name = "" }, "tool name is required"},
		{"nothing to send", func(r *model.Request) { r.Messages = nil }, "no messages"},
		{"assistant first", func(r *model.Request) { r.Messages[0].Role = model.RoleAssistant }, "first message must be the user's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := basicRequest()
			tt.f(&req)
			_, err := c.Complete(context.Background(), req, model.Stream{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if n := fake.Calls(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestDemoScriptOverWire: the demo agent works unchanged on this wire.
func TestDemoScriptOverWire(t *testing.T) {
	fake := startFake(t, modeltest.DemoScript())
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL()})
	req := basicRequest()
	req.Messages[0].Content = "Write notes.md about the launch"
	res, err := c.Complete(context.Background(), req, model.Stream{})
	if err != nil || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "write_file" || !strings.Contains(string(res.ToolCalls[0].Arguments), `"path":"notes.md"`) {
		t.Fatalf("first turn: %+v %v", res, err)
	}
	req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, ToolCalls: res.ToolCalls},
		model.Message{Role: model.RoleTool, ToolCallID: res.ToolCalls[0].ID, Name: "write_file", Content: "wrote notes.md"})
	res, err = c.Complete(context.Background(), req, model.Stream{})
	if err != nil || !strings.HasPrefix(res.Text, "I wrote notes.md. The tool said: wrote notes.md") {
		t.Fatalf("second turn: %+v %v", res, err)
	}
}
