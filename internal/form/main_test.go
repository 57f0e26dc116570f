package form

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/browser/browsertest"
)

// One Chromium serves every browser test of this binary, launched on first
// use, so pure tests and fuzz workers never start it.
var (
	fixtures *httptest.Server
	browser  = &browsertest.Browser{Name: "form"}
)

func TestMain(m *testing.M) {
	fixtures = httptest.NewServer(http.FileServer(http.Dir("testdata")))
	code := m.Run()
	browser.Close()
	fixtures.Close()
	os.Exit(code)
}

// openPage opens a new tab on the shared browser at the fixture path.
func openPage(t testing.TB, path string) context.Context { return browser.Open(t, fixtures.URL+path) }

// evalJS evaluates an expression on the page and decodes its value.
func evalJS[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
