package workflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetained(t *testing.T) {
	r := NewRetained[string](8)
	if _, ok := r.Get("p"); ok {
		t.Fatal("empty store answered")
	}
	e := r.Epoch("p")
	if !r.PutAt("p", e, "snap1") {
		t.Fatal("PutAt at current epoch refused")
	}
	if v, ok := r.Get("p"); !ok || v != "snap1" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	// A snapshot started before an invalidation must not land after it.
	stale := r.Epoch("p")
	r.Invalidate("p")
	if r.PutAt("p", stale, "stale") {
		t.Error("stale PutAt accepted")
	}
	if _, ok := r.Get("p"); ok {
		t.Error("invalidated page still answers")
	}
	if !r.PutAt("p", r.Epoch("p"), "snap2") {
		t.Error("fresh PutAt refused")
	}
	r.Forget("p")
	if _, ok := r.Get("p"); ok {
		t.Error("forgotten page answers")
	}
	// An epoch from before Forget never matches the new entry.
	if r.PutAt("p", stale, "x") {
		t.Error("pre-Forget epoch accepted")
	}
}

func TestRetainedBounded(t *testing.T) {
	r := NewRetained[int](3)
	for i := range 5 {
		p := fmt.Sprint("p", i)
		r.PutAt(p, r.Epoch(p), i)
	}
	n := 0
	for i := range 5 {
		if _, ok := r.Get(fmt.Sprint("p", i)); ok {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d entries kept, want 3", n)
	}
	if _, ok := r.Get("p4"); !ok {
		t.Error("newest entry evicted")
	}
}

func TestIdempotency(t *testing.T) {
	c := NewIdempotency[string](4)
	ctx := context.Background()
	var runs atomic.Int32
	run := func() string { return fmt.Sprint("outcome-", runs.Add(1)) }

	v, replayed, err := c.Do(ctx, "s1", "k", "fp", run)
	if err != nil || replayed || v != "outcome-1" {
		t.Fatalf("first Do = %q, %v, %v", v, replayed, err)
	}
	v, replayed, err = c.Do(ctx, "s1", "k", "fp", run)
	if err != nil || !replayed || v != "outcome-1" || runs.Load() != 1 {
		t.Fatalf("retry = %q, %v, %v (runs %d)", v, replayed, err, runs.Load())
	}
	if _, _, err := c.Do(ctx, "s1", "k", "other", run); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Errorf("different request same key err = %v", err)
	}
	// Another session has its own key space.
	if v, replayed, _ := c.Do(ctx, "s2", "k", "fp", run); replayed || v != "outcome-2" {
		t.Errorf("other scope = %q, %v", v, replayed)
	}
	c.ForgetScope("s1")
	if _, replayed, _ := c.Do(ctx, "s1", "k", "fp", run); replayed {
		t.Error("forgotten scope replayed")
	}
}

func TestIdempotencyWaitsForInFlight(t *testing.T) {
	c := NewIdempotency[int](4)
	release := make(chan struct{})
	started := make(chan struct{})
	var runs atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _, _ = c.Do(context.Background(), "s", "k", "fp", func() int {
			runs.Add(1)
			close(started)
			<-release
			return 42
		})
	}()
	<-started
	got := make(chan int, 1)
	go func() {
		v, replayed, err := c.Do(context.Background(), "s", "k", "fp", func() int { runs.Add(1); return -1 })
		if err != nil || !replayed {
			t.Errorf("waiter: %v, %v", replayed, err)
		}
		got <- v
	}()
	// A waiter whose context ends gives up with the context error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.Do(ctx, "s", "k", "fp", func() int { return -2 }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter err = %v", err)
	}
	close(release)
	select {
	case v := <-got:
		if v != 42 {
			t.Errorf("waiter got %d, want the first outcome 42", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter never returned")
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Errorf("fn ran %d times", runs.Load())
	}
}

func TestIdempotencyBounded(t *testing.T) {
	c := NewIdempotency[int](2)
	for i := range 5 {
		_, _, _ = c.Do(context.Background(), "s", fmt.Sprint(i), "", func() int { return i })
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2", c.Len())
	}
	if v, replayed, _ := c.Do(context.Background(), "s", "4", "", func() int { return -1 }); !replayed || v != 4 {
		t.Errorf("newest key lost: %d %v", v, replayed)
	}
}
