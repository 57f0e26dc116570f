package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// SessionLeases tells whether this worker still holds a session's lease,
// when several workers share one database. A run asks at each turn, before
// its model call and tools; and every write of the run carries Guard's
// context, so the store verifies the lease inside the write's own
// transaction and refuses it (store.ErrSessionLeaseLost) once another
// worker may hold the session. Either way the run stops there without
// writing, and the worker that took the session over resumes it by the
// journal rules of a restart.
type SessionLeases interface {
	HoldsSession(ctx context.Context, sessionID string) (bool, error)
	// Guard returns ctx whose store writes verify this worker's lease on
	// sessionID in their transaction.
	Guard(ctx context.Context, sessionID string) context.Context
}

// leaseAhead is how far ahead a lease seen live by the run's last write
// must still run for a turn's check to take it as held: a margin for the
// clocks of the workers, which compare expiries with their own time.
const leaseAhead = time.Second

// errLeaseLost stops a run whose session another worker may now hold.
var errLeaseLost = errors.New("session lease lost")

// leaseLost reports whether err stopped the run because the lease went:
// at a turn's check, or refused inside a checkpoint's transaction.
func leaseLost(err error) bool {
	return errors.Is(err, errLeaseLost) || errors.Is(err, store.ErrSessionLeaseLost)
}

// guardLease is ctx with the run's writes bound to its session's lease;
// ctx itself on a database of one writer.
func (e *Engine) guardLease(ctx context.Context, sessionID string) context.Context {
	if e.o.Leases == nil {
		return ctx
	}
	return e.o.Leases.Guard(ctx, sessionID)
}

// holdsLease is nil when the run may go on writing: the check at the top
// of a turn, before its model call and tools.
//
// The run's writes verify the lease in their own transactions and note
// how long it was then held for (store.LeaseLiveUntil). While that is more
// than leaseAhead away no other worker can take the session over, so the
// check answers from it without a round trip to the database. The read is
// made when the run's last write is old against the lease's lifetime (a
// long model call or tool, or a stalled worker) and on every turn of a run
// whose writes carry no store lease guard.
func (x *execution) holdsLease(ctx context.Context) error {
	if x.e.o.Leases == nil {
		return nil
	}
	if until, ok := store.LeaseLiveUntil(ctx); ok && time.Until(until) > leaseAhead {
		return nil
	}
	return x.confirmLease(ctx)
}

// confirmLease is holdsLease asking the database whatever the run's writes
// saw: after a write failed, whether the worker can still reach the
// database and holds the session is the question.
func (x *execution) confirmLease(ctx context.Context) error {
	if x.e.o.Leases == nil {
		return nil
	}
	ok, err := x.e.o.Leases.HoldsSession(ctx, x.run.SessionID)
	if err != nil {
		return fmt.Errorf("%w: %v", errLeaseLost, err)
	}
	if !ok {
		return errLeaseLost
	}
	return nil
}
