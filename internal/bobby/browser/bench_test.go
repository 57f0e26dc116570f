package browser

import (
	"context"
	"testing"
)

// BenchmarkSessionStart measures a new isolated session with one page,
// which is what workflow_start pays before navigating: "warm" with the
// spare ready (an agent's next start, seconds after the last), "cold"
// without a spare.
func BenchmarkSessionStart(b *testing.B) {
	ctx := context.Background()
	for _, warm := range []bool{true, false} {
		name := map[bool]string{true: "warm", false: "cold"}[warm]
		b.Run(name, func(b *testing.B) {
			shared.opts.NoWarmSpare = !warm
			defer func() { shared.opts.NoWarmSpare = false; shared.refill() }()
			for b.Loop() {
				b.StopTimer()
				if warm {
					readySpare(b, shared)
				}
				b.StartTimer()
				s, err := shared.NewSession(ctx, "bench", ExecutionPolicy{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.NewPage(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := shared.CloseSession(ctx, s.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkClickSettled measures a native click that starts a 0 ms fetch,
// until the network has been quiet for 50 ms.
func BenchmarkClickSettled(b *testing.B) {
	ctx := context.Background()
	p := testPage(b)
	open(b, p, "/slow.html")
	if _, err := p.Evaluate(ctx, `window.go = () => fetch("/slow?ms=0"); 1`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := p.Click(ctx, NodeRef{Selector: "#fetch"}, ClickOptions{}); err != nil {
			b.Fatal(err)
		}
		res, err := p.WaitFor(ctx, Condition{Kind: WaitNetworkQuiet, IdleMs: 50})
		if err != nil || !res.Matched {
			b.Fatalf("settle: %+v %v", res, err)
		}
	}
}
