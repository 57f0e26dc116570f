package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// Every event the store writes for a run carries the run's owner and
// metadata.task_id, and run.finished (with the events written alongside
// it) the run's last turn.
func TestEventsCarryTheCorrelationSpine(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	req := json.RawMessage(`{"input":[],"metadata":{"task_id":42}}`)
	if _, _, _, err := s.CreateRun(ctx, store.NewRun{ID: "resp_s", SessionID: "sess_s", Owner: "alice", Request: req}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Start(ctx, "resp_s", []model.Message{{Role: model.RoleUser, Content: "hi"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitStep(ctx, store.Step{RunID: "resp_s", SessionID: "sess_s", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, Content: "done"}}); err != nil {
		t.Fatal(err)
	}
	fail := event.New("resp_s", "sess_s", event.Error, map[string]string{event.KeyErrorType: "model"})
	if _, err := s.Finish(ctx, "resp_s", store.StatusFailed, json.RawMessage(`{}`), "boom", fail); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, store.EventFilter{RunID: "resp_s"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Name)
		if e.Owner != "alice" || e.TaskID != "42" || e.SessionID != "sess_s" {
			t.Errorf("%s: owner %q task %q session %q", e.Name, e.Owner, e.TaskID, e.SessionID)
		}
		if e.Name == event.RunFinished && e.Turn != 1 {
			t.Errorf("run.finished turn %d, want 1", e.Turn)
		}
	}
	want := []string{event.RunQueued, event.RunStarted, event.Error, event.RunFinished}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}
