package event

import (
	"sync"
	"sync/atomic"
)

// Broker fans events out to live subscribers.
//
// Delivery is lossy by design: a subscriber whose buffer is full is dropped
// (its channel closed), never blocking the run that publishes. Durable
// events can always be re-read from the store by ID, so a dropped listener
// resumes from its last seen ID; deltas are best-effort.
//
// A broker may be routed (Route): then Publish hands every event to the
// route, which decides how it reaches the subscribers through Deliver. A
// worker on a shared database routes its durable events through the
// database, so its followers see every worker's events in one order.
//
// A subscription to one run's events (SubscribeRun) is indexed by the run,
// so publishing an event costs the subscribers of its run plus those that
// watch every run, not one filter call per subscriber of the process: with
// hundreds of runs each followed by a waiter, a scan of all of them per
// event would grow with the square of the runs in flight.
type Broker struct {
	mu    sync.Mutex
	subs  map[*Sub]struct{}            // subscriptions across runs
	runs  map[string]map[*Sub]struct{} // subscriptions to one run, by run id
	n     int                          // all subscriptions
	route atomic.Pointer[func(Event)]
}

// Sub is one live subscription. Read C until it is closed.
type Sub struct {
	C      <-chan Event
	c      chan Event
	filter func(Event) bool
	run    string // set for a subscription to one run
	closed bool
}

// NewBroker returns an empty broker.
func NewBroker() *Broker {
	return &Broker{subs: make(map[*Sub]struct{}), runs: make(map[string]map[*Sub]struct{})}
}

// Subscribe registers a listener for events accepted by filter (nil = all)
// with a buffer of size buf.
func (b *Broker) Subscribe(buf int, filter func(Event) bool) *Sub {
	c := make(chan Event, buf)
	s := &Sub{C: c, c: c, filter: filter}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.n++
	b.mu.Unlock()
	return s
}

// SubscribeRun registers a listener for the events of run runID accepted
// by filter (nil = all of that run's) with a buffer of size buf.
func (b *Broker) SubscribeRun(buf int, runID string, filter func(Event) bool) *Sub {
	c := make(chan Event, buf)
	s := &Sub{C: c, c: c, filter: filter, run: runID}
	b.mu.Lock()
	set := b.runs[runID]
	if set == nil {
		set = make(map[*Sub]struct{})
		b.runs[runID] = set
	}
	set[s] = struct{}{}
	b.n++
	b.mu.Unlock()
	return s
}

// Subscribed reports whether anyone subscribes now.
func (b *Broker) Subscribed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n > 0
}

// Unsubscribe removes s and closes its channel. Safe to call twice.
func (b *Broker) Unsubscribe(s *Sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drop(s)
}

func (b *Broker) drop(s *Sub) {
	if s.closed {
		return
	}
	s.closed = true
	close(s.c)
	b.n--
	if s.run == "" {
		delete(b.subs, s)
		return
	}
	set := b.runs[s.run]
	delete(set, s)
	if len(set) == 0 {
		delete(b.runs, s.run)
	}
}

// Route makes Publish hand every event to fn instead of the subscribers;
// fn must not block and reaches them with Deliver. Every publisher of the
// process goes through it, so none can bypass the route.
func (b *Broker) Route(fn func(Event)) { b.route.Store(&fn) }

// Publish delivers e to every matching subscriber without blocking, or
// hands it to the route when one is set.
func (b *Broker) Publish(e Event) {
	if r := b.route.Load(); r != nil {
		(*r)(e)
		return
	}
	b.Deliver(e)
}

// Deliver delivers e to every matching subscriber without blocking,
// bypassing any route.
func (b *Broker) Deliver(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deliver(b.subs, e)
	if e.RunID != "" {
		b.deliver(b.runs[e.RunID], e)
	}
}

func (b *Broker) deliver(subs map[*Sub]struct{}, e Event) {
	for s := range subs {
		if s.filter != nil && !s.filter(e) {
			continue
		}
		select {
		case s.c <- e:
		default:
			b.drop(s) // slow consumer: drop it rather than stall the run
		}
	}
}
