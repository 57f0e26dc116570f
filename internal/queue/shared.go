package queue

import (
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// dispatchShared claims runs for this worker's free slots and starts them.
// The claim passes over the sessions this worker is executing (it holds
// their leases; the heartbeat renews them), so it reads about as many runs
// as there are free slots. A session claimed but not started, and a session
// held whose run ended with no next run claimed, is released at once for
// another worker.
func (q *Queue) dispatchShared() {
	sh := q.share
	q.mu.Lock()
	clear(q.ended)
	free := q.max - len(q.inflight)
	var busy []string
	if free > 0 {
		busy = make([]string, 0, len(q.busy))
		for sid := range q.busy {
			busy = append(busy, sid)
		}
	}
	q.mu.Unlock()
	var claimed []store.Run
	if free > 0 {
		var err error
		claimed, err = sh.store.ClaimRuns(q.ctx, sh.holder, sh.ttl, time.Now(), free, busy)
		if err != nil {
			if q.ctx.Err() == nil {
				q.logger.Error("claim runs", "err", err)
			}
			return
		}
	}
	now := time.Now()
	var picks []store.Run
	var resume []string
	keep := make(map[string]bool)
	q.mu.Lock()
	for _, r := range claimed {
		sh.held[r.SessionID] = true
		// A run whose execution returned since this dispatch began may be
		// shown by the claim as it was before its end (still running or
		// queued): starting it from that would run it twice. The session
		// stays held; the end's Notify makes the next dispatch claim its
		// next run from a fresh read.
		if q.busy[r.SessionID] || q.inflight[r.ID] != nil || q.ended[r.ID] {
			keep[r.SessionID] = true
			continue
		}
		if t, ok := sh.retryAt[r.ID]; ok && now.Before(t) {
			continue // released below; tried again after the backoff
		}
		if len(picks) >= free {
			continue
		}
		delete(sh.retryAt, r.ID)
		keep[r.SessionID] = true
		picks = append(picks, r)
		if r.Status == store.StatusRunning {
			// Left running by a dead worker (or by this one, stopped
			// without finishing): the journal rules of a restart apply.
			resume = append(resume, r.ID)
		}
	}
	var release []string
	for sid := range sh.held {
		if !keep[sid] && !q.busy[sid] {
			release = append(release, sid)
			delete(sh.held, sid)
		}
	}
	for id, t := range sh.retryAt {
		if now.After(t.Add(sh.ttl)) {
			delete(sh.retryAt, id)
		}
	}
	q.mu.Unlock()
	if len(resume) > 0 {
		if _, err := sh.store.ResumeRuns(q.ctx, resume); err != nil && q.ctx.Err() == nil {
			// Not fatal: each run's own start writes its resume instead.
			q.logger.Warn("mark runs resumed", "runs", len(resume), "err", err)
		}
		q.logger.Info("resuming runs left running", "runs", len(resume), "holder", sh.holder)
	}
	q.mu.Lock()
	for _, r := range picks {
		if q.ctx.Err() != nil {
			q.mu.Unlock()
			return // shutting down: Close releases the sessions
		}
		q.start(store.RunHead{ID: r.ID, SessionID: r.SessionID, Status: r.Status, Request: r.Request})
	}
	q.mu.Unlock()
	// The releases are for the other workers: this one's picks start
	// first. They go in one write, however many runs just ended.
	if err := sh.store.ReleaseSessions(q.ctx, release, sh.holder); err != nil && q.ctx.Err() == nil {
		// Still held: the next dispatch (the poll at the latest) gives
		// them up again, rather than the other workers waiting the TTL.
		q.logger.Warn("release session leases", "sessions", len(release), "err", err)
		q.mu.Lock()
		for _, sid := range release {
			sh.held[sid] = true
		}
		q.mu.Unlock()
	}
}

// heartbeat renews this worker's session leases every third of the TTL. A
// lease another worker took over after the TTL is not renewed: the run on
// it stops at its next checkpoint, which asks the store. It then cancels
// the runs executing here whose cancel was requested: the backstop for a
// cancel notification this worker missed (its listener reconnecting).
func (q *Queue) heartbeat() {
	sh := q.share
	t := time.NewTicker(max(sh.ttl/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-q.ctx.Done():
			return
		case <-t.C:
		}
		if _, err := sh.store.RenewSessionLeases(q.ctx, sh.holder, sh.ttl, time.Now()); err != nil && q.ctx.Err() == nil {
			q.logger.Warn("renew session leases", "holder", sh.holder, "err", err)
		}
		if q.Running() == 0 {
			continue
		}
		ids, err := sh.store.CancelRequestedRuns(q.ctx, sh.holder)
		if err != nil {
			if q.ctx.Err() == nil {
				q.logger.Warn("read cancel requests", "holder", sh.holder, "err", err)
			}
			continue
		}
		for _, id := range ids {
			if _, first := q.interrupt(id); first {
				q.logger.Info("run cancelled at the lease heartbeat", "run", id)
			}
		}
	}
}

// Holder is the name this worker's session leases carry ("" unshared).
func (q *Queue) Holder() string {
	if q.share == nil {
		return ""
	}
	return q.share.holder
}
