package snapshot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// wedge starts a script that never yields on the page's main thread, so the
// renderer answers no Runtime or DOM command, and ends it when the test ends.
func wedge(t *testing.T, ctx context.Context) {
	t.Helper()
	// The evaluation never answers: its context ends it on our side, the
	// loop keeps running in the page.
	ectx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, _ = chromedp.Call(ectx, runtime.Evaluate, runtime.EvaluateParams{Expression: "while (true) {}"})
	t.Cleanup(func() {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, _ = chromedp.Call(tctx, runtime.TerminateExecution, cdp.Empty{})
	})
}

// A resolve on a page whose main thread is busy ends with its context: the
// release of the objects it made does not wait for a renderer that never
// answers.
func TestResolveOnBusyPageEndsWithContext(t *testing.T) {
	ctx := openPage(t, "/page.html")
	checkout := findNode(t, take(t, ctx, Options{}), "button", "Checkout")
	wedge(t, ctx)
	for _, tt := range []struct {
		name   string
		target Target
	}{
		{"selector", Target{Selector: "#checkout"}},
		{"ref", Target{Ref: checkout.Ref}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := Resolve(rctx, tt.target)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("Resolve on a busy page succeeded")
				}
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					t.Errorf("Resolve on a busy page = %v, want the context's error", err)
				}
				if errors.Is(err, ErrTargetNotFound) {
					t.Errorf("Resolve on a busy page = %v: the node was never looked at, so it is not missing", err)
				}
			case <-time.After(20 * time.Second): // hang guard, not a speed assertion
				t.Fatal("Resolve on a busy page did not return after its context ended")
			}
		})
	}
}
