package engine

import (
	"context"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// held is what an execution keeps back for its next write: events that
// report no state of their own (turn.started) and the results of read-only
// calls. Neither loses anything a crash could not already lose: a turn
// with no checkpoint is opened again by the resumed attempt, and an
// interrupted read-only call runs again. Both ride on the next write of the
// run — normally the next step's checkpoint, so a tool turn costs one
// transaction instead of three — and go out before anything that write
// adds, so the event log keeps its order. A call with effects never waits:
// its result commits as soon as the call ends.
type held struct {
	results []store.ToolResult
	events  []event.Event
}

// hold keeps events back for the next write.
func (x *execution) hold(evs ...event.Event) {
	x.mu.Lock()
	x.held.events = append(x.held.events, evs...)
	x.mu.Unlock()
}

// holdResult keeps a read-only call's result back for the next write and
// puts its message in the conversation the next request carries.
func (x *execution) holdResult(tr store.ToolResult, m model.Message) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.held.results = append(x.held.results, tr)
	if x.history != nil {
		x.history = append(x.history, m)
	}
}

// holdable reports whether a call's result may wait for the next write:
// the call is read-only, so a crash before that write only runs it again.
func (x *execution) holdable(name string) bool {
	t, ok := x.e.o.Tools.Get(name)
	return ok && t.ReadOnly()
}

// takeHeld empties held and returns what it held, for a write to carry.
func (x *execution) takeHeld() ([]store.ToolResult, []event.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	r, e := x.held.results, x.held.events
	x.held = held{}
	return r, e
}

// restoreHeld puts back what a failed write took, ahead of anything held
// since.
func (x *execution) restoreHeld(results []store.ToolResult, events []event.Event) {
	if len(results) == 0 && len(events) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.held.results = append(results, x.held.results...)
	x.held.events = append(events, x.held.events...)
}

// writeEvents writes evs after what is held, in one transaction, and
// publishes them all.
func (x *execution) writeEvents(ctx context.Context, evs ...event.Event) error {
	// What is held may answer the intents of a step still committing
	// (ahead.go): that commit goes first.
	if err := x.committed(); err != nil {
		return err
	}
	results, events := x.takeHeld()
	written, err := x.e.o.Store.CommitResults(ctx, results, append(events, evs...))
	if err != nil {
		x.restoreHeld(results, events)
		return err
	}
	x.publish(written...)
	return nil
}

// flush writes what is held, if anything, in one transaction.
func (x *execution) flush(ctx context.Context) error {
	x.mu.Lock()
	empty := len(x.held.results) == 0 && len(x.held.events) == 0
	x.mu.Unlock()
	if empty {
		return nil
	}
	return x.writeEvents(ctx)
}
