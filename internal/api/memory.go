package api

import (
	"net/http"
)

// memoryRowsListed is how many governed memory rows the inspection list
// shows (the cap per identity times a few identities is the usual table).
const memoryRowsListed = 500

// devMemory is GET /v1/dev/memory: governed memory rows, newest
// confirmation first, each with its identity, kind, confidence, whether it
// is held, and its provenance (producing runs with their confidence and
// rubric).
func (s *Server) devMemory(w http.ResponseWriter, r *http.Request) {
	recs, err := s.o.Service.InspectMemories(r.Context(), memoryRowsListed)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	out := make([]map[string]any, 0, len(recs))
	for _, m := range recs {
		prov := make([]map[string]any, 0, len(m.Provenance))
		for _, p := range m.Provenance {
			prov = append(prov, map[string]any{"run_id": p.RunID, "confidence": p.Confidence, "rubric": p.Rubric,
				"untrusted": p.Untrusted, "created_at": stamp(p.Created)})
		}
		out = append(out, map[string]any{
			"id": m.ID, "namespace": m.Namespace, "agent_id": m.AgentID, "scope": m.Scope, "user_id": m.UserID,
			"task_type": m.TaskType, "kind": m.Kind, "content": m.Content, "aliases": m.Aliases, "confidence": m.Confidence,
			"rubric": m.Rubric, "untrusted": m.Untrusted, "held": m.Held(), "runs": m.Runs, "uses": m.Uses,
			"created_at": stamp(m.Created), "confirmed_at": stamp(m.Confirmed), "used_at": stamp(m.Used), "provenance": prov,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}
