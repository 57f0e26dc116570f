package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgListener is one PostgreSQL connection LISTENing on some channels,
// shared by the run listener and the event tail: it hands each
// notification to on, and after losing the connection reconnects with a
// backoff (100 ms doubling to 5 s) and calls lost, since notifications
// sent while disconnected are gone and the caller must catch up itself.
type pgListener struct {
	dsn      string
	what     string // names the listener in errors and logs
	channels []string
	logger   *slog.Logger
	on       func(*pgconn.Notification)
	lost     func()
}

// connect opens a connection and listens on every channel.
func (l *pgListener) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, pgConnDSN(l.dsn))
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", l.what, redactURL(l.dsn), err)
	}
	for _, ch := range l.channels {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("%s on %s: %w", l.what, redactURL(l.dsn), err)
		}
	}
	return conn, nil
}

// run waits for notifications on conn, and on the connections that
// replace it, until ctx ends.
func (l *pgListener) run(ctx context.Context, conn *pgx.Conn) {
	backoff := 100 * time.Millisecond
	for {
		for conn != nil {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
				conn = nil
				if ctx.Err() != nil {
					return
				}
				l.logger.Warn(l.what+" lost its connection; reconnecting", "err", err)
				break
			}
			backoff = 100 * time.Millisecond
			l.on(n)
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
				l.logger.Warn(l.what+" reconnect", "err", err)
			}
			continue
		}
		conn = c
		l.lost()
	}
}

// waitGoroutines waits until wg's goroutines are done, or until ctx ends,
// whose error it returns: the Close of the run listener and of the event
// tail, once they have cancelled their goroutines.
func waitGoroutines(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
