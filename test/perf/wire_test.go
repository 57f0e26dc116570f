package perf

import (
	"bytes"
	"context"
	"testing"

	"github.com/deltaharness/delta/internal/model/scripted"
)

// TestDeltaSendsTheFloorsBytes runs the same task through the floor and
// through Delta, durably (each step of read-only calls committing ahead of
// the next call, the encoded prefix reused from call to call), and checks
// that every request Delta sent is, byte for byte, the one the floor sent
// at that turn: what the comparison measures is the same wire work.
func TestDeltaSendsTheFloorsBytes(t *testing.T) {
	const turns = 12
	fake, err := scripted.Start(script(turns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	r := newRigAt(t, turns, 1, fake.URL())
	ctx := context.Background()
	if steps, err := r.floor(ctx); err != nil || steps != turns {
		t.Fatalf("floor: %d steps, %v", steps, err)
	}
	floor := fake.Requests()
	fake.ForgetRequests()
	if steps, err := r.delta(ctx); err != nil || steps != turns {
		t.Fatalf("delta: %d steps, %v", steps, err)
	}
	delta := fake.Requests()
	if len(floor) != turns || len(delta) != turns {
		t.Fatalf("%d floor and %d delta requests, want %d each", len(floor), len(delta), turns)
	}
	for i := range delta {
		if len(delta[i].Raw) == 0 {
			t.Fatalf("turn %d: no request body recorded", i+1)
		}
		if !bytes.Equal(delta[i].Raw, floor[i].Raw) {
			t.Fatalf("turn %d: delta sent\n%s\nthe floor sent\n%s", i+1, delta[i].Raw, floor[i].Raw)
		}
	}
}
