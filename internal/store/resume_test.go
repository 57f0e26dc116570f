package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// resumedEvents reads the run.resumed events of a run.
func resumedEvents(t *testing.T, s *store.Store, runID string) []event.Event {
	t.Helper()
	evs, err := s.Events(context.Background(), store.EventFilter{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Event
	for _, e := range evs {
		if e.Name == event.RunResumed {
			out = append(out, e)
		}
	}
	return out
}

func TestResumeRunsMarksRunningRowsOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	for _, id := range []string{"r1", "r2", "q1", "f1"} {
		newRun(t, s, store.NewRun{ID: id, SessionID: "s_" + id})
	}
	for _, id := range []string{"r1", "r2", "f1"} {
		if _, _, err := s.Start(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Finish(ctx, "f1", store.StatusDone, json.RawMessage(`{}`), ""); err != nil {
		t.Fatal(err)
	}

	evs, err := s.ResumeRuns(ctx, []string{"r1", "q1", "r2", "f1", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].RunID != "r1" || evs[1].RunID != "r2" {
		t.Fatalf("ResumeRuns events = %+v, want one each for r1 and r2 (queued, finished and unknown skipped)", evs)
	}
	for _, tt := range []struct {
		id       string
		status   string
		attempts int
		resumes  int
	}{
		{"r1", store.StatusRunning, 2, 1},
		{"r2", store.StatusRunning, 2, 1},
		{"q1", store.StatusQueued, 0, 0},
		{"f1", store.StatusDone, 1, 0},
	} {
		r, err := s.Run(ctx, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		got := resumedEvents(t, s, tt.id)
		if r.Status != tt.status || r.Attempts != tt.attempts || len(got) != tt.resumes {
			t.Errorf("%s: status %s attempts %d resumes %d, want %s %d %d", tt.id, r.Status, r.Attempts, len(got), tt.status, tt.attempts, tt.resumes)
		}
		if len(got) == 1 && string(got[0].Data) != `{"attempt":2}` {
			t.Errorf("%s: run.resumed data %s, want attempt 2", tt.id, got[0].Data)
		}
	}

	// Start hands out the marked resume: same event, nothing written.
	run, ev, err := s.Start(ctx, "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != evs[0].ID || ev.Name != event.RunResumed || run.Attempts != 2 || run.Status != store.StatusRunning {
		t.Fatalf("Start after ResumeRuns = event %d %s, attempts %d; want event %d, attempts 2", ev.ID, ev.Name, run.Attempts, evs[0].ID)
	}
	if n := len(resumedEvents(t, s, "r1")); n != 1 {
		t.Fatalf("r1 has %d run.resumed events after Start, want the one ResumeRuns wrote", n)
	}
	// The mark is used once: a later Start is a new attempt of its own.
	_, ev, err = s.Start(ctx, "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID <= evs[1].ID || string(ev.Data) != `{"attempt":3}` {
		t.Fatalf("second Start = event %d %s, want a new run.resumed with attempt 3", ev.ID, ev.Data)
	}
}

func TestResumeRunsStartSeesLaterChanges(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	for _, id := range []string{"c1", "f1"} {
		session(t, s, id, "s_"+id, nil)
	}
	if _, err := s.ResumeRuns(ctx, []string{"c1", "f1"}); err != nil {
		t.Fatal(err)
	}
	// A cancel request between the batch and the run's Start is seen.
	if err := s.RequestCancel(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	run, _, err := s.Start(ctx, "c1", nil)
	if err != nil || !run.CancelRequested {
		t.Fatalf("Start of c1 = cancel_requested %v, %v; want the cancel request", run.CancelRequested, err)
	}
	// A run finished in between is final, not handed out as resumed.
	if _, err := s.Finish(ctx, "f1", store.StatusCancelled, json.RawMessage(`{}`), "cancelled"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Start(ctx, "f1", nil); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("Start of a finished run = %v, want ErrAlreadyFinal", err)
	}
}

func TestResumeRunsEmptyAndCancelled(t *testing.T) {
	s, _ := open(t)
	if evs, err := s.ResumeRuns(context.Background(), nil); err != nil || len(evs) != 0 {
		t.Fatalf("ResumeRuns(nil) = %v, %v; want nothing", evs, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ResumeRuns(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("ResumeRuns with a cancelled context = %v, want context.Canceled", err)
	}
}
