package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/target"
)

// readySpare waits until no refill is under way and returns the target of
// the spare's blank page.
func readySpare(t testing.TB, r *Runtime) target.ID {
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
