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
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(max(ttl/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, err := st.AcquireLease(ctx, holder, ttl, time.Now())
			switch {
			case err == nil:
			case errors.Is(err, store.ErrLeaseHeld):
				lostc <- err
				return
			case ctx.Err() == nil:
				logger.Warn("renew writer lease", "err", err)
			}
		}
	}()
	stop = func() error {
		close(done)
		wg.Wait()
		return st.ReleaseLease(context.WithoutCancel(ctx), holder)
	}
	return lostc, stop, nil
}
