// Package queue dispatches durable runs: up to a fixed number of sessions at
// once, the runs of one session strictly one after another, in the order
// they were accepted. The queue holds no state of its own that matters: the
// run table is the queue, so a restart loses nothing. On Open, runs left
// running by a crash are resumed before any queued run starts; those beyond
// the concurrency limit stay ahead of every queued run until a slot frees.
//
// With Share, the queue is one of several workers on one database: instead
// of reading the run table under a single writer, it claims the next run of
// free sessions (ClaimRuns, one session lease each), renews its leases at a
// third of their TTL, releases a session when its run ends and no next run
// of it is claimed, and hands a run claimed in state running to the same
// resume path a restart takes.
package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// Executor runs one run to completion. userCancel reports whether a
// cancelled ctx was a cancel request (true) rather than shutdown.
type Executor func(ctx context.Context, run store.RunHead, userCancel func() bool)

// Lister is the part of the store the queue uses: it reads the live runs
// and makes one write, marking crash leftovers resumed in a batch.
type Lister interface {
	// LiveHeads lists running then queued runs, each in queue order.
	LiveHeads(ctx context.Context) ([]store.RunHead, error)
	// ResumeRuns durably marks runs left running by an earlier process as
	// resumed, in one transaction.
	ResumeRuns(ctx context.Context, ids []string) ([]event.Event, error)
}

// Claimer is the part of the store a shared queue uses: session leases and
// the claim of their next runs, and the batch resume of running rows.
type Claimer interface {
	// ClaimRuns returns up to max runs, one per session, whose sessions
	// holder now leases until now+ttl, passing over the sessions in skip.
	ClaimRuns(ctx context.Context, holder string, ttl time.Duration, now time.Time, max int, skip []string) ([]store.Run, error)
	// RenewSessionLeases extends every lease holder still holds.
	RenewSessionLeases(ctx context.Context, holder string, ttl time.Duration, now time.Time) (int64, error)
	// ReleaseSessions gives up the leases of the sessions holder holds
	// among sessionIDs, in one write.
	ReleaseSessions(ctx context.Context, sessionIDs []string, holder string) error
	// ResumeRuns marks running rows resumed in one transaction.
	ResumeRuns(ctx context.Context, ids []string) ([]event.Event, error)
	// CancelRequestedRuns lists the running runs with a cancel request
	// in the sessions holder leases.
	CancelRequestedRuns(ctx context.Context, holder string) ([]string, error)
}

// shared is a queue's work distribution across workers.
type shared struct {
	store  Claimer
	holder string
	ttl    time.Duration
	// held holds the sessions this worker has claimed and not released.
	held map[string]bool
	// retryAt holds runs that returned here without finishing (their lease
	// was lost, or a store error stopped them): they are not started again
	// before this time, so a failing run cannot spin.
	retryAt map[string]time.Time
}

// Queue dispatches runs to an Executor.
type Queue struct {
	store  Lister
	share  *shared
	exec   Executor
	max    int
	logger *slog.Logger
	// Poll is a safety net: the dispatcher also rescans this often even
	// without a Notify (default 2s).
	Poll time.Duration

	mu       sync.Mutex
	busy     map[string]bool // session id → a run of it is executing
	inflight map[string]*slot
	// resumed holds the running rows this process has resumed. A running
	// row that is not executing and not in it was left by an earlier
	// process; one that is in it and stopped without finishing is left for
	// the next start rather than retried in a loop.
	resumed map[string]bool
	// ended holds the runs whose execution returned since the current
	// dispatch began: its snapshot may still show them queued or running,
	// and starting them again from it would be a wasted start.
	ended  map[string]bool
	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
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
		busy: make(map[string]bool), inflight: make(map[string]*slot), resumed: make(map[string]bool),
		ended: make(map[string]bool), wake: make(chan struct{}, 1)}
}

// Share makes the queue one worker among several on one database: holder
// names this worker in the session leases (unique per process) and ttl is
// how long a lease outlives a dead worker. Call it before Open.
func (q *Queue) Share(c Claimer, holder string, ttl time.Duration) {
	q.share = &shared{store: c, holder: holder, ttl: ttl, held: make(map[string]bool), retryAt: make(map[string]time.Time)}
	// Nothing announces a lease expiring: the backstop poll is what takes a
	// dead worker's sessions over, so it runs well inside the TTL.
	q.Poll = min(q.Poll, time.Second, max(ttl/3, 10*time.Millisecond))
}

// Open starts the dispatcher (and, shared, the lease heartbeat).
func (q *Queue) Open() error {
	q.ctx, q.cancel = context.WithCancel(context.Background())
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		q.loop()
	}()
	if q.share != nil {
		q.wg.Add(1)
		go func() {
			defer q.wg.Done()
			q.heartbeat()
		}()
	}
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
	case <-ctx.Done():
		return ctx.Err()
	}
	if q.share == nil {
		return nil
	}
	// The interrupted runs stay running: giving their sessions up lets
	// another worker resume them now rather than after the TTL.
	held := make([]string, 0, len(q.share.held))
	for sid := range q.share.held {
		held = append(held, sid)
	}
	clear(q.share.held)
	return q.share.store.ReleaseSessions(ctx, held, q.share.holder)
}

// Notify tells the dispatcher a run was queued or a slot freed.
func (q *Queue) Notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Cancel interrupts a run that is executing here and reports whether it
// was. Shared, a cancel asked of another worker reaches this one as a
// notification (the daemon calls Cancel with its id) or, if that is lost,
// at the next lease heartbeat.
func (q *Queue) Cancel(runID string) bool {
	ok, _ := q.interrupt(runID)
	return ok
}

// interrupt cancels runID's execution here, reporting whether it executes
// here and whether this call is what cancelled it.
func (q *Queue) interrupt(runID string) (executing, first bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, ok := q.inflight[runID]
	if !ok {
		return false, false
	}
	first = !s.userCancel
	s.userCancel = true
	s.cancel()
	return true, first
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

// dispatch starts every runnable run: running rows left by an earlier
// process first, then queued rows in acceptance order. The running rows it
// picks are marked resumed in one transaction before any of them starts,
// so a restart with many runs in flight costs one write, not one per run.
// A running row beyond the concurrency limit stays a running row and
// resumes, still ahead of queued rows, when a slot frees.
func (q *Queue) dispatch() {
	if q.ctx.Err() != nil {
		return
	}
	if q.share != nil {
		q.dispatchShared()
		return
	}
	q.mu.Lock()
	clear(q.ended)
	full := len(q.inflight) >= q.max
	q.mu.Unlock()
	if full {
		return // a slot's end wakes the next dispatch
	}
	// One statement: a run moving from queued to running between two
	// reads would otherwise look like a crash leftover.
	live, err := q.store.LiveHeads(q.ctx)
	if err != nil {
		if q.ctx.Err() == nil {
			q.logger.Error("list live runs", "err", err)
		}
		return
	}
	picks, resume := q.pick(live)
	if len(resume) > 0 {
		// No slot is taken yet: a cancel arriving meanwhile finishes the
		// run directly, and its start then finds it final.
		if _, err := q.store.ResumeRuns(q.ctx, resume); err != nil && q.ctx.Err() == nil {
			// Not fatal: each run's own start writes its resume instead.
			q.logger.Warn("mark runs resumed", "runs", len(resume), "err", err)
		}
		q.logger.Info("resuming runs left running", "runs", len(resume))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range picks {
		if q.ctx.Err() != nil {
			return // shutting down: a picked run stays for the next start
		}
		if len(q.inflight) >= q.max || q.busy[r.SessionID] || q.inflight[r.ID] != nil {
			continue
		}
		q.start(r)
	}
}

// pick chooses from a snapshot of live runs the ones to start now, within
// the free slots and one per idle session, and which of them are running
// rows to resume. A running row is resumed once per process: one this
// process resumed that stopped without finishing waits for the next start
// rather than looping.
func (q *Queue) pick(live []store.RunHead) (picks []store.RunHead, resume []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	free := q.max - len(q.inflight)
	sessions := make(map[string]bool)
	for _, r := range live {
		if len(picks) >= free {
			break
		}
		if q.busy[r.SessionID] || sessions[r.SessionID] || q.inflight[r.ID] != nil || q.ended[r.ID] {
			continue
		}
		if r.Status == store.StatusRunning {
			if q.resumed[r.ID] {
				continue
			}
			q.resumed[r.ID] = true
			resume = append(resume, r.ID)
		}
		sessions[r.SessionID] = true
		picks = append(picks, r)
	}
	return picks, resume
}

// start launches r; q.mu is held.
func (q *Queue) start(r store.RunHead) {
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
			q.ended[r.ID] = true
			if q.share != nil {
				q.share.retryAt[r.ID] = time.Now().Add(q.Poll)
			}
			q.mu.Unlock()
			q.Notify()
		}()
		q.exec(ctx, r, func() bool {
			q.mu.Lock()
			defer q.mu.Unlock()
			return s.userCancel
		})
	}()
}
