package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
)

// readySpare waits until no refill is under way and returns the target of
// the spare's blank page.
func readySpare(t testing.TB, r *Runtime) target.ID {
	t.Helper()
	// A new session defers the next spare until it has started; the
	// tests that need one now ask for it.
	r.refill()
	return waitSpare(t, r)
}

// waitSpare waits for the refill under way, which must make a spare, and
// returns the spare's target.
func waitSpare(t testing.TB, r *Runtime) target.ID {
	t.Helper()
	r.mu.Lock()
	wait := r.filling
	r.mu.Unlock()
	if wait != nil {
		<-wait
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spare == nil || r.spare.prepared == nil {
		t.Fatal("no warm spare after the refill ended")
	}
	return r.spare.prepared.targetID
}

func TestWarmSpareIsHandedOutOnce(t *testing.T) {
	want := readySpare(t, shared)

	s := newSession(t)
	if n := len(s.Pages()); n != 0 {
		t.Fatalf("a new session lists %d pages before NewPage, want 0", n)
	}
	if _, err := shared.Session(s.ID); err != nil {
		t.Fatalf("the session is not registered: %v", err)
	}
	p := pageOf(t, s)
	if p.TargetID() != want {
		t.Fatalf("first page is target %s, want the spare's %s", p.TargetID(), want)
	}
	// The next spare is a different context, not this session's.
	next := readySpare(t, shared)
	if next == want {
		t.Fatal("the spare handed out is still the spare")
	}
	// A second page in the session is a new target.
	q := pageOf(t, s)
	if q.TargetID() == want || q.TargetID() == next {
		t.Fatalf("second page reused target %s", q.TargetID())
	}
	if got := s.State().PageIDs; len(got) != 2 || got[0] != p.ID || got[1] != q.ID {
		t.Fatalf("page IDs %v, want [%s %s]", got, p.ID, q.ID)
	}
	open(t, p, "/home.html")
	open(t, q, "/home.html")
}

// spareState reports whether a spare exists or is being made.
func spareState(r *Runtime) (ready, filling bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spare != nil, r.filling != nil
}

// The next spare is not made while the session that took the last one
// opens its page: only its first navigation's end starts it, so the two do
// not compete for the machine.
func TestWarmSpareIsRefilledAfterTheFirstNavigation(t *testing.T) {
	first := readySpare(t, shared)
	defer func(d time.Duration) { shared.refillDelay = d }(shared.refillDelay)
	shared.refillDelay = time.Hour
	s := newSession(t)
	p := pageOf(t, s)
	if p.TargetID() != first {
		t.Fatalf("page is target %s, want the spare's %s", p.TargetID(), first)
	}
	if ready, filling := spareState(shared); ready || filling {
		t.Fatalf("before the first navigation: spare ready %v, being made %v; want neither", ready, filling)
	}
	open(t, p, "/home.html")
	if ready, filling := spareState(shared); !ready && !filling {
		t.Fatal("after the first navigation no spare is being made")
	}
	if next := waitSpare(t, shared); next == first {
		t.Fatal("the spare handed out is still the spare")
	}
}

// A failed first navigation ends the start too, and so does a close.
func TestWarmSpareIsRefilledAfterAFailedNavigationOrAClose(t *testing.T) {
	defer func(d time.Duration) { shared.refillDelay = d }(shared.refillDelay)
	shared.refillDelay = time.Hour

	readySpare(t, shared)
	p := testPage(t)
	if out := p.Navigate(context.Background(), "http://127.0.0.1:1/"); out.OK() {
		t.Fatalf("navigation to a closed port completed: %+v", out)
	}
	if ready, filling := spareState(shared); !ready && !filling {
		t.Fatal("after a failed first navigation no spare is being made")
	}
	waitSpare(t, shared)

	s, err := shared.NewSession(context.Background(), "default", ExecutionPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if ready, filling := spareState(shared); ready || filling {
		t.Fatalf("after NewSession: spare ready %v, being made %v; want neither", ready, filling)
	}
	if err := shared.CloseSession(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	if ready, filling := spareState(shared); !ready && !filling {
		t.Fatal("after the close no spare is being made")
	}
	waitSpare(t, shared)
}

// A session that never navigates gets the next spare made after the delay.
func TestWarmSpareIsRefilledAfterTheDelay(t *testing.T) {
	defer func(d time.Duration) { shared.refillDelay = d }(shared.refillDelay)
	shared.refillDelay = time.Millisecond
	readySpare(t, shared)
	pageOf(t, newSession(t))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ready, filling := spareState(shared); ready || filling {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no spare is being made 30 s after a session that does not navigate")
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitSpare(t, shared)
}

// Two sessions made from spares do not share cookies.
func TestWarmSparesAreIsolated(t *testing.T) {
	readySpare(t, shared)
	a := testPage(t)
	readySpare(t, shared)
	b := testPage(t)
	open(t, a, "/home.html")
	eval[string](t, a, `document.cookie = "who=alice; path=/"`)
	open(t, b, "/home.html")
	if c := eval[string](t, b, `document.cookie`); strings.Contains(c, "alice") {
		t.Fatalf("session b sees a's cookie: %q", c)
	}
}

// The policy is known only when the spare is handed out; its fingerprint
// still reaches the first navigation.
func TestWarmSpareTakesTheFingerprint(t *testing.T) {
	want := readySpare(t, shared)
	s := newSessionWith(t, "shopper", ExecutionPolicy{Fingerprint: true})
	p := pageOf(t, s)
	if p.TargetID() != want {
		t.Fatalf("page is target %s, want the spare's %s", p.TargetID(), want)
	}
	ps := PersonaFor("shopper")
	open(t, p, "/adaptive.html")
	if f := pageFacts(t, p); f.Language != ps.Locale || f.Timezone != ps.Timezone || !strings.Contains(f.UA, ps.OS) {
		t.Fatalf("page sees %+v, want persona %+v", f, ps)
	}
}
