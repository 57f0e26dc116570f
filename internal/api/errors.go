package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/deltaharness/delta/internal/store"
)

// requestError is a client mistake: its message is safe to show.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(msg string) error { return &requestError{status: http.StatusBadRequest, msg: msg} }

// writeError is the one place errors become HTTP answers. Client mistakes
// keep their message; anything else is logged and answered generically so
// internals never leak.
func writeError(w http.ResponseWriter, logger *slog.Logger, err error) {
	status, msg := http.StatusInternalServerError, "internal error"
	var re *requestError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &re):
		status, msg = re.status, re.msg
	case errors.As(err, &mbe):
		status, msg = http.StatusRequestEntityTooLarge, "request body is larger than the limit of "+itoa(mbe.Limit)+" bytes"
	case errors.Is(err, store.ErrUnknownPrevious):
		// An unknown previous_response_id never silently starts a new session.
		status, msg = http.StatusBadRequest, "previous_response_id does not name a known response"
	case errors.Is(err, store.ErrNotFound):
		status, msg = http.StatusNotFound, "not found"
	default:
		logger.Error("request failed", "err", err)
	}
	writeJSON(w, status, map[string]any{"error": map[string]string{"message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
