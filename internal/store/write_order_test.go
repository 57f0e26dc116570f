package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// TestEventIDsCommitInOrderAcrossStores: six writers on two store handles
// of one database (two workers, on PostgreSQL) write events at once, in
// the run writes that hold the write lock shared (AddEvents, CreateRun,
// Start, Finish), while a reader pages the events by id as a live tail
// does, each page after the highest id it has seen. When the writers are
// done, every event in the table was on one of the reader's pages: none
// committed after the reader had passed its id.
func TestEventIDsCommitInOrderAcrossStores(t *testing.T) {
	ctx := context.Background()
	s1, dsn := open(t)
	s2 := openAgain(t, dsn)
	const writers, rounds = 6, 25
	var wg sync.WaitGroup
	var writing atomic.Int32
	writing.Store(writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer writing.Add(-1)
			s := []*store.Store{s1, s2}[w%2]
			for i := range rounds {
				if t.Failed() {
					return
				}
				evs := make([]event.Event, 1+i%3)
				for j := range evs {
					evs[j] = event.New("", "", "test.tick", map[string]int{"writer": w, "round": i, "n": j})
				}
				if err := s.AddEvents(ctx, evs); err != nil {
					t.Error(err)
					return
				}
				id := fmt.Sprintf("r%d_%d", w, i)
				if _, _, _, err := s.CreateRun(ctx, store.NewRun{ID: id, SessionID: "s" + id, Request: []byte(`{}`)}); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := s.Start(ctx, id, []model.Message{{Role: model.RoleUser, Content: "hi"}}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Finish(ctx, id, store.StatusDone, nil, "", event.New(id, "s"+id, "test.extra", nil)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	seen := map[int64]bool{}
	var cursor int64
	page := func() int {
		evs, err := s1.Events(ctx, store.EventFilter{Since: cursor, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.ID <= cursor {
				t.Fatalf("page after %d holds event %d", cursor, e.ID)
			}
			seen[e.ID] = true
			cursor = e.ID
		}
		return len(evs)
	}
	for writing.Load() > 0 {
		page()
	}
	wg.Wait()
	for page() > 0 {
	}
	var all []event.Event
	for {
		var from int64
		if len(all) > 0 {
			from = all[len(all)-1].ID
		}
		evs, err := s2.Events(ctx, store.EventFilter{Since: from, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		all = append(all, evs...)
	}
	// Each round writes its AddEvents batch, run.queued, run.started, the
	// extra event and run.finished.
	want := 0
	for i := range rounds {
		want += 1 + i%3 + 4
	}
	if want *= writers; len(all) != want {
		t.Fatalf("%d events stored, want %d", len(all), want)
	}
	var missed []int64
	for _, e := range all {
		if !seen[e.ID] {
			missed = append(missed, e.ID)
		}
	}
	if len(missed) > 0 {
		t.Fatalf("the reader paging by id never saw %d events that committed after it had passed their ids: %v", len(missed), missed)
	}
}

// TestLeaseGuardRefusesWritesOnceTheLeaseIsGone: a worker checks it holds
// the session (HoldsSession), then another worker takes the session over
// before the first one's checkpoint commits: the checkpoint, made under
// WithSessionLease, is refused with ErrSessionLeaseLost and writes
// nothing, nor does the terminal write; the new holder's writes pass. A
// lease that merely expired refuses the same way.
func TestLeaseGuardRefusesWritesOnceTheLeaseIsGone(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	newRun(t, s, store.NewRun{ID: "r1", SessionID: "s1"})
	now := time.Now()
	if err := s.AcquireSession(ctx, "s1", "w1", time.Hour, now); err != nil {
		t.Fatal(err)
	}
	w1 := store.WithSessionLease(ctx, "s1", "w1")
	if _, _, err := s.Start(w1, "r1", []model.Message{{Role: model.RoleUser, Content: "go"}}); err != nil {
		t.Fatalf("start under a live lease: %v", err)
	}
	if held, err := s.HoldsSession(ctx, "s1", "w1", time.Now()); err != nil || !held {
		t.Fatalf("HoldsSession(w1) = %v, %v; want true", held, err)
	}
	// w1 stalls past its TTL (as if partitioned); w2 takes the session over.
	if err := s.AcquireSession(ctx, "s1", "w2", time.Hour, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	before, err := s.Events(ctx, store.EventFilter{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	step := store.Step{RunID: "r1", SessionID: "s1", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, Content: "done"},
		Events:  []event.Event{event.New("r1", "s1", event.Checkpoint, nil)}}
	if _, err := s.CommitStep(w1, step); !errors.Is(err, store.ErrSessionLeaseLost) {
		t.Fatalf("checkpoint after the takeover: err = %v, want ErrSessionLeaseLost", err)
	}
	if _, err := s.Finish(w1, "r1", store.StatusDone, nil, ""); !errors.Is(err, store.ErrSessionLeaseLost) {
		t.Fatalf("finish after the takeover: err = %v, want ErrSessionLeaseLost", err)
	}
	r, err := s.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Events(ctx, store.EventFilter{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusRunning || r.Steps != 0 || len(after) != len(before) || len(msgs) != 1 {
		t.Fatalf("after the refused writes: status %s, %d steps, %d events (was %d), %d messages; want running, 0, unchanged, 1",
			r.Status, r.Steps, len(after), len(before), len(msgs))
	}
	w2 := store.WithSessionLease(ctx, "s1", "w2")
	if _, err := s.CommitStep(w2, step); err != nil {
		t.Fatalf("the new holder's checkpoint: %v", err)
	}
	if _, err := s.Finish(w2, "r1", store.StatusDone, nil, ""); err != nil {
		t.Fatalf("the new holder's finish: %v", err)
	}

	// Expired, not taken over: refused as well; no lease at all, too.
	newRun(t, s, store.NewRun{ID: "r2", SessionID: "s2"})
	if err := s.AcquireSession(ctx, "s2", "w1", time.Hour, now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Start(store.WithSessionLease(ctx, "s2", "w1"), "r2", nil); !errors.Is(err, store.ErrSessionLeaseLost) {
		t.Fatalf("start under an expired lease: err = %v, want ErrSessionLeaseLost", err)
	}
	newRun(t, s, store.NewRun{ID: "r3", SessionID: "s3"})
	if _, _, err := s.Start(store.WithSessionLease(ctx, "s3", "w1"), "r3", nil); !errors.Is(err, store.ErrSessionLeaseLost) {
		t.Fatalf("start with no lease: err = %v, want ErrSessionLeaseLost", err)
	}
	for _, id := range []string{"r2", "r3"} {
		if r, _ := s.Run(ctx, id); r.Status != store.StatusQueued {
			t.Fatalf("%s is %s after its refused start, want queued", id, r.Status)
		}
	}
}

// TestLeaseLiveUntilIsWhatTheWritesSaw: a context's lease guard reports
// the expiry its latest verifying write found (the lease held by the
// guard's holder), nothing before a write has verified it, and nothing
// from a write the lease refused.
func TestLeaseLiveUntilIsWhatTheWritesSaw(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if _, ok := store.LeaseLiveUntil(ctx); ok {
		t.Fatal("LeaseLiveUntil of a context with no guard reports a lease")
	}
	newRun(t, s, store.NewRun{ID: "r1", SessionID: "s1"})
	now := time.Now()
	if err := s.AcquireSession(ctx, "s1", "w1", time.Hour, now); err != nil {
		t.Fatal(err)
	}
	w1 := store.WithSessionLease(ctx, "s1", "w1")
	if _, ok := store.LeaseLiveUntil(w1); ok {
		t.Fatal("LeaseLiveUntil reports a lease before any write verified it")
	}
	if _, _, err := s.Start(w1, "r1", []model.Message{{Role: model.RoleUser, Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	if until, ok := store.LeaseLiveUntil(w1); !ok || !until.Equal(time.UnixMilli(now.Add(time.Hour).UnixMilli())) {
		t.Fatalf("after the start: LeaseLiveUntil = %v, %v; want %v, true", until, ok, now.Add(time.Hour))
	}
	// The heartbeat renews; the next write sees the later expiry.
	later := now.Add(10 * time.Minute)
	if _, err := s.RenewSessionLeases(ctx, "w1", time.Hour, later); err != nil {
		t.Fatal(err)
	}
	step := store.Step{RunID: "r1", SessionID: "s1", Model: "m", Message: model.Message{Role: model.RoleAssistant, Content: "working"}}
	if _, err := s.CommitStep(w1, step); err != nil {
		t.Fatal(err)
	}
	if until, _ := store.LeaseLiveUntil(w1); !until.Equal(time.UnixMilli(later.Add(time.Hour).UnixMilli())) {
		t.Fatalf("after the renewal and a step: LeaseLiveUntil = %v, want %v", until, later.Add(time.Hour))
	}
	// Another holder's guard is refused and learns nothing.
	w2 := store.WithSessionLease(ctx, "s1", "w2")
	if _, err := s.CommitStep(w2, step); !errors.Is(err, store.ErrSessionLeaseLost) {
		t.Fatalf("w2's step: err = %v, want ErrSessionLeaseLost", err)
	}
	if until, ok := store.LeaseLiveUntil(w2); ok {
		t.Fatalf("a refused guard reports its lease live until %v", until)
	}
}

// TestFinishReadsTheRunItLocks: the terminal write works from the run as
// it locks it: an unknown run is not found, a finished one is final, and
// the result is built from the row as locked (its owner, flags, attempt
// and counters, this step's included).
func TestFinishReadsTheRunItLocks(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if _, err := s.Finish(ctx, "nope", store.StatusDone, nil, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finish of an unknown run: err = %v, want ErrNotFound", err)
	}
	newRun(t, s, store.NewRun{ID: "r1", SessionID: "s1", Owner: "ann"})
	if _, _, err := s.Start(ctx, "r1", []model.Message{{Role: model.RoleUser, Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestCancel(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	var seen store.Run
	step := store.Step{RunID: "r1", SessionID: "s1", Model: "m", Message: model.Message{Role: model.RoleAssistant, Content: "done"},
		Usage: model.Usage{InputTokens: 7, OutputTokens: 3}}
	_, fin, err := s.FinishStep(ctx, step, store.StatusDone, func(r store.Run) json.RawMessage { seen = r; return json.RawMessage(`{}`) }, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if seen.ID != "r1" || seen.Owner != "ann" || !seen.InputAppended || !seen.CancelRequested || seen.Steps != 1 || seen.Usage.InputTokens != 7 || seen.Attempts != 1 {
		t.Fatalf("the result was built from %+v; want r1 of ann, input appended, cancel requested, 1 step of 7 input tokens, attempt 1", seen)
	}
	if fin.Owner != "ann" || fin.SessionID != "s1" {
		t.Fatalf("run.finished of %q in %q, want ann in s1", fin.Owner, fin.SessionID)
	}
	if _, err := s.Finish(ctx, "r1", store.StatusDone, nil, ""); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("finish of a finished run: err = %v, want ErrAlreadyFinal", err)
	}
}
