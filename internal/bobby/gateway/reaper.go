package gateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
)

// reaper bounds the browser sessions of a long-lived `bobby serve`, which
// would otherwise accumulate browser contexts: past [http] max_sessions,
// creating a session first closes the least recently used one (of any
// principal), and a session no call used for [http] idle_timeout is closed
// by a background sweep. Closing a session closes its context and pages and
// evicts every workflow handle bound to it. A stdio process serves one
// client that owns its runtime, so the limits apply only once the gateway
// serves HTTP (HTTPHandler).
type reaper struct {
	max  int
	idle time.Duration

	enabled atomic.Bool
	start   sync.Once
	// admit serializes the cap check with the creation it admits, so
	// concurrent creates cannot overshoot the cap.
	admit sync.Mutex

	evicted atomic.Int64 // closed to make room under the cap
	reaped  atomic.Int64 // closed for being idle
}

// sweepEvery is how often the idle sweep runs: a quarter of the idle
// timeout, within [250ms, 1min], so a session outlives its timeout by at
// most a quarter of it.
func (r *reaper) sweepEvery() time.Duration {
	return min(max(r.idle/4, 250*time.Millisecond), time.Minute)
}

// enable turns the limits on and starts the idle sweep (once).
func (r *reaper) enable(g *Gateway) {
	r.start.Do(func() {
		r.enabled.Store(true)
		g.bg.Go(func() {
			t := time.NewTicker(r.sweepEvery())
			defer t.Stop()
			for {
				select {
				case <-g.closing:
					return
				case <-t.C:
					r.sweep(context.Background(), g)
				}
			}
		})
	})
}

// reserve makes room for one more session and holds the admission until
// release is called (after the new session is recorded).
func (r *reaper) reserve(ctx context.Context, g *Gateway) (release func(), err error) {
	if !r.enabled.Load() {
		return func() {}, nil
	}
	r.admit.Lock()
	for g.owners.count() >= r.max {
		id, ok := g.owners.leastRecent()
		if !ok {
			break
		}
		if err := g.closeByID(ctx, id); err != nil {
			r.admit.Unlock()
			return nil, err
		}
		r.evicted.Add(1)
		g.log.Info("closed the least recently used browser session to stay under max_sessions", "session", id, "max", r.max)
	}
	return r.admit.Unlock, nil
}

// sweep closes the sessions idle for longer than the timeout.
func (r *reaper) sweep(ctx context.Context, g *Gateway) {
	for _, id := range g.owners.idleSince(g.now().Add(-r.idle)) {
		if err := g.closeByID(ctx, id); err != nil {
			g.log.Warn("close idle browser session", "session", id, "err", err)
			continue
		}
		r.reaped.Add(1)
		g.log.Info("closed an idle browser session", "session", id, "idle", r.idle)
	}
}

// closeByID closes a session by id; one already gone is only forgotten.
func (g *Gateway) closeByID(ctx context.Context, id string) error {
	s, err := g.eng.session(id)
	if err != nil {
		g.owners.remove(id)
		g.forEachClient(func(cs *clientSession) { cs.wf.EvictSession(id) })
		if errors.Is(err, browser.ErrNotFound) {
			return nil
		}
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return g.closeSession(cctx, s)
}

// counts is what runtime_info reports about sessions.
func (r *reaper) counts(g *Gateway) map[string]any {
	g.sessionsMu.Lock()
	mcpSessions := len(g.sessions)
	g.sessionsMu.Unlock()
	return map[string]any{
		"browserSessions":    g.owners.count(),
		"mcpSessions":        mcpSessions,
		"maxSessions":        r.max,
		"idleTimeoutSeconds": int(r.idle / time.Second),
		"limited":            r.enabled.Load(),
		"evictedLRU":         r.evicted.Load(),
		"reapedIdle":         r.reaped.Load(),
	}
}
