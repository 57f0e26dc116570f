package store

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// runsChannel is the PostgreSQL notification channel a worker listens on:
// CreateRun notifies it in the run's own transaction (delivered at commit),
// and ReleaseSession after a session is given up, so idle workers claim at
// once instead of waiting for their backstop poll.
const runsChannel = "delta_runs"

// cancelChannel carries cancel requests between the workers of one
// database: RequestCancel notifies it with the run's id in its own
// statement, and every worker's RunListener hands the id on, so the worker
// executing that run interrupts it as a cancel on its own API would.
const cancelChannel = "delta_cancel"

// RunListener wakes a worker when any worker on the same PostgreSQL
// database queued a run or released a session, and hands on the ids of
// runs a worker was asked to cancel. It holds one connection of its own
// (LISTEN needs a session) and reconnects after losing it; a wake-up missed
// while disconnected is covered by the worker's poll, a cancel by its
// lease heartbeat (CancelRequestedRuns).
type RunListener struct {
	listener *pgListener
	c        chan struct{}
	onCancel func(runID string)
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// NewRunListener returns a listener on the PostgreSQL database at dsn.
func NewRunListener(dsn string, logger *slog.Logger) *RunListener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &RunListener{c: make(chan struct{}, 1)}
	l.listener = &pgListener{dsn: dsn, what: "run listener", channels: []string{runsChannel, cancelChannel}, logger: logger,
		on: func(n *pgconn.Notification) {
			if n.Channel == cancelChannel {
				if l.onCancel != nil && n.Payload != "" {
					l.onCancel(n.Payload)
				}
				return
			}
			l.wake()
		},
		lost: l.wake, // notifications sent while disconnected are lost: wake once
	}
	return l
}

// OnCancel sets what receives the id of each run any worker was asked to
// cancel, on the listener's goroutine (it must not block). Call it before
// Open.
func (l *RunListener) OnCancel(f func(runID string)) { l.onCancel = f }

// C receives a value after one or more notifications (coalesced).
func (l *RunListener) C() <-chan struct{} { return l.c }

// Open connects and starts listening; a first connection that fails is the
// error, later losses are retried.
func (l *RunListener) Open(ctx context.Context) error {
	conn, err := l.listener.connect(ctx)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.listener.run(lctx, conn)
	}()
	return nil
}

// Close stops listening and waits for the connection to close.
func (l *RunListener) Close(ctx context.Context) error {
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	return waitGoroutines(ctx, &l.wg)
}

func (l *RunListener) wake() {
	select {
	case l.c <- struct{}{}:
	default:
	}
}

// notifyRuns wakes the workers listening on this PostgreSQL database; in a
// transaction the notification is delivered at commit. SQLite has one
// process per database: nothing to wake.
func (s *Store) notifyRuns(ctx context.Context, q interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}) error {
	if !s.pg {
		return nil
	}
	_, err := q.ExecContext(ctx, "SELECT pg_notify('"+runsChannel+"', '')")
	return err
}
