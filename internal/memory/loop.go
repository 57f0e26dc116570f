package memory

import (
	"context"
	"log/slog"
)

// wakeLoop is the loop the Reflector and the Promoter share: drain what is
// owed, then again on every notify, until ctx ends. One pending wake is
// kept, and one is enough: the next drain reads everything owed.
type wakeLoop struct{ wake chan struct{} }

func newWakeLoop() wakeLoop { return wakeLoop{wake: make(chan struct{}, 1)} }

// notify asks the loop to drain; it never blocks.
func (l wakeLoop) notify() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run calls drain once, then on every notify, until ctx ends; a failed
// drain is logged as what and retried on the next wake.
func (l wakeLoop) run(ctx context.Context, drain func(context.Context) error, logger *slog.Logger, what string) {
	for {
		if err := drain(ctx); err != nil && ctx.Err() == nil {
			logger.Warn(what, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		}
	}
}
