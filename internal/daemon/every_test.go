package daemon

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
)

// every stops calling f once f says so, and stop returns only after the
// goroutine has, whichever of the two ended it.
func TestEveryStopsWhenToldOrWhenStopped(t *testing.T) {
	var calls atomic.Int32
	stopped := make(chan struct{})
	stop := every(context.Background(), 1, func() bool {
		if calls.Add(1) == 3 {
			close(stopped)
			return false
		}
		return true
	})
	<-stopped
	stop()
	if n := calls.Load(); n != 3 {
		t.Fatalf("f ran %d times, want 3 (it said stop on the third)", n)
	}

	calls.Store(0)
	stop = every(context.Background(), 1, func() bool { calls.Add(1); return true })
	for calls.Load() < 2 {
		runtime.Gosched() // let it tick
	}
	stop()
	after := calls.Load()
	for range 1000 {
		if calls.Load() != after {
			t.Fatal("f ran after stop returned")
		}
	}
}
