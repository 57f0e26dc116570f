package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// journalAt is what the database held for a run when the model was called.
type journalAt struct {
	done   map[string]bool
	events []string
}

// writeThenRead calls a mutating tool, then a read-only one, then answers,
// recording the database state each model call sees.
func writeThenRead(st func() *store.Store, seen *[]journalAt, mu *sync.Mutex) model.ProviderFunc {
	calls := [][]model.ToolCall{
		{{ID: "w1", Name: "write", Arguments: json.RawMessage(`{"text":"b"}`)}},
		{{ID: "r1", Name: "read", Arguments: json.RawMessage(`{"text":"a"}`)}},
	}
	return func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		runID := ""
		if r, err := st().RunsByStatus(ctx, store.StatusRunning); err == nil && len(r) == 1 {
			runID = r[0].ID
		}
		j, _ := st().Journal(ctx, runID)
		evs, _ := st().Events(ctx, store.EventFilter{RunID: runID})
		at := journalAt{done: map[string]bool{}}
		for id, e := range j {
			at.done[id] = e.Done
		}
		for _, e := range evs {
			at.events = append(at.events, e.Name)
		}
		mu.Lock()
		*seen = append(*seen, at)
		mu.Unlock()
		results := 0
		for _, m := range req.Messages {
			if m.Role == model.RoleTool {
				results++
			}
		}
		if results == len(calls) {
			return model.Response{Model: req.Model, Text: "done", Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
		}
		return model.Response{Model: req.Model, ToolCalls: calls[results], Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
}

// TestResultsOfReadOnlyCallsRideOnTheNextCheckpoint: a call with effects
// has its result journalled before the next model call; a read-only call's
// result (which a crash may only make run again) reaches that model call
// in its request and is journalled in the next checkpoint's transaction,
// as turn.started is; the stored log keeps its order.
//
// It runs twice: with the read-only step committing in line, where the
// third call sees exactly the second step's checkpoint, and with it
// committing ahead (ahead.go), where that checkpoint may still be in
// flight while the third call runs; in both the read-only result is not
// durable before the next checkpoint and the final log is the same.
func TestResultsOfReadOnlyCallsRideOnTheNextCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ahead time.Duration
	}{
		{"in line", -1},
		{"ahead", time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readOnlyResultsRideOnTheNextCheckpoint(t, tc.ahead)
		})
	}
}

func readOnlyResultsRideOnTheNextCheckpoint(t *testing.T, ahead time.Duration) {
	var mu sync.Mutex
	var seen []journalAt
	var h *harness
	read := tool.Func("read", "read", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text("read " + a.Text), nil
	})
	write := tool.Func("write", "write", false, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text("wrote " + a.Text), nil
	})
	h = newHarnessWith(t, writeThenRead(func() *store.Store { return h.st }, &seen, &mu), big,
		func(o *engine.Options) { o.CommitAheadAfter = ahead }, read, write)
	r, resp := h.run(t, "go")
	if r.Status != store.StatusDone || resp.OutputText != "done" {
		t.Fatalf("run %s: %+v", r.Status, resp)
	}
	if len(seen) != 3 {
		t.Fatalf("%d model calls, want 3", len(seen))
	}
	if second := seen[1]; !second.done["w1"] || count(second.events, event.ToolResult) != 1 {
		t.Fatalf("while the second call ran: journal %v, events %v; want the mutating call's result durable", second.done, second.events)
	}
	third := seen[2]
	if third.done["r1"] || count(third.events, event.ToolResult) != 1 {
		t.Fatalf("while the third call ran: journal %v, events %v; want the read-only result held for its checkpoint", third.done, third.events)
	}
	// In line, the second step's checkpoint (with its turn.started) is
	// durable before the third call; ahead, it may not be yet.
	if turns := count(third.events, event.TurnStarted); ahead < 0 && turns != 2 || turns > 2 {
		t.Fatalf("while the third call ran: events %v; want the third turn held for its checkpoint", third.events)
	}
	j, err := h.st.Journal(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !j["r1"].Done || j["r1"].Result != "read a" || !j["w1"].Done || j["w1"].Result != "wrote b" {
		t.Fatalf("journal after the run: %+v", j)
	}
	want := []string{event.RunQueued, event.RunStarted,
		event.TurnStarted, event.ModelCall, event.ToolCall, event.Checkpoint, event.ToolResult,
		event.TurnStarted, event.ModelCall, event.ToolCall, event.Checkpoint, event.ToolResult,
		event.TurnStarted, event.ModelCall, event.Checkpoint, event.RunFinished}
	if names := h.eventNames(t, r.ID); !slices.Equal(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	msgs, err := h.st.Messages(context.Background(), r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var roles []model.Role
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []model.Role{model.RoleUser, model.RoleAssistant, model.RoleTool, model.RoleAssistant, model.RoleTool, model.RoleAssistant}) {
		t.Fatalf("stored conversation roles %v", roles)
	}
}

// TestCancelWritesAHeldResultAsItsAnswer: a run cancelled while the model
// call after a read-only tool is in flight keeps that call's real result,
// with the held turn.started before run.finished, instead of settling the
// call as cancelled.
func TestCancelWritesAHeldResultAsItsAnswer(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	read := tool.Func("read", "read", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text("read " + a.Text), nil
	})
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		for _, m := range req.Messages {
			if m.Role == model.RoleTool {
				once.Do(func() { close(started) })
				<-ctx.Done()
				return model.Response{}, ctx.Err()
			}
		}
		return model.Response{Model: req.Model, ToolCalls: []model.ToolCall{{ID: "r1", Name: "read", Arguments: json.RawMessage(`{"text":"a"}`)}}}, nil
	})
	h := newHarness(t, p, big, read)
	r := h.cancelOnceStarted(t, "go", started, "the second model call never came")
	j, err := h.st.Journal(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !j["r1"].Done || j["r1"].Result != "read a" {
		t.Fatalf("the read-only call's journal entry %+v, want its real result", j["r1"])
	}
	names := h.eventNames(t, r.ID)
	if count(names, event.ToolResult) != 1 || count(names, event.TurnStarted) != 2 || count(names, event.RunFinished) != 1 || names[len(names)-1] != event.RunFinished {
		t.Fatalf("events %v", names)
	}
}
