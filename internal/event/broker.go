package event

import "sync"

// Broker fans events out to live subscribers.
//
// Delivery is lossy by design: a subscriber whose buffer is full is dropped
// (its channel closed), never blocking the run that publishes. Durable
// events can always be re-read from the store by ID, so a dropped listener
// resumes from its last seen ID; deltas are best-effort.
type Broker struct {
	mu   sync.Mutex
	subs map[*Sub]struct{}
}

// Sub is one live subscription. Read C until it is closed.
type Sub struct {
	C      <-chan Event
	c      chan Event
	filter func(Event) bool
	closed bool
}

// NewBroker returns an empty broker.
func NewBroker() *Broker { return &Broker{subs: make(map[*Sub]struct{})} }

// Subscribe registers a listener for events accepted by filter (nil = all)
// with a buffer of size buf.
func (b *Broker) Subscribe(buf int, filter func(Event) bool) *Sub {
	c := make(chan Event, buf)
	s := &Sub{C: c, c: c, filter: filter}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Unsubscribe removes s and closes its channel. Safe to call twice.
func (b *Broker) Unsubscribe(s *Sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drop(s)
}

func (b *Broker) drop(s *Sub) {
	delete(b.subs, s)
	if !s.closed {
		s.closed = true
		close(s.c)
	}
}

// Publish delivers e to every matching subscriber without blocking.
func (b *Broker) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
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
