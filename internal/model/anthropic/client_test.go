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
	"github.com/deltaharness/delta/internal/model/wiretest"
)

const testKey = "sk-ant-test-0123456789abcdef"

// basicRequest is the shared suite's request with a closed tool schema,
// as the golden files pin it.
func basicRequest() model.Request {
	r := wire.Request()
	r.Tools[0].Parameters = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`)
	return r
}

// TestHeaders: the key travels as x-api-key with an anthropic-version,
// never as a bearer token, and static headers ride along.
func TestHeaders(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	fake.RequireKey(testKey)
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL(), APIKey: testKey, Headers: map[string]string{"anthropic-beta": "context-1m-2025-08-07"}})
	res, err := c.Complete(context.Background(), basicRequest(), model.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Extra != nil {
		t.Errorf("Extra without thinking: %s", res.Extra)
	}
	h := fake.Requests()[0].Header
	if h.Get("X-Api-Key") != testKey || h.Get("Authorization") != "" || h.Get("Anthropic-Version") == "" || h.Get("Anthropic-Beta") != "context-1m-2025-08-07" {
		t.Errorf("headers: x-api-key %q authorization %q anthropic-version %q anthropic-beta %q", h.Get("X-Api-Key"), h.Get("Authorization"), h.Get("Anthropic-Version"), h.Get("Anthropic-Beta"))
	}
}

func TestToolUseAssembledAndReplayed(t *testing.T) {
	calls := []modeltest.ToolCall{
		{ID: "toolu_a", Name: "write_file", Arguments: `{"path":"notes/brief.md","content":"Déjà vu — ünïcödé across fragment boundaries ✓"}`},
		{ID: "toolu_b", Name: "list_files", Arguments: `{"path":"."}`},
	}
	fake := modeltest.Serve(t, modeltest.Sequence(
		modeltest.Reply{Reasoning: "I should write the file first.", ToolCalls: calls},
		modeltest.TextReply("Done."),
	))
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL()})
	req := basicRequest()
	req.ReasoningEffort = "low"
	var rec wiretest.Recorder
	res, err := c.Complete(context.Background(), req, rec.Stream())
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
	if r, n := rec.Joined("r:"); r != "I should write the file first." || n < 2 {
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

// TestAssistantFirstRefused: the Messages API opens with the user's turn;
// a history that does not is refused before anything is sent.
func TestAssistantFirstRefused(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	req := basicRequest()
	req.Messages[0].Role = model.RoleAssistant
	_, err := anthropic.New(anthropic.Options{BaseURL: fake.URL()}).Complete(context.Background(), req, model.Stream{})
	if err == nil || !strings.Contains(err.Error(), "first message must be the user's") {
		t.Fatalf("err = %v", err)
	}
	if n := fake.Calls(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}
