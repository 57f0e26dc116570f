package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// holdLease acquires the single-writer lease for holder and renews it every
// ttl/3 until stop is called; stop also releases it and reports a failed
// release. The returned channel
// receives an error only when a different live holder owns the lease: a
// transient database error is logged and retried on the next tick, because
// the lease outlives two missed renewals and giving up would stop the runs
// for no reason.
func holdLease(ctx context.Context, st *store.Store, holder string, ttl time.Duration, logger *slog.Logger) (lost <-chan error, stop func() error, err error) {
	if _, err := st.AcquireLease(ctx, holder, ttl, time.Now()); err != nil {
		return nil, nil, fmt.Errorf("refusing to start: %w", err)
	}
	logger.Info("writer lease acquired", "holder", holder, "ttl", ttl)
	lostc := make(chan error, 1)
	stopRenewing := every(ctx, max(ttl/3, time.Millisecond), func() bool {
		_, err := st.AcquireLease(ctx, holder, ttl, time.Now())
		switch {
		case err == nil:
		case errors.Is(err, store.ErrLeaseHeld):
			lostc <- err
			return false
		case ctx.Err() == nil:
			logger.Warn("renew writer lease", "err", err)
		}
		return true
	})
	stop = func() error {
		stopRenewing()
		return st.ReleaseLease(context.WithoutCancel(ctx), holder)
	}
	return lostc, stop, nil
}

// every calls f every d on its own goroutine until ctx ends, f returns
// false or the returned stop is called; stop returns once that goroutine
// has, so f is not running after it.
func every(ctx context.Context, d time.Duration, f func() bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if !f() {
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
