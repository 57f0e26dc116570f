package browser

import (
	"context"
	"sync"
	"time"
)

// The warm spare hides the fixed cost of a session's first page. Opening a
// target in a fresh browser context (its own window) and attaching to it
// (runtime, page, network, DOM and CSS domains, the request guard) costs
// Chromium 150–250 ms on a small machine: more than the navigation the
// agent asked for. So the runtime keeps one such context with one blank,
// attached page ready: NewSession hands it out, its first NewPage returns
// the blank page, and the next spare is made in the background.
//
// The next spare is made once the new session has started: when its first
// navigation ended (completed or failed), when it closes, or after
// DefaultRefillDelay for a session that does not navigate. Made at once, it
// would compete with that navigation for the same few cores (a new
// renderer process and a dozen CDP round trips): on a loaded 2-core machine
// that made the first navigation of a warm start about three times slower.
// A start that arrives before the next spare is made opens its own context,
// as without a spare.
//
// A spare is not listed and nothing navigates it before it is handed out;
// it belongs to one browser process and is thrown away after a relaunch or
// when it died. The execution policy's fingerprint is applied when the page
// is handed out, still before its first navigation.

// takeSpare returns the spare made in inst, waiting for a refill that is
// already under way (a parallel open would only compete with it), or nil.
func (r *Runtime) takeSpare(ctx context.Context, inst *instance) *Session {
	if r.opts.NoWarmSpare {
		return nil
	}
	r.mu.Lock()
	wait := r.filling
	r.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil
		}
	}
	r.mu.Lock()
	s := r.spare
	r.spare = nil
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	if s.inst != inst || s.err() != nil {
		s.discard(ctx)
		return nil
	}
	return s
}

// DefaultRefillDelay bounds how long a new session defers the next spare
// when it does not navigate (session_create, then page_open, then a pause).
const DefaultRefillDelay = 2 * time.Second

// refillAfterStart makes the next spare when s has started (see
// Session.started), or after r.refillDelay.
func (r *Runtime) refillAfterStart(s *Session) {
	if r.opts.NoWarmSpare {
		return
	}
	var once sync.Once
	fire := func() { once.Do(r.refill) }
	t := time.AfterFunc(r.refillDelay, fire)
	s.mu.Lock()
	s.startOver = func() { t.Stop(); fire() }
	s.mu.Unlock()
}

// refill starts making the next spare unless one exists or is being made.
func (r *Runtime) refill() {
	if r.opts.NoWarmSpare {
		return
	}
	r.mu.Lock()
	if r.state != stateOpen || r.inst == nil || r.spare != nil || r.filling != nil {
		r.mu.Unlock()
		return
	}
	inst := r.inst
	done := make(chan struct{})
	r.filling = done
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		s, err := r.makeSpare(inst)
		r.mu.Lock()
		r.filling = nil
		close(done)
		if err == nil && r.state == stateOpen && r.inst == inst && r.spare == nil {
			r.spare, s = s, nil
		}
		r.mu.Unlock()
		if err != nil {
			r.log.Debug("warm spare not made", "err", err)
		}
		if s != nil {
			s.discard(context.Background())
		}
	}()
}

// makeSpare opens a browser context in inst with one blank, attached page.
func (r *Runtime) makeSpare(inst *instance) (*Session, error) {
	ctx := context.Background()
	s, err := r.openSession(ctx, inst, "", ExecutionPolicy{})
	if err != nil {
		return nil, err
	}
	if _, err := s.openPage(ctx, func(p *Page) error { s.prepared = p; return nil }); err != nil {
		s.discard(ctx)
		return nil, err
	}
	return s, nil
}

// adopt makes a taken spare the session NewSession was asked for.
func (s *Session) adopt(profile string, policy ExecutionPolicy) {
	now := time.Now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Profile, s.policy, s.createdAt, s.lastUsed = profile, policy, now, now
}

// discard closes a session that was never handed out, or failed half-way.
func (s *Session) discard(ctx context.Context) {
	if err := s.close(context.WithoutCancel(ctx)); err != nil {
		s.rt.log.Debug("discard session", "session", s.ID, "err", err)
	}
}
