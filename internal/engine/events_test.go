package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// runAs submits input for owner with metadata.task_id and waits for the run
// to end; it returns the run and its stored events.
func (h *harness) runAs(t *testing.T, owner, taskID, input string) (store.Run, []event.Event) {
	t.Helper()
	req := userRequest(input)
	req.ReasoningEffort = "high"
	req.Metadata, _ = json.Marshal(map[string]any{"task_id": taskID})
	r := submitAndWait(t, h.svc, engine.Submission{Owner: owner, Request: req})
	evs, err := h.st.Events(context.Background(), store.EventFilter{RunID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	return r, evs
}

func names(evs []event.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

func data(t *testing.T, e event.Event) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("%s data %q: %v", e.Name, e.Data, err)
	}
	return d
}

// checkSpine asserts every event carries owner, session, run and task, and
// that each event of a turn names its turn.
func checkSpine(t *testing.T, r store.Run, evs []event.Event, owner, taskID string) {
	t.Helper()
	for _, e := range evs {
		if e.Owner != owner || e.SessionID != r.SessionID || e.RunID != r.ID || e.TaskID != taskID {
			t.Errorf("%s #%d spine = owner %q session %q run %q task %q, want %q %q %q %q",
				e.Name, e.ID, e.Owner, e.SessionID, e.RunID, e.TaskID, owner, r.SessionID, r.ID, taskID)
		}
		switch e.Name {
		case event.TurnStarted, event.ModelCall, event.ToolCall, event.ToolResult, event.Checkpoint:
			if e.Turn < 1 {
				t.Errorf("%s #%d has no turn number", e.Name, e.ID)
			}
		}
	}
}

// A run's events name its turns, checkpoints and model calls in full, and
// every one carries the correlation spine.
func TestEventsOfARunCarryTurnsCheckpointsAndSpine(t *testing.T) {
	echo := echoTool()
	script := toolThenAnswer(model.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		resp, err := script(ctx, req, s)
		resp.FinishReason = "stop"
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = "tool_calls"
		}
		return resp, err
	})
	h := newHarness(t, p, big, echo)
	sub := h.opts.Broker.Subscribe(256, func(e event.Event) bool { return !e.Ephemeral() })
	defer h.opts.Broker.Unsubscribe(sub)
	r, evs := h.runAs(t, "alice", "task_7", "please echo")
	if r.Status != store.StatusDone {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	// Live listeners get every durable event with its stored ID.
	stored := map[int64]string{}
	for _, e := range evs {
		stored[e.ID] = e.Name
	}
	for e := range sub.C {
		if stored[e.ID] != e.Name {
			t.Errorf("published %s with id %d, stored as %q", e.Name, e.ID, stored[e.ID])
		}
		if e.Name == event.RunFinished {
			break
		}
	}
	want := []string{event.RunQueued, event.RunStarted,
		event.TurnStarted, event.ModelCall, event.ToolCall, event.Checkpoint, event.ToolResult,
		event.TurnStarted, event.ModelCall, event.Checkpoint, event.RunFinished}
	if got := names(evs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events = %v, want %v", got, want)
	}
	checkSpine(t, r, evs, "alice", "task_7")
	turns := map[string][]int{}
	for _, e := range evs {
		turns[e.Name] = append(turns[e.Name], e.Turn)
	}
	for _, n := range []string{event.TurnStarted, event.ModelCall, event.Checkpoint} {
		if fmt.Sprint(turns[n]) != "[1 2]" {
			t.Errorf("%s turns = %v, want [1 2]", n, turns[n])
		}
	}
	if fmt.Sprint(turns[event.ToolResult]) != "[1]" || fmt.Sprint(turns[event.RunFinished]) != "[2]" {
		t.Errorf("tool.result turns %v, run.finished turns %v", turns[event.ToolResult], turns[event.RunFinished])
	}
	for _, e := range evs {
		switch e.Name {
		case event.ModelCall:
			d := data(t, e)
			if d[event.KeyEffort] != "high" {
				t.Errorf("model.call effort = %v, want high", d[event.KeyEffort])
			}
			if _, ok := d[event.KeySpeed]; !ok {
				t.Errorf("model.call has no speed: %s", e.Data)
			}
			fr, ok := d[event.KeyFinishReasons].([]any)
			if !ok || len(fr) != 1 || (fr[0] != "tool_calls" && fr[0] != "stop") {
				t.Errorf("model.call finish_reasons = %v", d[event.KeyFinishReasons])
			}
		case event.Checkpoint:
			d := data(t, e)
			if d[event.KeySteps] != float64(e.Turn) {
				t.Errorf("checkpoint of turn %d says steps %v", e.Turn, d[event.KeySteps])
			}
		}
	}
}

// A budget stop records budget.exhausted and an error event with the
// diagnostic, together with the terminal state.
func TestBudgetExhaustionEmitsBudgetAndErrorEvents(t *testing.T) {
	loop := tool.Func("echo", "echo", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) { return tool.Text("again"), nil })
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		return model.Response{Model: req.Model, ToolCalls: []model.ToolCall{{ID: fmt.Sprint(len(req.Messages)), Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}}}, nil
	})
	h := newHarness(t, p, engine.Budget{Steps: 2, Tokens: 1 << 40, CostUSD: 100}, loop)
	r, evs := h.runAs(t, "bob", "task_9", "loop")
	if r.Status != store.StatusFailed {
		t.Fatalf("status %s", r.Status)
	}
	checkSpine(t, r, evs, "bob", "task_9")
	n := len(evs)
	if n < 3 || evs[n-3].Name != event.BudgetExhausted || evs[n-2].Name != event.Error || evs[n-1].Name != event.RunFinished {
		t.Fatalf("events end with %v, want budget.exhausted, error, run.finished", names(evs))
	}
	if evs[n-3].ID+1 != evs[n-2].ID || evs[n-2].ID+1 != evs[n-1].ID {
		t.Fatalf("budget events are not written with the terminal state: ids %d %d %d", evs[n-3].ID, evs[n-2].ID, evs[n-1].ID)
	}
	b := data(t, evs[n-3])
	if b[event.KeySteps] != float64(2) || b[event.KeyMaxSteps] != float64(2) {
		t.Errorf("budget.exhausted = %s", evs[n-3].Data)
	}
	if over, _ := b[event.KeyOver].([]any); len(over) != 1 || over[0] != "steps" {
		t.Errorf("budget.exhausted over = %v", b[event.KeyOver])
	}
	e := data(t, evs[n-2])
	if e[event.KeyErrorType] != "budget" || !strings.HasPrefix(fmt.Sprint(e[event.KeyErrorMessage]), "budget exhausted: 2/2 steps") {
		t.Errorf("error event = %s", evs[n-2].Data)
	}
}

// A model failure that ends the run records an error event of type model.
func TestModelFailureEmitsErrorEvent(t *testing.T) {
	p := model.ProviderFunc(func(context.Context, model.Request, model.Stream) (model.Response, error) {
		return model.Response{}, &model.Error{Status: 401, Message: "bad key"}
	})
	h := newHarness(t, p, big)
	r, evs := h.runAs(t, "carol", "task_1", "hi")
	if r.Status != store.StatusFailed {
		t.Fatalf("status %s", r.Status)
	}
	checkSpine(t, r, evs, "carol", "task_1")
	n := len(evs)
	if n < 2 || evs[n-2].Name != event.Error || evs[n-1].Name != event.RunFinished {
		t.Fatalf("events end with %v, want error, run.finished", names(evs))
	}
	d := data(t, evs[n-2])
	if d[event.KeyErrorType] != "model" || !strings.Contains(fmt.Sprint(d[event.KeyErrorMessage]), "bad key") {
		t.Errorf("error event = %s", evs[n-2].Data)
	}
}

// A tool that fails by itself (an error, a panic, its timeout) rather than
// answering with an error result records an error event next to its
// tool.result; the run goes on.
func TestToolFaultsEmitErrorEvents(t *testing.T) {
	broken := tool.Func("broken", "fails", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		return tool.Result{}, fmt.Errorf("disk on fire")
	})
	boom := tool.Func("boom", "panics", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) { panic("kaboom") })
	stuck := tool.Func("stuck", "waits", true, func(ctx context.Context, _ tool.Call, _ echoArgs) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	polite := tool.Func("polite", "refuses", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		return tool.Errorf("no such file"), nil
	})
	call := func(id, name string) model.ToolCall {
		return model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(`{"text":""}`)}
	}
	h := newHarnessWith(t, toolThenAnswer(call("c1", "broken"), call("c2", "boom"), call("c3", "stuck"), call("c4", "polite")), big,
		func(o *engine.Options) { o.ToolTimeout = 20 * time.Millisecond }, broken, boom, stuck, polite)
	r, evs := h.runAs(t, "dora", "task_2", "try them")
	if r.Status != store.StatusDone {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	checkSpine(t, r, evs, "dora", "task_2")
	kinds := map[string]string{}
	for i, e := range evs {
		if e.Name != event.Error {
			continue
		}
		d := data(t, e)
		if i == 0 || evs[i-1].Name != event.ToolResult || evs[i-1].ID+1 != e.ID || data(t, evs[i-1])[event.KeyCallID] != d[event.KeyCallID] {
			t.Errorf("error event %s is not written with its tool.result", e.Data)
		}
		kinds[fmt.Sprint(d[event.KeyName])] = fmt.Sprint(d[event.KeyErrorType])
	}
	want := map[string]string{"broken": "tool", "boom": "tool_panic", "stuck": "tool_timeout"}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("tool error events %v, want %v", kinds, want)
	}
}
