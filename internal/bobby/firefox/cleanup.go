package firefox

import (
	"context"
	"time"
)

// cleanupTimeout bounds the commands that undo a call's setup: ending an
// event subscription, closing a tab that failed half-way. They run after
// the call's context may have ended, so they detach from its cancellation;
// bounded, a Firefox that does not answer (a page whose script never
// yields, a hung content process) cannot hold the call past its deadline.
// A subscription left behind goes with the session.
const cleanupTimeout = 2 * time.Second

// cleanupCtx is the context of a cleanup command of a call made under ctx:
// ctx's values, none of its cancellation, and cleanupTimeout.
func cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
