package browser

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An evaluation cut off while a script holds the page's main thread has
// the script terminated, so the page answers the next call; the error says
// what happened.
func TestEvaluateTimeoutTerminatesTheScript(t *testing.T) {
	for _, tt := range []struct {
		name string
		// setup runs before the evaluation that is cut off, expr is that
		// evaluation.
		setup, expr string
	}{
		{"expression loops", "", "while (true) {}"},
		{"page script loops", "setTimeout(() => { while (true) {} }, 0); 1", "1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := pageAt(t, "/home.html")
			if tt.setup != "" {
				if _, err := p.Evaluate(context.Background(), tt.setup); err != nil {
					t.Fatalf("Evaluate(%s): %v", tt.setup, err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := p.Evaluate(ctx, tt.expr)
			if err == nil {
				// The page script had not started: the cut-off evaluation
				// never came to wait behind it.
				t.Skip("the page script had not begun when the evaluation ran")
			}
			if !strings.Contains(err.Error(), "terminated") {
				t.Errorf("Evaluate cut off = %v, want it to say the script was terminated", err)
			}

			done := make(chan error, 1)
			var got []byte
			go func() {
				var err error
				got, err = p.Evaluate(context.Background(), "1+1")
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil || string(got) != "2" {
					t.Fatalf("Evaluate(1+1) after the cut-off = %s, %v; want 2: the page stays wedged", got, err)
				}
			case <-time.After(20 * time.Second): // hang guard, not a speed assertion
				t.Fatal("Evaluate(1+1) after the cut-off did not return")
			}
		})
	}
}

// An evaluation given up while it awaits a promise leaves the idle page's
// scripts alone: the next script runs to its end.
func TestEvaluateTimeoutOnIdlePageTerminatesNothing(t *testing.T) {
	p := pageAt(t, "/home.html")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := p.Evaluate(ctx, "new Promise(() => {})")
	if err == nil {
		t.Fatal("Evaluate of a promise that never settles succeeded")
	}
	if strings.Contains(err.Error(), "terminated") {
		t.Errorf("Evaluate on an idle page = %v: nothing was running to terminate", err)
	}
	got, err := p.Evaluate(context.Background(), "(() => { let n = 0; for (let i = 0; i < 1e6; i++) n += i; return n > 0; })()")
	if err != nil || string(got) != "true" {
		t.Fatalf("Evaluate after the given-up promise = %s, %v; want true", got, err)
	}
}
