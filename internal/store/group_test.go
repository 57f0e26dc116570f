package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
)

// TestGroupCommitSharesOneTransaction: callers that queue while the writer
// is busy are written together, and each gets exactly the outcome a
// transaction of its own would give: the good steps are durable with their
// events numbered, a step of a finished run fails alone with nothing of it
// kept, and a caller whose context ended while queued is skipped with that
// error.
func TestGroupCommitSharesOneTransaction(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const runs = 6
	for i := range runs {
		id := fmt.Sprint("resp_", i)
		if _, _, _, err := s.CreateRun(ctx, NewRun{ID: id, SessionID: fmt.Sprint("sess_", i), Request: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Start(ctx, id, []model.Message{{Role: model.RoleUser, Content: "go"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Finish(ctx, "resp_4", StatusCancelled, nil, "cancelled"); err != nil {
		t.Fatal(err)
	}
	step := func(i int) Step {
		id := fmt.Sprint("resp_", i)
		call := fmt.Sprint("c", i)
		return Step{RunID: id, SessionID: fmt.Sprint("sess_", i), Model: "m",
			Message: model.Message{Role: model.RoleAssistant, Content: fmt.Sprint("step ", i), ToolCalls: []model.ToolCall{{ID: call, Name: "echo", Arguments: json.RawMessage(`{}`)}}},
			Intents: []Intent{{CallID: call, Name: "echo", Args: json.RawMessage(`{}`), ReadOnly: true}},
			Events:  []event.Event{event.New(id, fmt.Sprint("sess_", i), event.Checkpoint, nil)}}
	}

	// Hold the one writer connection, so the first caller leads and waits
	// for it while the others queue behind.
	conn, err := s.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		i   int
		evs []event.Event
		err error
	}
	out := make(chan outcome, runs)
	commit := func(ctx context.Context, i int) {
		evs, err := s.CommitStep(ctx, step(i))
		out <- outcome{i, evs, err}
	}
	go commit(ctx, 0)
	waitGroup(t, s, func(g *writeGroup) bool { return g.busy })
	cancelled, cancel := context.WithCancel(ctx)
	for i := 1; i < runs; i++ {
		c := ctx
		if i == 5 {
			c = cancelled
		}
		go commit(c, i)
	}
	waitGroup(t, s, func(g *writeGroup) bool { return len(g.queue) == runs-1 })
	cancel()
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}

	got := map[int]outcome{}
	for range runs {
		o := <-out
		got[o.i] = o
	}
	ids := map[int64]bool{}
	for i := range runs {
		o := got[i]
		switch i {
		case 4:
			if !errors.Is(o.err, ErrAlreadyFinal) {
				t.Fatalf("step of the finished run: err %v, want ErrAlreadyFinal", o.err)
			}
		case 5:
			if !errors.Is(o.err, context.Canceled) {
				t.Fatalf("step whose caller gave up: err %v, want context.Canceled", o.err)
			}
		default:
			if o.err != nil {
				t.Fatalf("step %d: %v", i, o.err)
			}
			if len(o.evs) != 1 || o.evs[0].ID == 0 || ids[o.evs[0].ID] {
				t.Fatalf("step %d events %+v", i, o.evs)
			}
			ids[o.evs[0].ID] = true
		}
		msgs, err := s.Messages(ctx, fmt.Sprint("sess_", i))
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Run(ctx, fmt.Sprint("resp_", i))
		if err != nil {
			t.Fatal(err)
		}
		want := 2 // the user's input and the step
		if i >= 4 {
			want = 1
		}
		if len(msgs) != want || (want == 2) != (r.Steps == 1) {
			t.Fatalf("run %d: %d messages and %d steps after its commit (err %v)", i, len(msgs), r.Steps, o.err)
		}
	}
}

// waitGroup waits until cond holds of s's write group.
func waitGroup(t *testing.T, s *Store, cond func(*writeGroup) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.group.mu.Lock()
		ok := cond(&s.group)
		s.group.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the write group never reached the state waited for")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommitSurvivesAPanickingWrite: a write whose work panics fails
// with an error, and the writes after it still run.
func TestGroupCommitSurvivesAPanickingWrite(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.groupTx(ctx, func(*sql.Tx) error { panic("boom") }); err == nil {
		t.Fatal("a panicking write reported success")
	}
	if err := s.AddEvents(ctx, []event.Event{event.New("r", "s", event.RunQueued, nil)}); err != nil {
		t.Fatalf("the write after a panicking one: %v", err)
	}
}
