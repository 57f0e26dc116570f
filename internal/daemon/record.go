package daemon

import (
	"context"
	"log/slog"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// recordEvent is how a tool keeps a durable event of its own: stamped with
// its run's owner and task like the engine's events, stored, then shown to
// live followers with the id the store gave it. A failed write is logged;
// the tool's answer does not depend on it.
func recordEvent(st *store.Store, b *event.Broker, logger *slog.Logger) func(context.Context, event.Event) {
	return func(ctx context.Context, e event.Event) {
		ctx = context.WithoutCancel(ctx)
		if r, err := st.Run(ctx, e.RunID); err == nil {
			e.Owner, e.TaskID = r.Owner, r.TaskID()
		}
		evs := []event.Event{e}
		if err := st.AddEvents(ctx, evs); err != nil {
			logger.Warn("event not stored", "event", e.Name, event.KeyRun, e.RunID, "err", err)
			return
		}
		b.Publish(evs[0])
	}
}
