package form

import (
	"testing"

	"github.com/chromedp/cdproto/network"
)

// TestWatchStateIsOrderIndependent: each event type is read on its own
// goroutine, so a request's response and end can be applied before the
// request itself. Every order must leave the same record: the status kept,
// the request done and not pending.
func TestWatchStateIsOrderIndependent(t *testing.T) {
	const id = network.RequestID("r1")
	req := func(st *watchState) {
		st.request(network.EventRequestWillBeSent{RequestID: id, Type: network.ResourceTypeFetch,
			Request: &network.Request{Method: "POST", URL: "http://127.0.0.1/accepted"}})
	}
	resp := func(st *watchState) {
		st.response(network.EventResponseReceived{RequestID: id, Response: &network.Response{Status: 201}})
	}
	fin := func(st *watchState) { st.finished(network.EventLoadingFinished{RequestID: id}) }
	orders := map[string][]func(*watchState){
		"request, response, finished": {req, resp, fin},
		"response, request, finished": {resp, req, fin},
		"finished, response, request": {fin, resp, req},
		"response, finished, request": {resp, fin, req},
		"request, finished, response": {req, fin, resp},
	}
	for name, order := range orders {
		st := watchState{pending: map[network.RequestID]bool{}, index: map[network.RequestID]int{}, early: map[network.RequestID]*seenRequest{}}
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
