package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/queue"
)

// stalledWriter is a client that stops reading: its first body write blocks
// until release is closed. flushed closes at the first flush (the handler
// has subscribed and sent its headers), stalled when that write blocks.
type stalledWriter struct {
	h                    http.Header
	flushed, stalled     chan struct{}
	release              chan struct{}
	flushOnce, stallOnce sync.Once
	mu                   sync.Mutex
	body                 bytes.Buffer
}

func newStalledWriter() *stalledWriter {
	return &stalledWriter{h: http.Header{}, flushed: make(chan struct{}), stalled: make(chan struct{}), release: make(chan struct{})}
}

func (w *stalledWriter) Header() http.Header { return w.h }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Flush()              { w.flushOnce.Do(func() { close(w.flushed) }) }
func (w *stalledWriter) Write(p []byte) (int, error) {
	w.stallOnce.Do(func() { close(w.stalled); <-w.release })
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(p)
}

// frame is one parsed SSE frame.
type frame struct {
	id, name, data string
}

func frames(t *testing.T, body string) []frame {
	t.Helper()
	var out []frame
	readFrames(strings.NewReader(body), func(f frame) { out = append(out, f) })
	return out
}

// readFrames parses an SSE body, handing on each frame that has a field
// (a keep-alive comment has none) until the body ends.
func readFrames(r io.Reader, emit func(frame)) {
	var f frame
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if f != (frame{}) {
				emit(f)
			}
			f = frame{}
		case strings.HasPrefix(line, "id: "):
			f.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			f.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			f.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// A stream that drops a client for reading too slowly ends with an error
// frame naming the ?since= that resumes after the last event it was sent,
// instead of closing silently.
func TestSlowStreamClientGetsAResumeFrame(t *testing.T) {
	st, broker, eng := echoEngine(t)
	// The queue is never opened: the run stays queued, so the stream follows it.
	q := queue.New(st, eng.ExecuteHead, 1, nil)
	h := api.New(api.Options{Service: engine.NewService(st, q, eng), Heartbeat: time.Hour})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/tasks", strings.NewReader(`{"input":"hi"}`)))
	var task map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &task); err != nil || rec.Code != http.StatusAccepted {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	id := task["id"].(string)

	for _, tt := range []struct{ name, path, resume string }{
		{"task events", "/v1/tasks/" + id + "/events", "/v1/tasks/" + id + "/events?since="},
		{"dev stream", "/v1/dev/stream?run=" + id, "/v1/dev/stream?since="},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newStalledWriter()
			req := httptest.NewRequest("GET", tt.path, nil)
			req.RemoteAddr = "127.0.0.1:4000" // the inspection gate serves loopback clients
			done := make(chan struct{})
			go func() { defer close(done); h.ServeHTTP(w, req) }()
			<-w.flushed
			const base = 1000 // above every stored event id, so the dev stream's replay skips none
			publish := func(i int64) {
				broker.Publish(event.Event{ID: base + i, RunID: id, Name: event.ToolResult, Time: time.Now()})
			}
			// Both streams replay the run's stored events first: the
			// replay's first write is the one that blocks.
			<-w.stalled
			// The handler holds at most one event while its write blocks; the
			// 2,048-event buffer overflows and the broker drops it.
			for i := int64(1); i <= 2100; i++ {
				publish(i)
			}
			close(w.release)
			<-done
			fs := frames(t, w.body.String())
			if len(fs) == 0 {
				t.Fatal("no frames")
			}
			last := fs[len(fs)-1]
			var lastID string
			for _, f := range fs[:len(fs)-1] {
				if f.id != "" {
					lastID = f.id
				}
			}
			var body struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
				Since int64 `json:"since"`
			}
			if last.name != "error" || json.Unmarshal([]byte(last.data), &body) != nil {
				t.Fatalf("last frame %+v, want an error frame", last)
			}
			if lastID == "" || !strings.Contains(body.Error.Message, tt.resume+lastID) || itoa(int(body.Since)) != lastID {
				t.Fatalf("error frame %s does not resume after the last id sent (%s)", last.data, lastID)
			}
		})
	}
}

// stream:true answers text/event-stream. An Accept header that refuses it
// is a 406 before anything runs; "application/json" alone, which the
// official OpenAI SDKs send on streaming requests too, still streams.
func TestStreamRespectsAccept(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	for _, tt := range []struct {
		name, accept string
		status       int
	}{
		{"html only", "text/html", http.StatusNotAcceptable},
		{"event-stream refused", "application/json, text/event-stream;q=0", http.StatusNotAcceptable},
		{"everything refused but json", "application/json, */*;q=0", http.StatusNotAcceptable},
		{"sdk default", "application/json", http.StatusOK},
		{"event-stream", "text/event-stream", http.StatusOK},
		{"any", "*/*", http.StatusOK},
		{"none", "", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", strings.NewReader(`{"input":"hi","stream":true}`))
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			status, header, body := roundTrip(t, req)
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, body, tt.status)
			}
			if tt.status == http.StatusOK {
				if ct := header.Get("Content-Type"); ct != "text/event-stream" || !strings.Contains(string(body), "response.completed") {
					t.Fatalf("content type %q body %q", ct, body)
				}
				return
			}
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil || !strings.Contains(errMessage(m), "text/event-stream") {
				t.Fatalf("406 body %q, want an error envelope naming text/event-stream", body)
			}
		})
	}
	// Nothing was queued for the refused requests: every run that exists finished.
	if s, m := do(t, "GET", srv.URL+"/v1/busy", ``, nil); s != 200 || m["queued"] != float64(0) {
		t.Fatalf("busy %d %v", s, m)
	}
}
