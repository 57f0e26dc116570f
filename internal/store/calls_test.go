package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// A captured call commits with its step or not at all: a step refused
// because the run already finished leaves no call row, and a committed one
// carries the step number it was checkpointed as.
func TestCallCommitsWithItsStep(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	startRun(t, s, "resp_1", "sess_1", "go")
	step := func() store.Step {
		return store.Step{RunID: "resp_1", SessionID: "sess_1", Model: "m",
			Message: model.Message{Role: model.RoleAssistant, Content: "ok"},
			Usage:   model.Usage{InputTokens: 10, OutputTokens: 2},
			Call: &store.Call{Turn: 1, Model: "m", Provider: "p", Request: json.RawMessage(`{"system":["s"]}`),
				Response: json.RawMessage(`{"text":"ok"}`), Usage: model.Usage{InputTokens: 10, OutputTokens: 2}, LatencyMS: 7}}
	}
	if _, err := s.CommitStep(ctx, step()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "resp_1", store.StatusDone, json.RawMessage(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitStep(ctx, step()); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("step after finish = %v, want ErrAlreadyFinal", err)
	}
	calls, err := s.Calls(ctx, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Step != 1 || calls[0].LatencyMS != 7 || string(calls[0].Request) != `{"system":["s"]}` || calls[0].Usage.InputTokens != 10 {
		t.Fatalf("calls = %+v, want the one committed step's call", calls)
	}
	rows, more, err := s.ListRuns(ctx, store.RunFilter{})
	if err != nil || more || len(rows) != 1 || rows[0].Calls != 1 {
		t.Fatalf("ListRuns = %+v %v %v, want one run with one call", rows, more, err)
	}
}

// FirstEventOf names where the runs' timelines begin: the oldest event of
// any of them, not of other runs, 0 for runs with none.
func TestFirstEventOf(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	for _, id := range []string{"resp_old", "resp_a", "resp_b"} {
		if err := s.AddEvents(ctx, []event.Event{event.New(id, "s_"+id, event.ModelRetry, nil)}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Events(ctx, store.EventFilter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("events = %v, %v", all, err)
	}
	if id, err := s.FirstEventOf(ctx, []string{"resp_b", "resp_a"}); err != nil || id != all[1].ID {
		t.Errorf("FirstEventOf(b, a) = %d, %v; want %d (resp_a's)", id, err, all[1].ID)
	}
	if id, err := s.FirstEventOf(ctx, []string{"resp_none"}); err != nil || id != 0 {
		t.Errorf("FirstEventOf(none) = %d, %v; want 0", id, err)
	}
	if id, err := s.FirstEventOf(ctx, nil); err != nil || id != 0 {
		t.Errorf("FirstEventOf() = %d, %v; want 0", id, err)
	}
}
