package api

import (
	"net/http"
	"time"
)

// queueRow is one line of GET /v1/queue. The caller's own rows carry their
// ids; everyone else's show only status, position and age.
type queueRow struct {
	ID         string  `json:"id,omitempty"`
	SessionID  string  `json:"session_id,omitempty"`
	Status     string  `json:"status"`
	Position   int     `json:"position"`
	AgeSeconds float64 `json:"age_seconds"`
	Mine       bool    `json:"mine"`
}

func (s *Server) queue(w http.ResponseWriter, r *http.Request) {
	me, err := owner(r)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	if s.o.StrictTenant && me == "" {
		writeError(w, s.o.Logger, &requestError{status: http.StatusUnauthorized, msg: "x-delta-user is required (DELTA_STRICT_TENANT=1)"})
		return
	}
	entries, err := s.o.Service.Queue(r.Context(), me, s.o.StrictTenant)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	now := time.Now()
	rows := make([]queueRow, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, queueRow{ID: e.ID, SessionID: e.SessionID, Status: e.Status, Position: e.Position,
			AgeSeconds: now.Sub(e.CreatedAt).Seconds(), Mine: e.Mine})
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": rows})
}
