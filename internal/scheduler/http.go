package scheduler

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/schedule"
	"github.com/deltaharness/delta/internal/store"
)

// principalMaxBytes bounds the owner and agent headers, as the daemon
// bounds x-delta-user.
const principalMaxBytes = 256

// Handler is the REST surface: /v1/schedules and /healthz.
func (s *Scheduler) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && r.Method == http.MethodGet {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
			return
		}
		id, isItem := strings.CutPrefix(r.URL.Path, schedule.Path+"/")
		if r.URL.Path != schedule.Path && (!isItem || id == "" || strings.Contains(id, "/")) {
			s.fail(w, http.StatusNotFound, "no route %s %s; the routes are POST and GET %s, GET and DELETE %s/{id}", r.Method, r.URL.Path, schedule.Path, schedule.Path)
			return
		}
		if !s.authorized(r) {
			s.fail(w, http.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <DELTA_CONTROL_TOKEN>")
			return
		}
		owner, agent, err := principal(r)
		if err != nil {
			s.fail(w, http.StatusBadRequest, "%v", err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, DefaultMaxBody)
		switch {
		case !isItem && r.Method == http.MethodPost:
			s.create(w, r, owner, agent)
		case !isItem && r.Method == http.MethodGet:
			s.list(w, r, owner, agent)
		case isItem && r.Method == http.MethodGet:
			s.get(w, r, id, owner, agent)
		case isItem && r.Method == http.MethodDelete:
			s.cancelOne(w, r, id, owner, agent)
		default:
			w.Header().Set("Allow", map[bool]string{false: "GET, POST", true: "GET, DELETE"}[isItem])
			s.fail(w, http.StatusMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path)
		}
	})
}

func (s *Scheduler) authorized(r *http.Request) bool {
	if s.o.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	g, want := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(s.o.Token))
	return subtle.ConstantTimeCompare(g[:], want[:]) == 1
}

func principal(r *http.Request) (owner, agent string, err error) {
	owner = strings.TrimSpace(r.Header.Get(schedule.HeaderUser))
	agent = strings.TrimSpace(r.Header.Get(schedule.HeaderAgent))
	for name, v := range map[string]string{schedule.HeaderUser: owner, schedule.HeaderAgent: agent} {
		if len(v) > principalMaxBytes || !utf8.ValidString(v) {
			return "", "", fmt.Errorf("%s must be valid UTF-8 of at most %d bytes", name, principalMaxBytes)
		}
	}
	return owner, agent, nil
}

func (s *Scheduler) create(w http.ResponseWriter, r *http.Request, owner, agent string) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.fail(w, http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", DefaultMaxBody)
			return
		}
		s.fail(w, http.StatusBadRequest, "could not read the body")
		return
	}
	c, err := DecodeCreate(raw)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	created := s.o.Now().UTC().Truncate(time.Second)
	p, err := c.Compile(created)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	mine, err := s.st.OwnedSchedules(r.Context(), owner, agent)
	if err != nil {
		s.internal(w, err)
		return
	}
	active := 0
	for _, m := range mine {
		if m.Status == schedule.StatusActive {
			active++
		}
	}
	if active >= maxOwnedPerAgent {
		s.fail(w, http.StatusConflict, "this owner and agent already have %d active schedules; cancel some first", active)
		return
	}
	row := store.ScheduleRow{
		ID: newID(), Owner: owner, Agent: agent, Kind: string(c.Kind), At: c.At, EverySeconds: c.EverySeconds, Cron: strings.TrimSpace(c.Cron),
		Timezone: c.Timezone, Input: c.Input, PreviousResponseID: c.PreviousResponseID, Session: c.SessionID,
		Status: schedule.StatusActive, NextFireAt: p.Next(created), CreatedAt: created,
	}
	if row.NextFireAt.IsZero() {
		s.fail(w, http.StatusBadRequest, "the schedule never fires: check the cron expression's day and month (e.g. 30 2 is never a date)")
		return
	}
	if err := s.st.CreateSchedule(r.Context(), row); err != nil {
		s.internal(w, err)
		return
	}
	s.o.Logger.Info("schedule created", "schedule", row.ID, "kind", row.Kind, "next", row.NextFireAt)
	writeJSON(w, http.StatusCreated, view(row))
}

// DecodeCreate reads a POST /v1/schedules body strictly: a JSON object
// with only the documented fields, and a non-empty input of at most
// schedule.MaxInputBytes. The spec itself is checked by Compile.
func DecodeCreate(raw []byte) (schedule.Create, error) {
	var c schedule.Create
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return c, errors.New("the body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("the body is not a valid schedule: %v", err)
	}
	if dec.More() {
		return c, errors.New("the body has data after the JSON object")
	}
	if err := c.CheckInput(); err != nil {
		return c, err
	}
	return c, nil
}

func (s *Scheduler) list(w http.ResponseWriter, r *http.Request, owner, agent string) {
	rows, err := s.st.OwnedSchedules(r.Context(), owner, agent)
	if err != nil {
		s.internal(w, err)
		return
	}
	out := schedule.List{Object: "list", Data: []schedule.Schedule{}}
	for _, row := range rows {
		out.Data = append(out.Data, view(row))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Scheduler) get(w http.ResponseWriter, r *http.Request, id, owner, agent string) {
	row, err := s.st.OwnedSchedule(r.Context(), id, owner, agent)
	if s.notFound(w, id, err) {
		return
	}
	writeJSON(w, http.StatusOK, view(row))
}

func (s *Scheduler) cancelOne(w http.ResponseWriter, r *http.Request, id, owner, agent string) {
	row, err := s.st.CancelSchedule(r.Context(), id, owner, agent, s.o.Now())
	if s.notFound(w, id, err) {
		return
	}
	s.o.Logger.Info("schedule cancelled", "schedule", id)
	writeJSON(w, http.StatusOK, view(row))
}

// notFound answers a failed read and reports whether it did.
func (s *Scheduler) notFound(w http.ResponseWriter, id string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, store.ErrNotFound):
		s.fail(w, http.StatusNotFound, "no schedule %s for this owner and agent; list them with GET %s", id, schedule.Path)
	default:
		s.internal(w, err)
	}
	return true
}

func (s *Scheduler) internal(w http.ResponseWriter, err error) {
	s.o.Logger.Error("scheduler request failed", "err", err)
	s.fail(w, http.StatusServiceUnavailable, "the scheduler's database is unavailable; try again")
}

func (s *Scheduler) fail(w http.ResponseWriter, status int, format string, a ...any) {
	var b schedule.ErrorBody
	b.Error.Message = fmt.Sprintf(format, a...)
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do about it
}
