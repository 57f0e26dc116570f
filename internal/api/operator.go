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
	me := owner(r)
	if s.o.StrictTenant && me == "" {
		writeError(w, s.o.Logger, &requestError{status: http.StatusUnauthorized, msg: "x-delta-user is required (DELTA_STRICT_TENANT=1)"})
		return
	}
	var rows []queueRow
	now := time.Now()
	pos := 0
	runs, err := s.o.Service.Store.LiveRuns(r.Context())
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	for _, run := range runs {
		mine := me != "" && run.Owner == me || me == "" && run.Owner == "" && !s.o.StrictTenant
		if s.o.StrictTenant && !mine {
			continue // strict: positions are numbered among the caller's own rows only
		}
		pos++
		row := queueRow{Status: run.Status, Position: pos, AgeSeconds: now.Sub(run.CreatedAt).Seconds(), Mine: mine}
		if mine {
			row.ID, row.SessionID = run.ID, run.SessionID
		}
		rows = append(rows, row)
	}
	if rows == nil {
		rows = []queueRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": rows})
}

// devRun is GET /v1/dev/runs/{id}: the run's full record for an operator.
func (s *Server) devRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.o.Service.Store.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	v := viewOf(run)
	writeJSON(w, http.StatusOK, map[string]any{
		"task": v, "owner": run.Owner, "previous_response_id": run.PreviousID, "model": run.Model,
		"steps": run.Steps, "attempts": run.Attempts,
		"usage": map[string]any{"input_tokens": run.Usage.InputTokens, "output_tokens": run.Usage.OutputTokens,
			"cache_read_tokens": run.Usage.CacheReadTokens, "cache_write_tokens": run.Usage.CacheWriteTokens, "cost_usd": run.Usage.CostUSD},
		"request": run.Request,
	})
}
