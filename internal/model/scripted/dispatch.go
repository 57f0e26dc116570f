package scripted

import (
	"io"
	"net/http"
	"time"
)

// wire is what differs between the wires the fake speaks, for the request
// steps they share (read, decode, record, authenticate, hold, script).
type wire struct {
	decode   func(body []byte) (ChatRequest, error)
	authOK   func(h http.Header, key string) bool
	authFail func(h http.Header) string // the 401 message
	writeErr func(w http.ResponseWriter, status int, msg string)
	overflow func(w http.ResponseWriter) // the wire's context-window refusal
}

// dispatch runs the shared steps. ok is false when the reply has already
// been written (an error) or the request was dropped (Close, client gone).
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, wr wire) (req ChatRequest, rep Reply, seq string, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		wr.writeErr(w, http.StatusRequestEntityTooLarge, "read request body: "+err.Error())
		return req, rep, "", false
	}
	req, decodeErr := wr.decode(body)
	var recorded *ChatRequest
	if decodeErr == nil {
		req.Path = r.URL.Path
		req.Header = r.Header.Clone()
		recorded = &req
	}
	hold, key, id := s.record(recorded)
	seq = id[len("chatcmpl-modeltest-"):]
	if key != "" && !wr.authOK(r.Header, key) {
		wr.writeErr(w, http.StatusUnauthorized, wr.authFail(r.Header))
		return req, rep, "", false
	}
	if decodeErr != nil {
		wr.writeErr(w, http.StatusBadRequest, decodeErr.Error())
		return req, rep, "", false
	}
	if hold != nil {
		select {
		case <-hold:
		case <-s.done:
			return req, rep, "", false
		case <-r.Context().Done():
			return req, rep, "", false
		}
	}
	rep, err = s.run(req)
	if err != nil {
		wr.writeErr(w, http.StatusInternalServerError, err.Error())
		return req, rep, "", false
	}
	if rep.Overflow {
		wr.overflow(w)
		return req, rep, "", false
	}
	if rep.Status != 0 {
		wr.writeErr(w, rep.Status, rep.Message)
		return req, rep, "", false
	}
	return req, rep, seq, true
}

// sseWriter writes named server-sent events and flushes each one.
type sseWriter struct {
	w       http.ResponseWriter
	r       *http.Request
	flusher http.Flusher
}

func startSSE(w http.ResponseWriter, r *http.Request) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, r: r, flusher: f}
}

// events writes each (name, data) pair in order, honouring the reply's
// EndEarly, Abort and ChunkDelay: a cut reply stops halfway through the
// content events (those between the first and the last two), after at
// least one.
func (s *sseWriter) events(rep reply, names []string, data [][]byte) {
	cut := -1
	if rep.EndEarly || rep.Abort {
		content := len(data) - 3
		cut = 1 + min(max(content, 1), max(1, content/2))
	}
	for i := range data {
		if i == cut {
			if rep.Abort {
				panic(http.ErrAbortHandler) // drop the connection without the terminating chunk
			}
			return
		}
		if rep.ChunkDelay > 0 && !sleepCtx(s.r, rep) {
			return
		}
		if _, err := s.w.Write([]byte("event: " + names[i] + "\ndata: " + string(data[i]) + "\n\n")); err != nil {
			return
		}
		if s.flusher != nil {
			s.flusher.Flush()
		}
	}
}

// sleepCtx waits the reply's chunk delay; false when the client went away.
func sleepCtx(r *http.Request, rep reply) bool {
	t := time.NewTimer(rep.ChunkDelay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
