package wiretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// Key is the API key the suite configures; no error may ever show it.
const Key = "sk-wiretest-0123456789abcdef"

// Options is what the suite sets on a wire's client.
type Options struct {
	BaseURL string
	APIKey  string
	Timeout time.Duration
	Headers map[string]string
}

// Wire describes one wire client to the suite.
type Wire struct {
	// New returns the wire's client with o applied.
	New func(o Options) model.Provider
	// Model is the model name of the suite's requests; the fake serves
	// under the same name.
	Model string
	// Path is where a request to the fake's base URL must land.
	Path string
	// Credential is the API key as the request's headers carried it, ""
	// when they carry none. A wire sends the key one way only.
	Credential func(http.Header) string
	// Env is the environment the wire's SDK would read by default; the
	// client must ignore all of it. A value "X-From-Env: yes" stands for a
	// custom-headers variable, and that header must not be sent.
	Env map[string]string
	// ExtraKey is the member this wire keeps in Response.Extra ("" for
	// none); another wire's members are never sent.
	ExtraKey string
	// Errors are the wire's own error cases, run with the shared ones:
	// its servers' context-overflow messages, statuses only it sees.
	Errors []ErrorCase
}

// ErrorCase is one HTTP error answer and how the client must classify it.
type ErrorCase struct {
	Status    int
	Message   string
	Retriable bool
	Overflow  bool // wraps model.ErrContextOverflow
}

// Bearer is the Credential of a wire that sends its key as
// "Authorization: Bearer <key>".
func Bearer(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") }

// OpenAIEnv is the environment openai-go reads by default, pointing
// elsewhere: the Env of both wires built on it.
var OpenAIEnv = map[string]string{"OPENAI_API_KEY": "sk-from-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_ORG_ID": "org-env",
	"OPENAI_PROJECT_ID": "proj-env", "OPENAI_CUSTOM_HEADERS": "X-From-Env: yes"}

// Request is the suite's basic request for w: a system spine of two
// blocks, one user message and one tool.
func (w Wire) Request() model.Request {
	return model.Request{
		Model:    w.Model,
		System:   []string{"You are Delta.", "Workspace: /tmp/ws."},
		Messages: []model.Message{{Role: model.RoleUser, Content: "write a brief"}},
		Tools: []model.ToolSpec{{Name: "write_file", Description: "Write a file in the workspace.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096},"content":{"type":"string"}},"required":["path","content"]}`)}},
	}
}

// Run is the conformance suite: what every wire does the same way, each
// behaviour a subtest. Only the environment case mutates process state; it
// runs first, the others then in parallel.
func Run(t *testing.T, w Wire) {
	t.Run("environment ignored", w.environmentIgnored)
	for _, c := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"text streams in deltas", w.textStreams},
		{"tool calls assembled across chunks", w.toolCalls},
		{"reasoning streams before text", w.reasoning},
		{"history round trip", w.history},
		{"a memo never changes the bytes sent", w.memoSameBytes},
		{"static headers sent", w.staticHeaders},
		{"bad requests fail before sending", w.badRequests},
		{"another wire's extra never sent", w.foreignExtra},
		{"images on user messages only", w.images},
		{"demo script", w.demo},
		{"status errors", w.statusErrors},
		{"unauthorized never leaks the key", w.unauthorized},
		{"cut streams are retriable", w.cutStreams},
		{"timeout is retriable", w.timeout},
		{"cancel is not a model failure", w.cancel},
		{"network error is retriable", w.networkError},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t)
		})
	}
}

func (w Wire) client(fake *modeltest.Server) model.Provider {
	return w.New(Options{BaseURL: fake.URL()})
}

func (w Wire) environmentIgnored(t *testing.T) {
	for k, v := range w.Env {
		t.Setenv(k, v)
	}
	fake := modeltest.Serve(t, nil)
	for _, key := range []string{Key, ""} {
		before := fake.Calls()
		if _, err := w.New(Options{BaseURL: fake.URL(), APIKey: key}).Complete(context.Background(), w.Request(), model.Stream{}); err != nil {
			t.Fatalf("key %q: Complete: %v (did the environment win?)", key, err)
		}
		reqs := fake.Requests()
		if len(reqs) != before+1 {
			t.Fatalf("fake saw %d new requests, want 1", len(reqs)-before)
		}
		h := reqs[len(reqs)-1].Header
		if got := w.Credential(h); got != key {
			t.Errorf("credential sent %q, want %q (no key means no credential)", got, key)
		}
		for _, name := range []string{"X-From-Env", "OpenAI-Organization", "OpenAI-Project"} {
			if v := h.Get(name); v != "" {
				t.Errorf("header %s = %q came from the environment", name, v)
			}
		}
	}
}

func (w Wire) textStreams(t *testing.T) {
	want := "Hello there, this answer arrives in several deltas."
	fake := modeltest.Serve(t, modeltest.Sequence(modeltest.Reply{Text: want, Usage: &modeltest.Usage{PromptTokens: 1200, CompletionTokens: 30, CachedTokens: 1000}}))
	fake.RequireKey(Key)
	var rec Recorder
	res, err := w.New(Options{BaseURL: fake.URL(), APIKey: Key}).Complete(context.Background(), w.Request(), rec.Stream())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if res.Text != want {
		t.Errorf("Text = %q, want %q", res.Text, want)
	}
	if text, n := rec.Joined("t:"); text != want || n < 3 {
		t.Errorf("OnText: %d deltas joining to %q; want several joining to %q", n, text, want)
	}
	if res.FinishReason != "stop" || res.Model != w.Model || len(res.ToolCalls) != 0 {
		t.Errorf("FinishReason=%q Model=%q ToolCalls=%v", res.FinishReason, res.Model, res.ToolCalls)
	}
	if wantUsage := (model.Usage{InputTokens: 1200, OutputTokens: 30, CacheReadTokens: 1000}); res.Usage != wantUsage {
		t.Errorf("Usage = %+v, want %+v", res.Usage, wantUsage)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("fake saw %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Path != w.Path || !got.Stream {
		t.Errorf("path %q stream %v, want %q streaming", got.Path, got.Stream, w.Path)
	}
	if c := w.Credential(got.Header); c != Key {
		t.Errorf("credential sent %q", c)
	}
	system, rest := splitSystem(got.Messages)
	if system != "You are Delta.\n\nWorkspace: /tmp/ws." || len(rest) != 1 || rest[0].Role != "user" || rest[0].Content != "write a brief" {
		t.Errorf("system %q, then %+v", system, rest)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "write_file" || got.Tools[0].Description != "Write a file in the workspace." {
		t.Fatalf("tools = %+v", got.Tools)
	}
	if g, w := Canonical(t, got.Tools[0].Parameters), Canonical(t, w.Request().Tools[0].Parameters); g != w {
		t.Errorf("tool schema = %s, want %s", g, w)
	}
}

// splitSystem returns the leading system messages as one text (a wire
// may send the spine's blocks apart or joined by a blank line) and the
// messages after them.
func splitSystem(msgs []modeltest.ChatMessage) (string, []modeltest.ChatMessage) {
	var blocks []string
	for len(msgs) > 0 && msgs[0].Role == "system" {
		blocks = append(blocks, msgs[0].Content)
		msgs = msgs[1:]
	}
	return strings.Join(blocks, "\n\n"), msgs
}

func (w Wire) toolCalls(t *testing.T) {
	calls := []modeltest.ToolCall{
		{ID: "call_a", Name: "write_file", Arguments: `{"path":"notes/brief.md","content":"# Brief\n\nDéjà vu — ünïcödé across fragment boundaries ✓"}`},
		{ID: "call_b", Name: "list_files", Arguments: `{"path":"."}`},
	}
	fake := modeltest.Serve(t, modeltest.Sequence(modeltest.ToolReply(calls...)))
	var rec Recorder
	res, err := w.client(fake).Complete(context.Background(), w.Request(), rec.Stream())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if res.FinishReason != "tool_calls" || len(res.ToolCalls) != len(calls) {
		t.Fatalf("FinishReason %q, %d tool calls, want tool_calls and %d: %+v", res.FinishReason, len(res.ToolCalls), len(calls), res.ToolCalls)
	}
	for i, want := range calls {
		got := res.ToolCalls[i]
		if got.ID != want.ID || got.Name != want.Name || string(got.Arguments) != want.Arguments {
			t.Errorf("call %d = {%s %s %s}, want {%s %s %s}", i, got.ID, got.Name, got.Arguments, want.ID, want.Name, want.Arguments)
		}
	}
	if len(rec.Events) != 0 {
		t.Errorf("no text expected, got deltas %q", rec.Events)
	}
}

func (w Wire) reasoning(t *testing.T) {
	fake := modeltest.Serve(t, modeltest.Sequence(modeltest.Reply{Reasoning: "First I think about the request.", Text: "Answer."}))
	req := w.Request()
	req.ReasoningEffort = "low"
	var rec Recorder
	res, err := w.client(fake).Complete(context.Background(), req, rec.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if r, n := rec.Joined("r:"); r != "First I think about the request." || n < 2 {
		t.Errorf("reasoning = %q in %d deltas", r, n)
	}
	if len(rec.Events) == 0 || !strings.HasPrefix(rec.Events[0], "r:") || !strings.HasPrefix(rec.Events[len(rec.Events)-1], "t:") {
		t.Errorf("reasoning must precede text: %q", rec.Events)
	}
	if res.Text != "Answer." {
		t.Errorf("Text = %q (reasoning must not leak into text)", res.Text)
	}
}

// history: a finished tool round reaches the server as the fake decodes
// it: the assistant's calls (no arguments sent as {}), then each result
// under its call's id, then the later turns.
func (w Wire) history(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	req := w.Request()
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_1", Name: "write_file", Arguments: json.RawMessage(`{"path":"a.md","content":"x"}`)},
			{ID: "call_2", Name: "noop"},
		}},
		model.Message{Role: model.RoleTool, ToolCallID: "call_1", Name: "write_file", Content: "wrote 1 byte"},
		model.Message{Role: model.RoleTool, ToolCallID: "call_2", Name: "noop", Content: "ok"},
		model.Message{Role: model.RoleAssistant, Content: "Done."},
		model.Message{Role: model.RoleUser, Content: "again"},
	)
	if _, err := w.client(fake).Complete(context.Background(), req, model.Stream{}); err != nil {
		t.Fatal(err)
	}
	var tail []string
	_, rest := splitSystem(fake.Requests()[0].Messages)
	for _, m := range rest {
		s := m.Role + ":" + m.ToolCallID + ":" + m.Content
		for _, c := range m.ToolCalls {
			s += "[" + c.ID + " " + c.Name + " " + Canonical(t, []byte(c.Arguments)) + "]"
		}
		tail = append(tail, s)
	}
	want := `user::write a brief|assistant::[call_1 write_file {"content":"x","path":"a.md"}][call_2 noop {}]|tool:call_1:wrote 1 byte|tool:call_2:ok|assistant::Done.|user::again`
	if s := strings.Join(tail, "|"); s != want {
		t.Errorf("sent  %s\nwant %s", s, want)
	}
}

func (w Wire) staticHeaders(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	c := w.New(Options{BaseURL: fake.URL(), Headers: map[string]string{"X-Title": "Delta", "HTTP-Referer": "https://example.test"}})
	if _, err := c.Complete(context.Background(), w.Request(), model.Stream{}); err != nil {
		t.Fatal(err)
	}
	if h := fake.Requests()[0].Header; h.Get("X-Title") != "Delta" || h.Get("HTTP-Referer") != "https://example.test" {
		t.Errorf("headers = %v", h)
	}
}

func (w Wire) badRequests(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	c := w.client(fake)
	for _, tt := range []struct {
		name string
		f    func(*model.Request)
		want string
	}{
		{"no model", func(r *model.Request) { r.Model = "" }, "model is required"},
		{"unknown role", func(r *model.Request) { r.Messages[0].Role = "robot" }, `unknown role "robot"`},
		{"tool result without id", func(r *model.Request) {
			r.Messages = append(r.Messages, model.Message{Role: model.RoleTool, Content: "x"})
		}, "tool_call_id"},
		{"schema not an object", func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(`[1]`) }, "parameters must be a JSON object"},
		{"schema null", func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(`null`) }, "not null"},
		{"nameless tool", func(r *model.Request) { r.Tools[0].Name = "" }, "tool name is required"},
		{"nothing to send", func(r *model.Request) { r.System, r.Messages = nil, nil }, "no messages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := w.Request()
			tt.f(&req)
			_, err := c.Complete(context.Background(), req, model.Stream{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	if n := fake.Calls(); n != 0 {
		t.Errorf("%d requests reached the server, want 0", n)
	}
}

// foreignExtra: an assistant message may carry state another wire stored
// (a conversation that moved between providers); only this wire's own
// member may reach this wire's server.
func (w Wire) foreignExtra(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	foreign := map[string]string{
		"anthropic": `{"thinking":[{"type":"thinking","thinking":"SEALED","signature":"SEALED"}]}`,
		"responses": `{"items":[{"type":"reasoning","encrypted_content":"SEALED"}],"phase":"SEALED"}`,
		"elsewhere": `{"state":"SEALED"}`,
	}
	var members []string
	for k, v := range foreign {
		if k != w.ExtraKey {
			members = append(members, `"`+k+`":`+v)
		}
	}
	req := w.Request()
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Content: "Earlier answer.", Extra: json.RawMessage("{" + strings.Join(members, ",") + "}")},
		model.Message{Role: model.RoleUser, Content: "again"})
	if _, err := w.client(fake).Complete(context.Background(), req, model.Stream{}); err != nil {
		t.Fatal(err)
	}
	if raw := string(fake.Requests()[0].Raw); strings.Contains(raw, "SEALED") {
		t.Errorf("another wire's stored state was sent: %s", raw)
	}
}

// Tiny images whose magic bytes real endpoints (and the fake) recognise.
var (
	PNG  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00")
	JPEG = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
)

// ImageRead appends to req the turns a read of an image ends with, as the
// harness sends them: the assistant's read_file call id on path, its
// result naming the first image, the per-turn block, and the user message
// listing names that carries images.
func ImageRead(req model.Request, id, path string, names []string, images ...model.Image) model.Request {
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "read_file", Arguments: json.RawMessage(`{"path":"` + path + `"}`)}}},
		model.Message{Role: model.RoleTool, ToolCallID: id, Name: "read_file", Content: fmt.Sprintf("[image: %s (%s, %d bytes)]", path, images[0].MIME, len(images[0].Data))},
		model.Message{Role: model.RoleUser, Content: "<delta:turn step=2/>"},
		model.Message{Role: model.RoleUser, Content: "<delta:images>\n" + strings.Join(names, "\n") + "\n</delta:images>", Images: images},
	)
	return req
}

// images: a user message's images reach the server in order, bytes
// intact, on that message; images on another role are not sent (the
// contract is a user message).
func (w Wire) images(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	req := w.Request()
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Content: "Looking.", Images: []model.Image{{MIME: "image/png", Data: PNG}}},
		model.Message{Role: model.RoleUser, Content: "<delta:images>\ncat.png\ncat.jpg\n</delta:images>", Images: []model.Image{
			{MIME: "image/png", Data: PNG}, {MIME: "image/jpeg", Data: JPEG}}})
	if _, err := w.client(fake).Complete(context.Background(), req, model.Stream{}); err != nil {
		t.Fatal(err)
	}
	got := fake.Requests()[0]
	ims := got.Images()
	if len(ims) != 2 || ims[0] != (modeltest.ChatImage{MIME: "image/png", Bytes: len(PNG), SHA256: SHA256(PNG)}) ||
		ims[1] != (modeltest.ChatImage{MIME: "image/jpeg", Bytes: len(JPEG), SHA256: SHA256(JPEG)}) {
		t.Errorf("fake recorded images %+v", ims)
	}
	if m := got.LastMessage(); m.Role != "user" || m.Content != "<delta:images>\ncat.png\ncat.jpg\n</delta:images>" || len(m.Images) != 2 {
		t.Errorf("last message as decoded = %+v", m)
	}
}

// demo: the demo agent's script works unchanged on this wire.
func (w Wire) demo(t *testing.T) {
	fake := modeltest.Serve(t, modeltest.DemoScript())
	c := w.client(fake)
	req := w.Request()
	req.Messages[0].Content = "Write notes.md about the launch"
	res, err := c.Complete(context.Background(), req, model.Stream{})
	if err != nil || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "write_file" || !strings.Contains(string(res.ToolCalls[0].Arguments), `"path":"notes.md"`) {
		t.Fatalf("first turn: %+v %v", res, err)
	}
	req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, ToolCalls: res.ToolCalls, Extra: res.Extra},
		model.Message{Role: model.RoleTool, ToolCallID: res.ToolCalls[0].ID, Name: "write_file", Content: "wrote notes.md"})
	res, err = c.Complete(context.Background(), req, model.Stream{})
	if err != nil || !strings.HasPrefix(res.Text, "I wrote notes.md. The tool said: wrote notes.md") {
		t.Fatalf("second turn: %+v %v", res, err)
	}
}

// statusErrors: every HTTP failure is one attempt (the harness owns
// retries) ending in a *model.Error with the status, the server's message
// cut to 500 characters, and whether a retry can help.
func (w Wire) statusErrors(t *testing.T) {
	tests := []ErrorCase{
		{400, "bad input", false, false},
		{401, "invalid key", false, false},
		{403, "region blocked", false, false},
		{404, "model not found", false, false},
		{408, "timeout", true, false},
		{409, "token rotating", true, false},
		{413, "request too large", false, false},
		{429, "Rate limit reached", true, false},
		{500, "The server had an error", true, false},
		{502, "upstream down", true, false},
		{503, "unavailable", true, false},
		{500, strings.Repeat("overloaded ", 300), true, false},
	}
	for _, tt := range append(tests, w.Errors...) {
		t.Run(http.StatusText(tt.Status)+"/"+tt.Message[:min(len(tt.Message), 40)], func(t *testing.T) {
			t.Parallel()
			fake := modeltest.Serve(t, modeltest.Sequence(modeltest.ErrorReply(tt.Status, tt.Message)))
			_, err := w.New(Options{BaseURL: fake.URL(), APIKey: Key}).Complete(context.Background(), w.Request(), model.Stream{})
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %T %v, want *model.Error", err, err)
			}
			if me.Status != tt.Status || me.Retriable != tt.Retriable || model.IsRetriable(err) != tt.Retriable {
				t.Errorf("Status=%d Retriable=%v, want %d %v", me.Status, me.Retriable, tt.Status, tt.Retriable)
			}
			if n := utf8.RuneCountInString(me.Message); n > 500 {
				t.Errorf("Message has %d characters, want at most 500", n)
			} else if len(tt.Message) <= 500 && me.Message != tt.Message {
				t.Errorf("Message = %q, want %q", me.Message, tt.Message)
			}
			if errors.Is(err, model.ErrContextOverflow) != tt.Overflow {
				t.Errorf("ErrContextOverflow = %v, want %v", !tt.Overflow, tt.Overflow)
			}
			if n := fake.Calls(); n != 1 {
				t.Errorf("client made %d attempts, want exactly 1", n)
			}
		})
	}
}

func (w Wire) unauthorized(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	fake.RequireKey("sk-the-right-key")
	_, err := w.New(Options{BaseURL: fake.URL(), APIKey: Key}).Complete(context.Background(), w.Request(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 401 || me.Retriable {
		t.Fatalf("err = %v, want a non-retriable 401 *model.Error", err)
	}
	if strings.Contains(err.Error(), Key) || strings.Contains(me.Message, Key) {
		t.Errorf("error leaks the API key: %q", err.Error())
	}
}

// cutStreams: a stream that ends early or drops is retriable, carries no
// status, and keeps what arrived as the partial result.
func (w Wire) cutStreams(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reply modeltest.Reply
	}{
		{"ends before its end event", modeltest.Reply{Text: "one two three four five six", EndEarly: true}},
		{"connection dropped mid-stream", modeltest.Reply{Text: "one two three four five six", Abort: true}},
		{"tool call cut", modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "write_file", Arguments: `{"path":"a.md","content":"long enough to split"}`}}, EndEarly: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := modeltest.Serve(t, modeltest.Sequence(tt.reply))
			var rec Recorder
			res, err := w.client(fake).Complete(context.Background(), w.Request(), rec.Stream())
			var me *model.Error
			if !errors.As(err, &me) || !me.Retriable || me.Status != 0 {
				t.Fatalf("err = %v, want retriable *model.Error without status", err)
			}
			if tt.reply.Text != "" {
				if text, _ := rec.Joined("t:"); text == "" || text == tt.reply.Text || res.Text != text {
					t.Errorf("streamed %q, partial result %q: want a strict prefix of %q", text, res.Text, tt.reply.Text)
				}
			}
		})
	}
}

func (w Wire) timeout(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	fake.Hold()
	defer fake.Release()
	_, err := w.New(Options{BaseURL: fake.URL(), Timeout: 50 * time.Millisecond}).Complete(context.Background(), w.Request(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || !me.Retriable || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(me.Message, "within 50ms") {
		t.Fatalf("err = %v, want retriable *model.Error wrapping DeadlineExceeded, naming the timeout", err)
	}
}

func (w Wire) cancel(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	fake.Hold()
	defer fake.Release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := w.client(fake).Complete(ctx, w.Request(), model.Stream{})
		errc <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := fake.WaitCalls(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-errc
	var me *model.Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &me) {
		t.Errorf("err = %v, want context.Canceled and no *model.Error", err)
	}
}

func (w Wire) networkError(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	_, err = w.New(Options{BaseURL: "http://" + addr + "/v1", APIKey: Key}).Complete(context.Background(), w.Request(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || !me.Retriable || me.Status != 0 {
		t.Fatalf("err = %v, want retriable *model.Error with status 0", err)
	}
	if strings.Contains(err.Error(), Key) {
		t.Errorf("error leaks the key: %v", err)
	}
}
