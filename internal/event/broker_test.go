package event

import "testing"

// TestBrokerRoute: with a route set, Publish reaches the subscribers only
// through the route's Deliver calls; without one it delivers directly.
func TestBrokerRoute(t *testing.T) {
	b := NewBroker()
	sub := b.Subscribe(8, nil)
	b.Publish(Event{ID: 1, Name: RunQueued})
	if e := <-sub.C; e.ID != 1 {
		t.Fatalf("unrouted publish delivered %+v", e)
	}
	var routed []Event
	b.Route(func(e Event) {
		routed = append(routed, e)
		if e.Ephemeral() {
			b.Deliver(e)
		}
	})
	b.Publish(Event{ID: 2, Name: RunStarted})
	b.Publish(Event{Name: TextDelta})
	if len(routed) != 2 {
		t.Fatalf("route saw %d events, want 2", len(routed))
	}
	select {
	case e := <-sub.C:
		if e.Name != TextDelta {
			t.Fatalf("subscriber got %s, want only the delta the route delivered", e.Name)
		}
	default:
		t.Fatal("the delta the route delivered did not arrive")
	}
	select {
	case e := <-sub.C:
		t.Fatalf("subscriber got %s past the route", e.Name)
	default:
	}
}

// TestBrokerSubscribeRun: a subscription to one run gets that run's events
// only, in order, alongside a subscription across runs; unsubscribing
// either leaves the other, and a slow one is dropped alone.
func TestBrokerSubscribeRun(t *testing.T) {
	b := NewBroker()
	all := b.Subscribe(16, nil)
	one := b.SubscribeRun(16, "run_a", nil)
	finished := b.SubscribeRun(1, "run_a", func(e Event) bool { return e.Terminal() })
	b.Publish(Event{ID: 1, RunID: "run_a", Name: RunStarted})
	b.Publish(Event{ID: 2, RunID: "run_b", Name: RunStarted})
	b.Publish(Event{ID: 3, RunID: "run_a", Name: RunFinished})
	for _, want := range []int64{1, 3} {
		if e := <-one.C; e.ID != want {
			t.Fatalf("run subscription got event %d, want %d", e.ID, want)
		}
	}
	if e := <-finished.C; e.ID != 3 {
		t.Fatalf("filtered run subscription got event %d, want 3", e.ID)
	}
	for _, want := range []int64{1, 2, 3} {
		if e := <-all.C; e.ID != want {
			t.Fatalf("subscription across runs got event %d, want %d", e.ID, want)
		}
	}
	b.Unsubscribe(one)
	if _, ok := <-one.C; ok {
		t.Fatal("unsubscribed run subscription still open")
	}
	if !b.Subscribed() {
		t.Fatal("Subscribed is false with two subscriptions left")
	}
	// finished has one slot, already emptied; two terminal events overflow it.
	b.Publish(Event{ID: 4, RunID: "run_a", Name: RunFinished})
	b.Publish(Event{ID: 5, RunID: "run_a", Name: RunFinished})
	if e := <-finished.C; e.ID != 4 {
		t.Fatalf("got %d, want 4 before the drop", e.ID)
	}
	if _, ok := <-finished.C; ok {
		t.Fatal("slow run subscription was not dropped")
	}
	b.Unsubscribe(all)
	b.Unsubscribe(all) // twice is safe
	if b.Subscribed() {
		t.Fatal("Subscribed is true with none left")
	}
}
