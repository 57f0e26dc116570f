package firefox

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSessionStart is a new isolated session with its first page: a
// user context and a tab in it, as browser.BenchmarkSessionStart measures
// Chromium's (the close is outside the timer).
func BenchmarkSessionStart(b *testing.B) {
	shared := ff.Browser(b)
	ctx := context.Background()
	for b.Loop() {
		uc, err := shared.CreateUserContext(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := shared.CreateTab(ctx, uc); err != nil {
			b.Fatal(err)
		}
		b.StopTimer() // as Chromium's bench: the close is not the start
		if err := shared.RemoveUserContext(ctx, uc); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkClickSettled clicks a checkbox by its ref and waits until the
// page shows the new state.
func BenchmarkClickSettled(b *testing.B) {
	p := open(b, "/signup.html")
	ctx := context.Background()
	s := take(b, p)
	box := node(b, s, "checkbox", "Send me product news")
	want := true
	for b.Loop() {
		if _, err := p.Click(ctx, box, ClickOptions{}); err != nil {
			b.Fatal(err)
		}
		// Settled: the page shows the new state.
		for eval(b, p, `document.querySelector('[name=news]').checked`) != want {
			time.Sleep(time.Millisecond)
		}
		want = !want
	}
}
