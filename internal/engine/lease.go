package engine

import (
	"context"
	"errors"
	"fmt"
)

// SessionLeases tells whether this worker still holds a session's lease,
// when several workers share one database. A run asks at each turn and
// before each checkpoint; once the answer is no (or the database cannot
// say), the run stops there without writing, and the worker that took the
// session over resumes it by the journal rules of a restart.
type SessionLeases interface {
	HoldsSession(ctx context.Context, sessionID string) (bool, error)
}

// errLeaseLost stops a run whose session another worker may now hold.
var errLeaseLost = errors.New("session lease lost")

// holdsLease is nil when the run may go on writing.
func (x *execution) holdsLease(ctx context.Context) error {
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
