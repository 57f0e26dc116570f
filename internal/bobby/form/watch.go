package form

import (
	"context"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// watcher follows what a submit causes on the page: navigation of the main
// frame and network requests. It subscribes before the click, so nothing the
// click triggers is missed.
type watcher struct {
	main   cdp.FrameID
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // a buffered nudge on every event

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
	pending      map[network.RequestID]bool
	// seen are the requests the submit started, in order; index maps an id
	// to its entry (a redirect keeps its id).
	seen  []seenRequest
	index map[network.RequestID]int
	// early holds what arrived about a request before the request itself:
	// each event type is read on its own goroutine, so a response or a
	// finish can be applied before the request that it belongs to.
	early        map[network.RequestID]*seenRequest
	lastActivity time.Time
}

// seenRequest is one request the submit started and how it ended.
type seenRequest struct {
	method string
	url    string
	typ    network.ResourceType
	frame  cdp.FrameID
	status int64  // HTTP status of the final response; 0 before one arrives
	failed string // the network error, when the request failed
	done   bool
}

// watch subscribes to the events of the page in ctx.
func watch(ctx context.Context, main cdp.FrameID) *watcher {
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{main: main, cancel: cancel, kick: make(chan struct{}, 1)}
	w.st.pending = map[network.RequestID]bool{}
	w.st.index = map[network.RequestID]int{}
	w.st.early = map[network.RequestID]*seenRequest{}
	w.st.lastActivity = time.Now()
	// Each Events call subscribes when it returns; the ranging happens on
	// goroutines that end when wctx is cancelled.
	consume(w, chromedp.Events(wctx, network.RequestWillBeSent), (*watchState).request)
	consume(w, chromedp.Events(wctx, network.ResponseReceived), (*watchState).response)
	consume(w, chromedp.Events(wctx, network.LoadingFinished), (*watchState).finished)
	consume(w, chromedp.Events(wctx, network.LoadingFailed), (*watchState).failedLoading)
	consume(w, chromedp.Events(wctx, page.FrameRequestedNavigation), func(st *watchState, e page.EventFrameRequestedNavigation) {
		if e.FrameID == w.main {
			st.navRequested = true
		}
	})
	consume(w, chromedp.Events(wctx, page.FrameStartedNavigating), func(st *watchState, e page.EventFrameStartedNavigating) {
		if e.FrameID == w.main && e.NavigationType != page.FrameStartedNavigatingNavigationTypeSameDocument {
			st.navRequested = true
		}
	})
	consume(w, chromedp.Events(wctx, page.FrameNavigated), func(st *watchState, e page.EventFrameNavigated) {
		if e.Frame != nil && (e.Frame.ID == w.main || e.Frame.ParentID == "") {
			st.navigated = true
			st.loaded = false
		}
	})
	consume(w, chromedp.Events(wctx, page.NavigatedWithinDocument), func(st *watchState, e page.EventNavigatedWithinDocument) {
		if e.FrameID == w.main {
			st.sameDocument = true
			if !st.navigated {
				st.navRequested = false // the requested navigation stayed in the document
			}
		}
	})
	consume(w, chromedp.Events(wctx, page.LoadEventFired), func(st *watchState, _ page.EventLoadEventFired) {
		if st.navigated {
			st.loaded = true
		}
	})
	return w
}

// request records a request the submit started. What already arrived about
// it (its response, its end) is applied, and a request that already ended
// is not pending.
func (st *watchState) request(e network.EventRequestWillBeSent) {
	// Long-lived streams never finish; they must not hold quiet off.
	if e.Type == network.ResourceTypeEventSource || e.Type == network.ResourceTypeWebSocket {
		return
	}
	if i, ok := st.index[e.RequestID]; ok { // a redirect: same request, new URL
		if e.Request != nil {
			st.seen[i].url = e.Request.URL
		}
		if !st.seen[i].done {
			st.pending[e.RequestID] = true
		}
		return
	}
	st.requests++
	r := seenRequest{typ: e.Type, frame: e.FrameID}
	if n := st.early[e.RequestID]; n != nil {
		r.status, r.failed, r.done = n.status, n.failed, n.done
		delete(st.early, e.RequestID)
	}
	if e.Request != nil {
		r.method, r.url = e.Request.Method, e.Request.URL
	}
	if !r.done {
		st.pending[e.RequestID] = true
	}
	st.index[e.RequestID] = len(st.seen)
	st.seen = append(st.seen, r)
}

// entry is the record of a request, or the note kept for one not seen yet.
func (st *watchState) entry(id network.RequestID) *seenRequest {
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

func (st *watchState) response(e network.EventResponseReceived) {
	if e.Response != nil {
		st.entry(e.RequestID).status = e.Response.Status
	}
}

func (st *watchState) finished(e network.EventLoadingFinished) {
	delete(st.pending, e.RequestID)
	st.entry(e.RequestID).done = true
}

func (st *watchState) failedLoading(e network.EventLoadingFailed) {
	delete(st.pending, e.RequestID)
	r := st.entry(e.RequestID)
	r.done = true
	r.failed = e.ErrorText
	if e.Canceled {
		r.failed = "canceled"
	}
}

// consume ranges over one event stream on its own goroutine.
func consume[E any](w *watcher, events func(func(E, error) bool), apply func(*watchState, E)) {
	w.wg.Go(func() {
		for e, err := range events {
			if err != nil {
				return
			}
			w.mu.Lock()
			apply(&w.st, e)
			w.st.lastActivity = time.Now()
			w.mu.Unlock()
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	})
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
func (w *watcher) stop() {
	w.cancel()
	w.wg.Wait()
}
