package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// With DELTA_DB=postgres://… the daemon is one worker among several on one
// database: no file lock and no single-writer lease; each worker claims
// sessions through their leases, wakes on the database's notifications and
// checks at each checkpoint that it still holds the session.

// workerHolder names this process in the session leases: the configured
// holder (host or machine id) with the pid and a random suffix, so two
// workers on one host, or a restarted one, never share a name.
func workerHolder(base string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base + "/" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b[:])
}

// sessionLeases answers the engine's lease check for one worker. A lease
// must stay live a third of the TTL past now, so a run never starts a
// write on a lease that could expire under it before the next renewal.
type sessionLeases struct {
	st     *store.Store
	holder string
	ttl    time.Duration
}

func (l sessionLeases) HoldsSession(ctx context.Context, sessionID string) (bool, error) {
	return l.st.HoldsSession(ctx, sessionID, l.holder, time.Now().Add(l.ttl/3))
}

// Guard binds a run's writes to this worker's lease: each write
// transaction verifies it while holding the lease row, so it needs no
// margin (a takeover waits for the transaction).
func (l sessionLeases) Guard(ctx context.Context, sessionID string) context.Context {
	return store.WithSessionLease(ctx, sessionID, l.holder)
}

// routeLive makes the event tail the one source of durable events for
// this worker's live streams: a durable event this process published is
// left to the tail, which hands it on when its commit's notification
// arrives (in the table's order, among the other workers' events, once,
// after the deltas sent ahead of it); a delta goes to the local followers
// at once and to the other workers through the tail.
// An event without an id that is not a delta (one whose write failed) is
// shown locally, as on a single daemon.
func routeLive(b *event.Broker, t *store.EventTail) {
	b.Route(func(e event.Event) {
		switch {
		case e.ID != 0:
			// committed: the tail's notification brings it
		case e.Ephemeral():
			b.Deliver(e)
			t.SendDelta(e)
		default:
			b.Deliver(e)
		}
	})
}

// joinWorkers binds the workspace to the database (the first worker
// records it, a different one is refused), starts the run listener, whose
// wake-ups and cancel requests reach the queue, and the event tail, which feeds the live
// streams with every worker's events. It runs before the API serves: no
// follower can see an event twice or miss one around the switch to the
// tail. It returns the closer of both.
func joinWorkers(ctx context.Context, cfg config.Config, p *parts, logger *slog.Logger) (func(context.Context) error, error) {
	if err := p.store.BindWorkspace(ctx, p.workspace); err != nil {
		return nil, err
	}
	tail := store.NewEventTail(p.store, cfg.DB, store.TailOptions{
		Holder: p.queue.Holder(), Deliver: p.broker.Deliver, Wanted: p.broker.Subscribed, Logger: logger,
	})
	if err := tail.Open(ctx); err != nil {
		return nil, err
	}
	routeLive(p.broker, tail)
	l := store.NewRunListener(cfg.DB, logger)
	// A cancel asked of any worker interrupts the run where it executes,
	// as a cancel asked of this one does; the others hold nothing of it.
	l.OnCancel(func(runID string) {
		if p.queue.Cancel(runID) {
			logger.Info("run cancelled by a request to another worker", event.KeyRun, runID)
		}
	})
	if err := l.Open(ctx); err != nil {
		return nil, errors.Join(err, tail.Close(ctx))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-l.C():
				p.queue.Notify()
			}
		}
	}()
	logger.Info("worker joined the shared database", "holder", p.queue.Holder(), "lease_ttl", cfg.LeaseTTL, "workspace", p.workspace)
	return func(ctx context.Context) error {
		close(done)
		wg.Wait()
		var errs []error
		if err := l.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close run listener: %w", err))
		}
		// Closed last, as it opened first; what is published after goes
		// nowhere, and the API has stopped serving by then.
		if err := tail.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}, nil
}
