package recall_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// session starts a run in a new session whose history is msgs.
func session(t testing.TB, s *store.Store, runID, sessionID string, msgs []model.Message) {
	t.Helper()
	ctx := context.Background()
	if _, _, _, err := s.CreateRun(ctx, store.NewRun{ID: runID, SessionID: sessionID, Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Start(ctx, runID, msgs); err != nil {
		t.Fatal(err)
	}
}
