package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
// When that next reply asks only for read-only calls too, its step joins
// the commit queue as well, and so on: one committing goroutine writes the
// steps in order, each transaction gathering every step that came while
// the previous one ran (group commit within the run, CommitSteps). Against
// a remote model a commit ends long before the next reply, so each step
// still commits on its own, a fraction of a millisecond after its reply;
// against a fast one, the loop no longer waits for the disk between steps
// and the WAL takes each changed page once per transaction, not per step.
//
// Only read-only calls run before the steps ahead of them are durable.
// Anything else waits (settle) for every commit in the queue: a step with
// a call that has effects, before its intents commit and its tools run;
// the run's final reply, before it can end the run; a compaction, which
// rewrites the stored conversation; streamed text, before it is published.
// When a commit fails, everything queued after it is dropped unwritten,
// the execution is put back as before the first step of the failed batch,
// and the run stops with the commit's error as a synchronous checkpoint
// would.
//
// A crash in between costs nothing either: the calls that ran ahead of
// durability are read-only, so whether their steps' commits landed (their
// intents open, run again at resume) or not (the turns are asked again),
// no call with effects has run and no done call runs twice.

// maxBatchSteps bounds the steps one background transaction gathers, and
// so how far the loop runs ahead of the disk.
const maxBatchSteps = 64

// inflight is a batch of one run's steps committed in the background in
// one transaction, with what the execution held before its first step, to
// put back if the commit fails.
type inflight struct {
	done chan struct{}
	err  error // the commit's, once done is closed

	mu    sync.Mutex
	steps []store.Step // joined until the committer takes them
	taken bool

	heldResults []store.ToolResult
	heldEvents  []event.Event
	run         store.Run // x.run before the first step
	histLen     int       // len(x.history) before the first step's message
}

// join adds st to the batch unless the committer has taken it already or
// it is full.
func (p *inflight) join(st store.Step) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken || len(p.steps) >= maxBatchSteps {
		return false
	}
	p.steps = append(p.steps, st)
	return true
}

// take hands the batch's steps to the committer; none joins after.
func (p *inflight) take() []store.Step {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.taken = true
	return p.steps
}

// failed reports whether the batch has finished with an error, without
// waiting for it.
func (p *inflight) failed() bool {
	return isClosed(p.done) && p.err != nil
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

// checkpointAhead queues resp's checkpoint for the background commit and
// applies the step to the execution at once, so its calls can run and the
// next request can carry it. settle waits for the queue.
func (x *execution) checkpointAhead(ctx context.Context, resp model.Response, req model.Request, history int) error {
	// A commit that failed ends the run before anything more is done.
	for len(x.ahead) > 0 {
		if p := x.ahead[0]; p.failed() {
			return x.settle(ctx)
		} else if !isClosed(p.done) {
			break
		}
		x.ahead = x.ahead[1:]
	}
	before := x.run
	st, heldResults, heldEvents, err := x.step(ctx, resp, req, history)
	if err != nil {
		return err
	}
	x.mu.Lock()
	histLen := len(x.history)
	x.mu.Unlock()
	x.stepped(st)
	var prev *inflight
	if n := len(x.ahead); n > 0 {
		prev = x.ahead[n-1]
		if prev.join(st) {
			return nil
		}
	}
	p := &inflight{done: make(chan struct{}), steps: []store.Step{st}, heldResults: heldResults, heldEvents: heldEvents, run: before, histLen: histLen}
	x.ahead = append(x.ahead, p)
	// The commit is not cut short by a cancel: a cancel or a shutdown that
	// lands now finds the steps either committed or failed for their own
	// reason, never half-known, and settles them as after a synchronous
	// checkpoint.
	cctx := context.WithoutCancel(ctx)
	x.commitAhead(func() {
		defer close(p.done)
		if prev != nil && prev.err != nil {
			// What this batch holds follows a step that never landed.
			p.err = prev.err
			return
		}
		evs, err := x.e.o.Store.CommitSteps(cctx, p.take())
		if err != nil {
			p.err = err
			return
		}
		x.publish(evs...)
		crashpoint.Hit(crashpoint.AfterIntent)
	})
	return nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// commitAhead runs commit on the execution's committing goroutine,
// started at its first commit and kept until the execution ends
// (stopCommitter). One goroutine for all of a run's commits, not one
// each: a commit runs deep in the SQLite driver, and a fresh goroutine's
// stack grew, copied three or four times, on every step. The channel holds
// one batch besides the one committing: a third waits here until the
// first is done, which bounds how far the loop runs ahead.
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

// stopCommitter ends the committing goroutine, if any, once the commits it
// was given, if any, have run.
func (x *execution) stopCommitter() {
	if x.commits != nil {
		close(x.commits)
		x.commits = nil
	}
}

// committed waits for every commit queued, if any, and reports the first
// that failed. Unlike settle it changes nothing, so the model call's stream
// callbacks may use it.
func (x *execution) committed() error {
	for _, p := range x.ahead {
		<-p.done
		if p.err != nil {
			return p.err
		}
	}
	return nil
}

// settle waits for every commit queued, if any. When one failed, the
// execution is put back as before the first step of the failed batch (the
// steps' messages and their calls' held results leave the conversation;
// what the first step took from held goes back) and the error is the
// checkpoint's, to stop the run with. Only the loop's goroutine calls it.
func (x *execution) settle(ctx context.Context) error {
	var failed *inflight
	for _, p := range x.ahead {
		<-p.done
		if failed == nil && p.err != nil {
			failed = p
		}
	}
	x.ahead = nil
	p := failed
	if p == nil {
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
	// The steps' calls never committed their intents: their results go.
	// What the first step took is held again, as a failed synchronous
	// checkpoint leaves it.
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
