// Package queue dispatches durable runs: up to a fixed number of sessions at
// once, the runs of one session strictly one after another, in the order
// they were accepted. The queue holds no state of its own that matters: the
// run table is the queue, so a restart loses nothing. On Open, runs left
// running by a crash are resumed before any queued run starts.
package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// Executor runs one run to completion. userCancel reports whether a
// cancelled ctx was a cancel request (true) rather than shutdown.
type Executor func(ctx context.Context, runID string, userCancel func() bool)

// Lister is the part of the store the queue reads.
type Lister interface {
	RunsByStatus(ctx context.Context, status string) ([]store.Run, error)
}

// Queue dispatches runs to an Executor.
type Queue struct {
	store  Lister
	exec   Executor
	max    int
	logger *slog.Logger
	// Poll is a safety net: the dispatcher also rescans this often even
	// without a Notify (default 2s).
	Poll time.Duration

	mu       sync.Mutex
	busy     map[string]bool // session id → a run of it is executing
	inflight map[string]*slot
	wake     chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	resumed  bool
}

type slot struct {
	cancel     context.CancelFunc
	userCancel bool
}

// New returns a queue running at most max sessions at once (clamped to 1–256).
func New(st Lister, exec Executor, max int, logger *slog.Logger) *Queue {
	if max < 1 {
		max = 1
	}
	if max > 256 {
		max = 256
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Queue{store: st, exec: exec, max: max, logger: logger, Poll: 2 * time.Second,
		busy: make(map[string]bool), inflight: make(map[string]*slot), wake: make(chan struct{}, 1)}
}

// Open starts the dispatcher.
func (q *Queue) Open() error {
	q.ctx, q.cancel = context.WithCancel(context.Background())
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		q.loop()
	}()
	q.Notify()
	return nil
}

// Close stops dispatching and interrupts running work (it resumes on the
// next start), then waits for the workers to return.
func (q *Queue) Close(ctx context.Context) error {
	if q.cancel == nil {
		return nil
	}
	q.cancel()
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Notify tells the dispatcher a run was queued or a slot freed.
func (q *Queue) Notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Cancel interrupts a run that is executing and reports whether it was.
func (q *Queue) Cancel(runID string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, ok := q.inflight[runID]
	if ok {
		s.userCancel = true
		s.cancel()
	}
	return ok
}

// Running reports how many runs are executing.
func (q *Queue) Running() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.inflight)
}

func (q *Queue) loop() {
	t := time.NewTicker(q.Poll)
	defer t.Stop()
	for {
		q.dispatch()
		select {
		case <-q.ctx.Done():
			return
		case <-q.wake:
		case <-t.C:
		}
	}
}

// dispatch starts every runnable run: resumed (running) rows first, on the
// first pass, then queued rows in acceptance order.
func (q *Queue) dispatch() {
	var candidates []store.Run
	q.mu.Lock()
	first := !q.resumed
	q.mu.Unlock()
	if first {
		running, err := q.store.RunsByStatus(q.ctx, store.StatusRunning)
		if err != nil {
			q.logger.Error("list running runs", "err", err)
			return
		}
		candidates = append(candidates, running...)
	}
	queued, err := q.store.RunsByStatus(q.ctx, store.StatusQueued)
	if err != nil {
		if q.ctx.Err() == nil {
			q.logger.Error("list queued runs", "err", err)
		}
		return
	}
	candidates = append(candidates, queued...)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.resumed = true
	for _, r := range candidates {
		if len(q.inflight) >= q.max {
			return
		}
		if q.busy[r.SessionID] || q.inflight[r.ID] != nil {
			continue
		}
		q.start(r)
	}
}

// start launches r; q.mu is held.
func (q *Queue) start(r store.Run) {
	ctx, cancel := context.WithCancel(q.ctx)
	s := &slot{cancel: cancel}
	q.inflight[r.ID] = s
	q.busy[r.SessionID] = true
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		defer func() {
			cancel()
			q.mu.Lock()
			delete(q.inflight, r.ID)
			delete(q.busy, r.SessionID)
			q.mu.Unlock()
			q.Notify()
		}()
		q.exec(ctx, r.ID, func() bool {
			q.mu.Lock()
			defer q.mu.Unlock()
			return s.userCancel
		})
	}()
}
