package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// Committing ahead.
//
// A step whose calls are all read-only does not wait for its checkpoint's
// transaction: the commit goes on in the background while the calls run,
// their results are held (held.go) and the next request is built and sent.
// Nothing of that next call is acted on before the commit is durable: its
// reply waits (settle) before its tools run, before its own checkpoint and
// before it can end the run as final, and its streamed text is not
// published until then. When the commit fails, the reply is dropped
// unread, the execution is put back as the failed commit left it, and the
// run stops with the commit's error as a synchronous checkpoint would.
//
// A crash in between costs nothing either: the calls that ran are
// read-only, so whether the commit landed (their intents open, run again at
// resume) or not (the turn is asked again), no call with effects has run
// and no done call runs twice. A step with any call that has effects
// commits before its tools run, as always: its intents are durable before
// the call starts.

// inflight is a step's checkpoint being committed in the background, with
// what the execution held before it, to put back if the commit fails.
type inflight struct {
	done chan struct{}
	err  error // the commit's, once done is closed

	heldResults []store.ToolResult
	heldEvents  []event.Event
	run         store.Run // x.run before the step
	histLen     int       // len(x.history) before the step's message
}

// aheadable reports whether resp's step may commit in the background: it
// asks for tool calls, every one of them is of a read-only tool, whose
// result would be held anyway, and the model took long enough to answer
// (Options.CommitAheadAfter). The overlap pays off only when the next call
// takes a while: against a provider that answers in microseconds (in
// process), handing the commit to another goroutine and waiting for it
// costs more than it hides, so such a step commits in line.
func (x *execution) aheadable(resp model.Response) bool {
	after := x.e.o.CommitAheadAfter
	if len(resp.ToolCalls) == 0 || after < 0 || x.callStats.wall < after {
		return false
	}
	for _, c := range resp.ToolCalls {
		if !x.holdable(c.Name) {
			return false
		}
	}
	return true
}

// checkpointAhead starts resp's checkpoint in the background and applies
// the step to the execution at once, so its calls can run and the next
// request can carry it. settle waits for the commit.
func (x *execution) checkpointAhead(ctx context.Context, resp model.Response, req model.Request, history int) error {
	before := x.run
	st, heldResults, heldEvents, err := x.step(ctx, resp, req, history)
	if err != nil {
		return err
	}
	x.mu.Lock()
	histLen := len(x.history)
	x.mu.Unlock()
	p := &inflight{done: make(chan struct{}), heldResults: heldResults, heldEvents: heldEvents, run: before, histLen: histLen}
	x.stepped(st)
	// The commit is not cut short by a cancel: a cancel or a shutdown that
	// lands now finds the step either committed or failed for its own
	// reason, never half-known, and settles it as after a synchronous
	// checkpoint.
	cctx := context.WithoutCancel(ctx)
	x.commitAhead(func() {
		defer close(p.done)
		evs, err := x.e.o.Store.CommitStep(cctx, st)
		if err != nil {
			p.err = err
			return
		}
		x.publish(evs...)
		crashpoint.Hit(crashpoint.AfterIntent)
	})
	x.pending = p
	return nil
}

// commitAhead runs commit on the execution's committing goroutine,
// started at its first commit and kept until the execution ends
// (stopCommitter). One goroutine for all of a run's commits, not one
// each: a commit runs deep in the SQLite driver, and a fresh goroutine's
// stack grew, copied three or four times, on every step. At most one
// commit is in flight (settle waits for it before the next), so the
// channel never holds more than one.
func (x *execution) commitAhead(commit func()) {
	if x.commits == nil {
		x.commits = make(chan func(), 1)
		go func(commits <-chan func()) {
			for c := range commits {
				c()
			}
		}(x.commits)
	}
	x.commits <- commit
}

// stopCommitter ends the committing goroutine, if any, once the commit it
// was given, if any, has run.
func (x *execution) stopCommitter() {
	if x.commits != nil {
		close(x.commits)
		x.commits = nil
	}
}

// committed waits for the commit in flight, if any, and reports whether it
// failed. Unlike settle it changes nothing, so the model call's stream
// callbacks may use it.
func (x *execution) committed() error {
	p := x.pending
	if p == nil {
		return nil
	}
	<-p.done
	return p.err
}

// settle waits for the commit in flight, if any. When it failed, the
// execution is put back as before the step (the step's message and its
// calls' held results leave the conversation; what the step took from held
// goes back) and the error is the checkpoint's, to stop the run with.
// Only the loop's goroutine calls it.
func (x *execution) settle(ctx context.Context) error {
	p := x.pending
	if p == nil {
		return nil
	}
	<-p.done
	x.pending = nil
	if p.err == nil {
		return nil
	}
	x.run.Steps, x.run.Usage, x.run.Model = p.run.Steps, p.run.Usage, p.run.Model
	x.mu.Lock()
	if x.history != nil && p.histLen <= len(x.history) {
		x.history = x.history[:p.histLen]
		if len(x.sizes) > p.histLen {
			for _, n := range x.sizes[p.histLen:] {
				x.histBytes -= n
			}
			x.sizes = x.sizes[:p.histLen]
		}
	}
	// The step's calls never committed their intents: their results go.
	// What the step took is held again, as a failed synchronous checkpoint
	// leaves it.
	x.held = held{results: p.heldResults}
	if !errors.Is(p.err, store.ErrAlreadyFinal) {
		x.held.events = p.heldEvents
	}
	x.mu.Unlock()
	if errors.Is(p.err, store.ErrAlreadyFinal) {
		return errCancelled
	}
	return x.checkpointFailed(ctx, p.err)
}

// checkpointFailed is the error a failed checkpoint stops the run with. The
// checkpoint's transaction verifies the lease itself; one that failed
// otherwise, on a shared database that cannot confirm the lease now either
// (unreachable), stops the run as the turn's check would: another worker
// may hold it.
func (x *execution) checkpointFailed(ctx context.Context, err error) error {
	if !leaseLost(err) && !errors.Is(err, errCancelled) {
		if lerr := x.confirmLease(ctx); lerr != nil {
			return fmt.Errorf("%w (checkpoint: %v)", lerr, err)
		}
	}
	return err
}
