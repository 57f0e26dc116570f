package form

import "testing"

// TestWatchStateIsOrderIndependent: an engine may report each event type on
// its own goroutine, so a request's response and end can be applied before
// the request itself. Every order must leave the same record: the status
// kept, the request done and not pending.
func TestWatchStateIsOrderIndependent(t *testing.T) {
	const id = "r1"
	req := func(st *watchState) {
		st.apply(Event{Kind: EventRequest, Request: id, Type: "Fetch", Method: "POST", URL: "http://127.0.0.1/accepted"})
	}
	resp := func(st *watchState) { st.apply(Event{Kind: EventResponse, Request: id, Status: 201}) }
	fin := func(st *watchState) { st.apply(Event{Kind: EventFinished, Request: id}) }
	orders := map[string][]func(*watchState){
		"request, response, finished": {req, resp, fin},
		"response, request, finished": {resp, req, fin},
		"finished, response, request": {fin, resp, req},
		"response, finished, request": {resp, fin, req},
		"request, finished, response": {req, fin, resp},
	}
	for name, order := range orders {
		st := newWatchState()
		for _, apply := range order {
			apply(&st)
		}
		if st.requests != 1 || len(st.seen) != 1 {
			t.Fatalf("%s: %d requests, %d seen", name, st.requests, len(st.seen))
		}
		r := st.seen[0]
		if r.status != 201 || !r.done || r.method != "POST" || len(st.pending) != 0 || len(st.early) != 0 {
			t.Errorf("%s: %+v, pending %v, early %v; want status 201, done, nothing pending", name, r, st.pending, st.early)
		}
	}
}

// TestWatchStateNavigation: a fragment change after a requested navigation
// is no navigation; a committed one waits for its load.
func TestWatchStateNavigation(t *testing.T) {
	st := newWatchState()
	st.apply(Event{Kind: EventNavRequested})
	st.apply(Event{Kind: EventSameDocument})
	if st.navRequested || st.navigated || !st.sameDocument {
		t.Errorf("fragment-only: %+v", st)
	}
	st.apply(Event{Kind: EventLoaded})
	if st.loaded {
		t.Error("a load before any navigation counted")
	}
	st.apply(Event{Kind: EventNavRequested})
	st.apply(Event{Kind: EventNavigated})
	st.apply(Event{Kind: EventLoaded})
	if !st.navigated || !st.loaded {
		t.Errorf("committed navigation: %+v", st)
	}
}
