package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
)

// sseWriter writes Server-Sent Events frames and flushes each one.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &sseWriter{w: w, f: f}
	s.flush()
	return s
}

func (s *sseWriter) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// sendID writes one frame; id 0 omits the id line (ephemeral frames).
func (s *sseWriter) sendID(id int64, name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	if id > 0 {
		fmt.Fprintf(s.w, "id: %d\n", id)
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	s.flush()
}

func (s *sseWriter) send(name string, v any) { s.sendID(0, name, v) }

func (s *sseWriter) comment(text string) {
	fmt.Fprintf(s.w, ": %s\n\n", text)
	s.flush()
}

// follow hands each event arriving on live to on until on returns false,
// the client goes away, or the broker drops this subscriber for falling
// behind, which it reports as dropped. A comment goes out every heartbeat
// so idle proxies keep the stream open.
func (s *Server) follow(ctx context.Context, sse *sseWriter, live *engine.Live, on func(event.Event) bool) (dropped bool) {
	hb := time.NewTicker(s.o.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-hb.C:
			sse.comment("ping")
		case e, ok := <-live.C:
			if !ok {
				return true
			}
			if !on(e) {
				return false
			}
		}
	}
}

// fellBehind is the last frame of an event stream that dropped its client
// for reading too slowly: it names the query that resumes from the last
// durable event the client was sent, so nothing stored is lost.
func (sse *sseWriter) fellBehind(resume string, last int64) {
	msg := fmt.Sprintf("stream closed: this client read too slowly and fell behind; resume with %s?since=%d", resume, last)
	sse.send("error", map[string]any{"error": map[string]string{"message": msg}, "since": last})
}
