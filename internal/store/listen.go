package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// runsChannel is the PostgreSQL notification channel a worker listens on:
// CreateRun notifies it in the run's own transaction (delivered at commit),
// and ReleaseSession after a session is given up, so idle workers claim at
// once instead of waiting for their backstop poll.
const runsChannel = "delta_runs"

// RunListener wakes a worker when any worker on the same PostgreSQL
// database queued a run or released a session. It holds one connection of
// its own (LISTEN needs a session) and reconnects after losing it; a wake-up
// missed while disconnected is covered by the worker's poll.
type RunListener struct {
	dsn    string
	logger *slog.Logger
	c      chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewRunListener returns a listener on the PostgreSQL database at dsn.
func NewRunListener(dsn string, logger *slog.Logger) *RunListener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &RunListener{dsn: dsn, logger: logger, c: make(chan struct{}, 1)}
}

// C receives a value after one or more notifications (coalesced).
func (l *RunListener) C() <-chan struct{} { return l.c }

// Open connects and starts listening; a first connection that fails is the
// error, later losses are retried.
func (l *RunListener) Open(ctx context.Context) error {
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.loop(lctx, conn)
	}()
	return nil
}

// Close stops listening and waits for the connection to close.
func (l *RunListener) Close(ctx context.Context) error {
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *RunListener) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, l.dsn)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", redactURL(l.dsn), err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+runsChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("listen on %s: %w", redactURL(l.dsn), err)
	}
	return conn, nil
}

func (l *RunListener) loop(ctx context.Context, conn *pgx.Conn) {
	backoff := 100 * time.Millisecond
	for {
		for conn != nil {
			_, err := conn.WaitForNotification(ctx)
			if err != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
				conn = nil
				if ctx.Err() != nil {
					return
				}
				l.logger.Warn("run listener lost its connection; reconnecting", "err", err)
				break
			}
			backoff = 100 * time.Millisecond
			l.wake()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		c, err := l.connect(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				l.logger.Warn("run listener reconnect", "err", err)
			}
			continue
		}
		conn = c
		// Notifications sent while disconnected are lost: wake once.
		l.wake()
	}
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
