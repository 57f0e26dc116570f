// Package scripted is a model endpoint whose answers come from a Go
// function instead of a model: it speaks the three wires Delta's clients
// use — OpenAI Chat Completions, Anthropic Messages and OpenAI Responses —
// exactly, decoding requests as the real endpoints do and streaming replies
// as their server-sent events (or one JSON object when the request did not
// ask to stream).
//
// `delta demo` runs the whole harness against DemoScript on it, with no
// network and no key; tests use it (through model/modeltest) to drive the
// real wire clients end to end. It is never reachable by accident: it
// serves only after code calls Start, and it binds 127.0.0.1 only.
//
// Hooks for callers that watch it: Requests records every decoded request
// with its headers, Hold parks new requests (after recording them) until
// Release, WaitCalls blocks until a number of requests has arrived.
package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// maxBody bounds a request body; real endpoints refuse far smaller ones.
const maxBody = 32 << 20

// Server is a running fake endpoint. Its methods are safe for concurrent use.
type Server struct {
	script Script
	ln     net.Listener
	srv    *http.Server
	served chan struct{} // closed when Serve has returned
	done   chan struct{} // closed by Close; releases held requests

	closeOnce sync.Once
	mu        sync.Mutex
	reqs      []ChatRequest
	hold      chan struct{} // non-nil while held; closed by Release
	arrived   chan struct{} // closed and replaced on every recorded request
	seq       int
	calls     int    // decoded requests, kept or not
	forget    bool   // decoded requests are not kept (ForgetRequests)
	key       string // required bearer key; "" accepts any
}

// Start listens on a fresh 127.0.0.1 port and serves script until Close. A
// nil script answers "ok" to everything.
func Start(script Script) (*Server, error) {
	if script == nil {
		script = Sequence()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // serves until Close, not until a context ends
	if err != nil {
		return nil, fmt.Errorf("start fake model server: %w", err)
	}
	s := &Server{
		script:  script,
		ln:      ln,
		served:  make(chan struct{}),
		done:    make(chan struct{}),
		arrived: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/messages", s.handleAnthropic) // anthropic.go
	mux.HandleFunc("POST /messages", s.handleAnthropic)
	mux.HandleFunc("POST /v1/responses", s.handleResponses) // responses.go
	mux.HandleFunc("POST /responses", s.handleResponses)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // aborted replies are deliberate
	}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // returns ErrServerClosed after Close
	}()
	return s, nil
}

// URL is the base URL clients configure, ending in /v1.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops serving, releases held requests, drops open connections and
// waits for the listener goroutine. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		err = s.srv.Close()
		<-s.served
	})
	if err != nil {
		return fmt.Errorf("close fake model server: %w", err)
	}
	return nil
}

// RequireKey makes every later request whose Authorization header is not
// "Bearer "+key fail with 401, as a real endpoint does; "" accepts anything.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// ForgetRequests stops keeping decoded requests: the script still sees
// each one and Calls and WaitCalls still count them, but Requests returns
// only those kept before. A test of thousands of calls inspects them in
// its script instead of holding every body in memory.
func (s *Server) ForgetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget = true
}

// Requests returns every decoded request kept so far, in arrival order.
func (s *Server) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.reqs...)
}

// Calls is the number of decoded requests so far.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Hold parks every request that arrives from now on, after recording it,
// until Release, Close, or its client goes away.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold == nil {
		s.hold = make(chan struct{})
	}
}

// Release lets held requests proceed and stops holding new ones.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		close(s.hold)
		s.hold = nil
	}
}

// WaitCalls blocks until at least n requests have been recorded, or ctx ends.
func (s *Server) WaitCalls(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := s.calls, s.arrived
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for %d model calls (have %d): %w", n, got, ctx.Err())
		}
	}
}

// record stores req (when it decoded) and returns the hold channel in
// force, the key required, and a fresh completion id.
func (s *Server) record(req *ChatRequest) (hold chan struct{}, key, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if req != nil {
		s.calls++
		if !s.forget {
			s.reqs = append(s.reqs, *req)
		}
		close(s.arrived)
		s.arrived = make(chan struct{})
	}
	return s.hold, s.key, fmt.Sprintf("chatcmpl-modeltest-%d", s.seq)
}

// chatWire is the Chat Completions wire.
var chatWire = openAIWire(DecodeRequest)

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	req, rep, seq, ok := s.dispatch(w, r, chatWire)
	if !ok {
		return
	}
	res := resolve(req, rep, "chatcmpl-modeltest-"+seq)
	if req.Stream {
		writeSSE(w, r, res, req.IncludeUsage)
		return
	}
	writeJSON(w, http.StatusOK, res.completion(time.Now().Unix()))
}

// run calls the script, turning a panic into an error so one bad script
// fails its request instead of the test binary.
func (s *Server) run(req ChatRequest) (rep Reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("scripted model: script panicked: %v", p)
		}
	}()
	return s.script(req), nil
}

func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil,
	}})
}

// writeOpenAIOverflow is OpenAI's refusal of a prompt longer than the
// model's window, as both of its wires send it.
func writeOpenAIOverflow(w http.ResponseWriter) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
		"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. " +
			"Please reduce the length of the messages.",
		"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encode reply"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
