package form

import (
	"context"
	"sync"
	"time"
)

// watcher follows what a submit causes on the page: navigation of the main
// frame and network requests, as the engine reports them (Page.Watch). It
// subscribes before the click, so nothing the click triggers is missed.
type watcher struct {
	stopWatch func()
	kick      chan struct{} // a buffered nudge on every event

	mu sync.Mutex
	st watchState
}

type watchState struct {
	navRequested bool
	// navigated: a cross-document navigation of the main frame committed.
	// A fragment change or history.pushState is sameDocument instead: the
	// page did not leave, so it proves nothing about a submit.
	navigated    bool
	sameDocument bool
	loaded       bool
	requests     int
	pending      map[string]bool
	// seen are the requests the submit started, in order; index maps an id
	// to its entry (a redirect keeps its id).
	seen  []seenRequest
	index map[string]int
	// early holds what arrived about a request before the request itself:
	// an engine may report each event type on its own goroutine, so a
	// response or a finish can be applied before the request that it
	// belongs to.
	early        map[string]*seenRequest
	lastActivity time.Time
}

// seenRequest is one request the submit started and how it ended.
type seenRequest struct {
	method string
	url    string
	typ    string // Chromium's resource type name
	frame  string
	status int64  // HTTP status of the final response; 0 before one arrives
	failed string // the network error, when the request failed
	done   bool
}

func newWatchState() watchState {
	return watchState{pending: map[string]bool{}, index: map[string]int{}, early: map[string]*seenRequest{}, lastActivity: time.Now()}
}

// watch subscribes to the events of the page.
func watch(ctx context.Context, p Page) (*watcher, error) {
	w := &watcher{kick: make(chan struct{}, 1), st: newWatchState()}
	stop, err := p.Watch(ctx, w.event)
	if err != nil {
		return nil, err
	}
	w.stopWatch = stop
	return w, nil
}

// event applies one report of the page; any report is activity.
func (w *watcher) event(e Event) {
	w.mu.Lock()
	w.st.apply(e)
	w.st.lastActivity = time.Now()
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (st *watchState) apply(e Event) {
	switch e.Kind {
	case EventRequest:
		st.request(e)
	case EventResponse:
		st.entry(e.Request).status = e.Status
	case EventFinished:
		delete(st.pending, e.Request)
		st.entry(e.Request).done = true
	case EventFailed:
		delete(st.pending, e.Request)
		r := st.entry(e.Request)
		r.done = true
		r.failed = e.Failed
	case EventNavRequested:
		st.navRequested = true
	case EventNavigated:
		st.navigated = true
		st.loaded = false
	case EventSameDocument:
		st.sameDocument = true
		if !st.navigated {
			st.navRequested = false // the requested navigation stayed in the document
		}
	case EventLoaded:
		if st.navigated {
			st.loaded = true
		}
	}
}

// request records a request the submit started. What already arrived about
// it (its response, its end) is applied, and a request that already ended
// is not pending.
func (st *watchState) request(e Event) {
	// Long-lived streams never finish; they must not hold quiet off.
	if e.Type == "EventSource" || e.Type == "WebSocket" {
		return
	}
	if i, ok := st.index[e.Request]; ok { // a redirect: same request, new URL
		if e.URL != "" {
			st.seen[i].url = e.URL
		}
		if !st.seen[i].done {
			st.pending[e.Request] = true
		}
		return
	}
	st.requests++
	r := seenRequest{typ: e.Type, frame: e.Frame, method: e.Method, url: e.URL}
	if n := st.early[e.Request]; n != nil {
		r.status, r.failed, r.done = n.status, n.failed, n.done
		delete(st.early, e.Request)
	}
	if !r.done {
		st.pending[e.Request] = true
	}
	st.index[e.Request] = len(st.seen)
	st.seen = append(st.seen, r)
}

// entry is the record of a request, or the note kept for one not seen yet.
func (st *watchState) entry(id string) *seenRequest {
	if i, ok := st.index[id]; ok {
		return &st.seen[i]
	}
	n := st.early[id]
	if n == nil {
		n = &seenRequest{}
		st.early[id] = n
	}
	return n
}

// clicked restarts the quiet clock at the moment of the submit.
func (w *watcher) clicked() {
	w.mu.Lock()
	w.st.lastActivity = time.Now()
	w.mu.Unlock()
}

// snapshot copies the state.
func (w *watcher) snapshot() watchState {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.st
	st.pending, st.index, st.early = nil, nil, nil
	st.seen = append([]seenRequest(nil), w.st.seen...)
	return st
}

func (w *watcher) pendingCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.st.pending)
}

// wait blocks until the submit settles: blocked by validation (invalid > 0
// before any navigation starts), navigated and loaded, or, for
// WaitNetworkQuiet, no request pending for v.QuietFor. timedOut reports
// that v.Timeout passed first.
func (w *watcher) wait(ctx context.Context, v Verify, invalid func() int) (blocked, timedOut bool, err error) {
	deadline := time.NewTimer(v.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		st := w.snapshot()
		pending := w.pendingCount()
		switch {
		case !st.navRequested && !st.navigated && invalid() > 0:
			return true, false, nil
		case st.navigated && st.loaded:
			return false, false, nil
		case v.WaitFor == WaitNetworkQuiet && !st.navRequested && !st.navigated && pending == 0 &&
			time.Since(st.lastActivity) >= v.QuietFor:
			return false, false, nil
		}
		select {
		case <-ctx.Done():
			return false, false, ctx.Err()
		case <-deadline.C:
			return false, true, nil
		case <-tick.C:
		case <-w.kick:
		}
	}
}

// stop ends the subscriptions and waits for their goroutines.
func (w *watcher) stop() { w.stopWatch() }
