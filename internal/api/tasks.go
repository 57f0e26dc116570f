package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// taskView is the body of GET /v1/tasks/{id}.
type taskView struct {
	ID         string          `json:"id"`
	Object     string          `json:"object"`
	Status     string          `json:"status"`
	SessionID  string          `json:"session_id"`
	CreatedAt  *string         `json:"created_at"`
	StartedAt  *string         `json:"started_at"`
	FinishedAt *string         `json:"finished_at"`
	Error      *string         `json:"error"`
	Result     json.RawMessage `json:"result"`
}

func stamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return &s
}

func viewOf(r store.Run) taskView {
	v := taskView{ID: r.ID, Object: "task", Status: r.Status, SessionID: r.SessionID,
		CreatedAt: stamp(r.CreatedAt), StartedAt: stamp(r.StartedAt), FinishedAt: stamp(r.FinishedAt), Result: json.RawMessage("null")}
	if store.Terminal(r.Status) {
		if len(r.Result) > 0 {
			v.Result = r.Result
		}
		if r.Status != store.StatusDone && r.Error != "" {
			e := r.Error
			v.Error = &e
		}
	}
	return v
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	sub, _, err := s.submission(r)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	run, err := s.o.Service.Submit(r.Context(), sub)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	crashpoint.Hit(crashpoint.BeforeAck)
	// Acknowledged only now: the run row is committed.
	writeJSON(w, http.StatusAccepted, map[string]any{"id": run.ID, "object": "task", "status": run.Status, "session_id": run.SessionID})
	if crashpoint.Enabled {
		_ = http.NewResponseController(w).Flush() // the after-ack point needs the 202 on the wire before it exits
	}
	crashpoint.Hit(crashpoint.AfterAck)
}

// readable is the owner a read is scoped to. With DELTA_STRICT_TENANT an
// unowned run is unreachable, like an unknown one.
func (s *Server) readable(r *http.Request) (string, error) {
	o, err := owner(r)
	if err != nil {
		return "", err
	}
	if s.o.StrictTenant && o == "" {
		return "", fmt.Errorf("strict tenancy without an owner: %w", store.ErrNotFound)
	}
	return o, nil
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) { s.taskAction(w, r, s.o.Service.Get) }

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) {
	s.taskAction(w, r, s.o.Service.Cancel)
}

// taskAction runs an owner-scoped action on the task named in the path and
// answers with its view.
func (s *Server) taskAction(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, owner, id string) (store.Run, error)) {
	o, err := s.readable(r)
	if err == nil {
		var run store.Run
		if run, err = act(r.Context(), o, r.PathValue("id")); err == nil {
			writeJSON(w, http.StatusOK, viewOf(run))
			return
		}
	}
	writeError(w, s.o.Logger, err)
}

func (s *Server) busy(w http.ResponseWriter, r *http.Request) {
	running, queued, err := s.o.Service.Busy(r.Context())
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"busy": running+queued > 0, "running": running, "queued": queued})
}

// pageParams reads ?since= and ?limit= (default 200, max 500).
func pageParams(r *http.Request) (since int64, limit int, err error) {
	q := r.URL.Query()
	if v := q.Get("since"); v != "" {
		since, err = strconv.ParseInt(v, 10, 64)
		if err != nil || since < 0 {
			return 0, 0, badRequest("since must be a non-negative event id")
		}
	}
	limit = 200
	if v := q.Get("limit"); v != "" {
		limit, err = strconv.Atoi(v)
		if err != nil || limit < 1 {
			return 0, 0, badRequest("limit must be a positive integer (at most 500)")
		}
		limit = min(limit, 500)
	}
	return since, limit, nil
}

// taskEvents is a JSON page with ?since=, otherwise an SSE stream: the
// run's stored events in id order (after Last-Event-ID when the client
// sends one, as an EventSource does when it reconnects), then its live
// ones, ending with a done frame after run.finished. A client that falls
// 2,048 frames behind gets an error frame naming the ?since= that resumes
// it, then the stream closes.
func (s *Server) taskEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	o, err := s.readable(r)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	if r.URL.Query().Has("since") || r.URL.Query().Has("limit") {
		since, limit, err := pageParams(r)
		if err != nil {
			writeError(w, s.o.Logger, err)
			return
		}
		page, err := s.o.Service.Events(r.Context(), o, id, since, limit)
		if err != nil {
			writeError(w, s.o.Logger, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"events": page.Events, "cursor": page.Cursor, "done": page.Done})
		return
	}
	after, err := lastEventID(r)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	coarse := r.URL.Query().Get("coarse") == "1"
	// Subscribed before the table is read, so an event committed after
	// the read arrives live; one both read and received is sent once.
	run, live, err := s.o.Service.Follow(r.Context(), o, id, 2048, func(e event.Event) bool { return !(coarse && e.Ephemeral()) })
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	defer live.Close()
	sse := newSSE(w)
	done := func() {
		if cur, err := s.o.Service.Get(r.Context(), o, id); err == nil {
			sse.send("done", viewOf(cur))
		}
	}
	last := after
	for {
		page, err := s.o.Service.Events(r.Context(), o, id, last, 500)
		if err != nil {
			return
		}
		for _, e := range page.Events {
			sse.sendID(e.ID, e.Name, e)
			last = e.ID
			if e.Terminal() {
				done()
				return
			}
		}
		if len(page.Events) < 500 {
			break
		}
	}
	if store.Terminal(run.Status) {
		// Terminal before the replay, and its end was not among the
		// events after Last-Event-ID: the client has it already.
		done()
		return
	}
	// Events are published after their commit by the goroutine that made
	// them, so live ids can arrive out of order: skip only what the replay
	// already sent, never an id below the newest one sent live.
	replayed := last
	dropped := s.follow(r.Context(), sse, live, func(e event.Event) bool {
		if e.ID != 0 && e.ID <= replayed {
			return true // already replayed
		}
		sse.sendID(e.ID, e.Name, e)
		last = max(last, e.ID)
		if e.Terminal() {
			done()
			return false
		}
		return true
	})
	if dropped {
		sse.fellBehind("/v1/tasks/"+id+"/events", last)
	}
}

// lastEventID is the Last-Event-ID an SSE client sends when it reconnects:
// the stream resumes after that durable event id (0 when absent).
func lastEventID(r *http.Request) (int64, error) {
	v := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("Last-Event-ID must be a non-negative event id")
	}
	return n, nil
}

// devStream replays stored events after ?since= (or, without it, after
// Last-Event-ID; filtered by ?run= and ?session=), then follows live unless
// live=0. A client that falls 2,048
// frames behind gets an error frame naming the ?since= that resumes it,
// then the stream closes.
func (s *Server) devStream(w http.ResponseWriter, r *http.Request) {
	since, _, err := pageParams(r)
	if err == nil && !r.URL.Query().Has("since") {
		since, err = lastEventID(r)
	}
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	q := r.URL.Query()
	runID, sessionID := q.Get("run"), q.Get("session")
	live := q.Get("live") != "0" && !strings.EqualFold(q.Get("live"), "false")
	var sub *engine.Live
	if live {
		sub = s.o.Service.InspectFollow(2048, func(e event.Event) bool {
			return (runID == "" || e.RunID == runID) && (sessionID == "" || e.SessionID == sessionID)
		})
		defer sub.Close()
	}
	sse := newSSE(w)
	last := since
	for {
		evs, err := s.o.Service.InspectEvents(r.Context(), store.EventFilter{RunID: runID, SessionID: sessionID, Since: last, Limit: 500})
		if err != nil {
			return
		}
		for _, e := range evs {
			sse.sendID(e.ID, e.Name, e)
			last = e.ID
		}
		if len(evs) < 500 {
			break
		}
	}
	if !live {
		return
	}
	// Events are published after their commit by the goroutine that made
	// them, so live ids can arrive out of order: skip only what the replay
	// already sent, never an id below the newest one sent live.
	replayed := last
	dropped := s.follow(r.Context(), sse, sub, func(e event.Event) bool {
		if e.ID != 0 && e.ID <= replayed {
			return true // already replayed
		}
		sse.sendID(e.ID, e.Name, s.o.Service.InspectEvent(e))
		last = max(last, e.ID)
		return true
	})
	if dropped {
		sse.fellBehind("/v1/dev/stream", last)
	}
}
