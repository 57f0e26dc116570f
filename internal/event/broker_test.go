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
