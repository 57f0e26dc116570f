package snapshot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/bobby/browser/browsertest"
)

// One Chromium serves every browser test of this binary, launched on first
// use, so pure tests and fuzz workers never start it.
var (
	fixtures *httptest.Server
	browser  = &browsertest.Browser{Name: "snapshot"}
)

func TestMain(m *testing.M) {
	fixtures = httptest.NewServer(http.FileServer(http.Dir("testdata")))
	code := m.Run()
	browser.Close()
	ff.Close()
	fixtures.Close()
	os.Exit(code)
}

// openPage opens a new tab on the shared browser at the fixture path.
func openPage(t testing.TB, path string) context.Context { return browser.Open(t, fixtures.URL+path) }

// take takes a snapshot of the page; the test fails on an error.
func take(t testing.TB, ctx context.Context, opts Options) *Snapshot {
	t.Helper()
	s, err := Take(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFor polls a JavaScript condition on the page until it holds; the test
// fails if it never does. The bound is a hang guard, generous enough for a
// loaded machine, not a speed assertion.
func waitFor(t testing.TB, ctx context.Context, cond string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err != nil {
			t.Fatalf("evaluate %s: %v", cond, err)
		}
		if ok {
			return
		}
		if err := chromedp.Do(ctx, chromedp.Sleep(20*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("condition never held: %s", cond)
}

// eval runs a script on the page for its side effects.
func eval(t testing.TB, ctx context.Context, script string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](script)); err != nil {
		t.Fatalf("evaluate %s: %v", script, err)
	}
}
