package form

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// One Chromium serves every browser test of this binary: a launch costs
// about half a second, a new tab a few milliseconds. It starts on first use,
// so pure tests and fuzz workers never launch it.
var (
	fixtures    *httptest.Server
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
	stopBrowser = func() {}
)

func TestMain(m *testing.M) {
	fixtures = httptest.NewServer(http.FileServer(http.Dir("testdata")))
	code := m.Run()
	stopBrowser()
	fixtures.Close()
	os.Exit(code)
}

// sharedBrowser returns the context of the shared browser, launching it on
// first use with the flags that work on these machines and a fresh profile.
func sharedBrowser(t testing.TB) context.Context {
	t.Helper()
	browserOnce.Do(func() {
		dir, err := os.MkdirTemp("", "form-chromium-")
		if err != nil {
			browserErr = fmt.Errorf("profile dir: %w", err)
			return
		}
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath("/usr/bin/chromium"),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(dir),
		)
		ctx, cancel := chromedp.NewContext(allocCtx)
		stopBrowser = func() {
			cancel()
			cancelAlloc() // waits for the browser process to exit
			os.RemoveAll(dir)
		}
		// The first Do starts the browser; its context has no timeout
		// because it ties the browser's lifetime.
		if err := chromedp.Do(ctx); err != nil {
			browserErr = fmt.Errorf("start chromium: %w", err)
			return
		}
		browserCtx = ctx
	})
	if browserErr != nil {
		t.Fatal(browserErr)
	}
	return browserCtx
}

// openPage opens a new tab on the shared browser, navigates it to the fixture
// and closes it when the test ends.
func openPage(t testing.TB, path string) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(sharedBrowser(t))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(fixtures.URL+path)); err != nil {
		t.Fatalf("navigate %s: %v", path, err)
	}
	return ctx
}

// evalJS evaluates an expression on the page and decodes its value.
func evalJS[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
