package wiretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// Each wire encodes its request body itself (encode.go) and must put on
// the wire exactly the bytes its SDK put there when it encoded the SDK's
// params. The wire's equivalence tests send each request twice through a
// modeltest.Capture: once through Complete (Captured), once through the
// SDK with the request lowered onto its params, and compare (CheckSame).

// Sent is what one path put on the wire; Body is nil when the request
// never left (a build or encode error).
type Sent struct {
	URL    string
	Body   []byte
	Header http.Header
}

// Captured runs call (one Complete of a client whose transport is tr)
// twice and returns what the first sent. The second call runs with the
// tool definitions memoized and must send the same bytes. A call that
// never reached tr returns the zero Sent.
func Captured(t testing.TB, tr *modeltest.Capture, call func() error) Sent {
	t.Helper()
	err := call()
	if tr.Calls == 0 {
		return Sent{}
	}
	if !errors.Is(err, modeltest.ErrCaptured) {
		t.Fatalf("Complete: %v", err)
	}
	first := tr.Body
	_ = call() // captured again; the bytes are what is compared
	if !bytes.Equal(tr.Body, first) {
		t.Fatalf("a second call sent other bytes\nfirst:  %s\nsecond: %s", first, tr.Body)
	}
	return Sent{tr.URL, tr.Body, tr.Header}
}

// Completed is Captured for one Complete of c, whose transport is tr,
// with req.
func Completed(t testing.TB, tr *modeltest.Capture, c model.Provider, req model.Request) Sent {
	t.Helper()
	return Captured(t, tr, func() error {
		_, err := c.Complete(context.Background(), req, model.Stream{})
		return err
	})
}

// Edits returns a maker of test requests: base's request, changed by edit.
func Edits(base func() model.Request) func(edit func(r *model.Request)) model.Request {
	return func(edit func(r *model.Request)) model.Request {
		r := base()
		edit(&r)
		return r
	}
}

// ToolSchema is an edit that gives a request's first tool the parameters s.
func ToolSchema(s string) func(r *model.Request) {
	return func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(s) }
}

// OpenAISDK calls an openai-go service's New method (call) with params as
// the OpenAI wires called it before they encoded their own bodies: the SDK
// encodes params with "stream" set and asks for the event stream, and the
// raw response keeps it from decoding the body. It returns what the call
// left in tr, the service's transport.
func OpenAISDK[P, R any](t testing.TB, tr *modeltest.Capture, call func(context.Context, P, ...option.RequestOption) (R, error), params P) Sent {
	t.Helper()
	var res *http.Response
	_, err := call(context.Background(), params,
		option.WithJSONSet("stream", true),
		option.WithHeader("Accept", "text/event-stream"),
		option.WithResponseBodyInto(&res),
	)
	return CapturedSDK(t, tr, err)
}

// CapturedSDK is what the SDK's own call (err its result) left in tr.
func CapturedSDK(t testing.TB, tr *modeltest.Capture, err error) Sent {
	t.Helper()
	if tr.Calls == 0 {
		return Sent{}
	}
	if !errors.Is(err, modeltest.ErrCaptured) {
		t.Fatalf("SDK: %v", err)
	}
	return Sent{tr.URL, tr.Body, tr.Header}
}

// CheckSame fails t unless the client (got) and the SDK (want) sent the
// same request: the same bytes to the same URL with the same headers. When
// reordered is true (the SDK wrote some members in Go map order), bodies of
// the same length and the same JSON value also pass. It reports whether
// the request was sent at all; both paths must agree on that.
func CheckSame(t testing.TB, got, want Sent, reordered bool) bool {
	t.Helper()
	if (got.Body == nil) != (want.Body == nil) {
		t.Fatalf("sent by the client: %v, by the SDK: %v\nclient: %s\nsdk:    %s", got.Body != nil, want.Body != nil, got.Body, want.Body)
	}
	if got.Body == nil {
		return false
	}
	if !bytes.Equal(got.Body, want.Body) {
		if !reordered || len(got.Body) != len(want.Body) || Canonical(t, got.Body) != Canonical(t, want.Body) {
			t.Fatalf("bodies differ\nclient: %s\nsdk:    %s", got.Body, want.Body)
		}
	}
	if got.URL != want.URL {
		t.Errorf("url: client %s, sdk %s", got.URL, want.URL)
	}
	for k := range want.Header {
		if g, w := strings.Join(got.Header.Values(k), ","), strings.Join(want.Header.Values(k), ","); g != w {
			t.Errorf("header %s: client %q, sdk %q", k, g, w)
		}
	}
	if len(got.Header) != len(want.Header) {
		t.Errorf("headers: client %v, sdk %v", got.Header, want.Header)
	}
	return true
}

// SentOnEach runs send for every case on every lane (a base URL), each in
// a parallel subtest named case/lane, and fails the subtests where send
// reports that nothing was sent.
func SentOnEach(t *testing.T, cases map[string]model.Request, lanes []string, send func(t testing.TB, lane string, req model.Request) bool) {
	t.Helper()
	for name, req := range cases {
		for _, lane := range lanes {
			t.Run(name+"/"+lane, func(t *testing.T) {
				t.Parallel()
				if !send(t, lane, req) {
					t.Error("not sent")
				}
			})
		}
	}
}

// EncodingRequest is the base request of the equivalence tests for
// modelName: the suite's basic request with a system block that is empty
// and one full of characters to escape.
func EncodingRequest(modelName string) model.Request {
	r := Wire{Model: modelName}.Request()
	r.System = []string{"You are Delta.", "", "Workspace: /tmp/ws <&> \u2028."}
	return r
}

// EncodingCases are the requests every wire's encoder must send exactly as
// its SDK did, each a change to a fresh base(). A wire adds its own cases
// (its history, its stored state, its effort mapping) and may replace one.
func EncodingCases(base func() model.Request) map[string]model.Request {
	with := func(f func(r *model.Request)) model.Request {
		r := base()
		f(&r)
		return r
	}
	schema := func(s string) model.Request {
		return with(func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(s) })
	}
	return map[string]model.Request{
		"basic":              base(),
		"no system no tools": with(func(r *model.Request) { r.System, r.Tools = nil, nil }),
		"strings to escape": with(func(r *model.Request) {
			r.Messages[0].Content = "quote \" backslash \\ tab \t nl \n cr \r bs \b ff \f nul \x00 us \x1f del \x7f html <b>&amp;</b> ls \u2028 ps \u2029 bad \xff\xfe utf8 é 日本 🎉"
		}),
		"images": with(func(r *model.Request) {
			r.Messages = append(r.Messages, model.Message{Role: model.RoleUser, Content: "<delta:images/>", Images: []model.Image{
				{MIME: "image/png", Data: PNG}, {MIME: "", Data: []byte("no mime")}, {MIME: "image/jpeg", Data: nil}}})
		}),
		"images without text": with(func(r *model.Request) {
			r.Messages = append(r.Messages, model.Message{Role: model.RoleUser, Images: []model.Image{{MIME: "image/gif", Data: PNG}}})
		}),
		"schema absent":         with(func(r *model.Request) { r.Tools[0].Parameters = nil }),
		"schema empty":          schema(`{}`),
		"schema spaced":         schema("{ \"type\" : \"object\",\n \"properties\" : { \"a\" : { \"type\" : \"string\", \"description\": \"<b> & c\" } },\n \"required\" : [ \"a\" ] }"),
		"schema duplicate keys": schema(`{"properties":{"a":{}},"properties":{"b":{}}}`),
		"description empty":     with(func(r *model.Request) { r.Tools[0].Description = "" }),
		"assistant empty":       with(func(r *model.Request) { r.Messages = append(r.Messages, model.Message{Role: model.RoleAssistant}) }),
		"system in history": with(func(r *model.Request) {
			r.Messages = append(r.Messages, model.Message{Role: model.RoleSystem, Content: ""})
		}),
		"many tools": with(func(r *model.Request) {
			for i := range 5 {
				r.Tools = append(r.Tools, model.ToolSpec{Name: fmt.Sprintf("tool_%d", i), Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer","minimum":0}}}`)})
			}
		}),
	}
}

// Fuzz is what an encoder fuzz target draws: Text goes everywhere a string
// goes, Args is the one tool call's arguments, Stored its message's Extra,
// Schema the one tool's parameters. Flags&4 adds a user message with an
// image whose MIME is Text, Flags&8 a system message at the end of the
// history.
type Fuzz struct {
	Model, CallID                      string
	Text, Args, Stored, Schema, Effort string
	Flags                              uint8
}

// Request builds the fuzzed request: a user turn, an assistant tool call,
// its result and a harness block.
func (f Fuzz) Request() model.Request {
	req := model.Request{
		Model:           f.Model,
		System:          []string{"spine", f.Text},
		ReasoningEffort: f.Effort,
		Messages: []model.Message{
			{Role: model.RoleUser, Content: f.Text},
			{Role: model.RoleAssistant, Content: f.Text, ToolCalls: []model.ToolCall{{ID: f.CallID, Name: "tool", Arguments: json.RawMessage(f.Args)}}, Extra: json.RawMessage(f.Stored)},
			{Role: model.RoleTool, ToolCallID: f.CallID, Content: f.Text},
			{Role: model.RoleUser, Content: "<delta:turn/>"},
		},
		Tools: []model.ToolSpec{{Name: "tool", Description: f.Text, Parameters: json.RawMessage(f.Schema)}},
	}
	if f.Flags&4 != 0 {
		req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: f.Text, Images: []model.Image{{MIME: f.Text, Data: []byte(f.Args)}}})
	}
	if f.Flags&8 != 0 {
		req.Messages = append(req.Messages, model.Message{Role: model.RoleSystem, Content: f.Text})
	}
	return req
}

// WireRecorder is a loopback server that keeps the last request as it
// arrived: the request line, the Host, every header in name order and the
// body (httputil.DumpRequest). It answers 400 with an OpenAI error body,
// so a caller fails at once instead of waiting for a stream.
type WireRecorder struct {
	URL  string
	mu   sync.Mutex
	last []byte
}

// NewWireRecorder starts a WireRecorder, closed when t ends.
func NewWireRecorder(t testing.TB) *WireRecorder {
	t.Helper()
	r := &WireRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		dump, err := httputil.DumpRequest(req, true)
		if err != nil {
			dump = []byte("dump: " + err.Error())
		}
		r.mu.Lock()
		r.last = dump
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"recorded","type":"invalid_request_error","code":"recorded"}}`))
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Take returns the last request recorded and forgets it; nil when none
// arrived since the last Take.
func (r *WireRecorder) Take() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.last
	r.last = nil
	return last
}

// CheckSameWire fails t unless the client (got) and the SDK (want) put
// the same request on the wire, request line, headers and body, byte for
// byte; it names the first line that differs.
func CheckSameWire(t testing.TB, got, want []byte) {
	t.Helper()
	if got == nil || want == nil {
		t.Fatalf("a request never arrived: client %v, sdk %v", got != nil, want != nil)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\r\n"), strings.Split(string(want), "\r\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("requests differ at line %d\nclient: %q\nsdk:    %q\n\nclient:\n%s\nsdk:\n%s", i+1, gl, wl, got, want)
		}
	}
}
