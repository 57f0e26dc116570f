// Package browsertest gives browser tests one shared headless Chromium per
// test binary, launched on first use with the flags that work on these
// machines and a fresh profile, and pages on loopback fixture servers.
// A launch costs about half a second, a new tab a few milliseconds, so
// tests share the browser and open a tab each.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// Browser is a lazily launched shared Chromium.
type Browser struct {
	Name string // used in the profile directory name

	once sync.Once
	ctx  context.Context
	err  error
	stop func()
}

// Context returns the browser context, launching Chromium on first use.
// The first Do has no timeout: it ties the browser's lifetime.
func (b *Browser) Context(t testing.TB) context.Context {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", b.Name+"-chromium-")
		if err != nil {
			b.err = fmt.Errorf("profile dir: %w", err)
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
		b.stop = func() {
			cancel()
			cancelAlloc() // waits for the browser process to exit
			os.RemoveAll(dir)
		}
		if err := chromedp.Do(ctx); err != nil {
			b.err = fmt.Errorf("start chromium: %w", err)
			return
		}
		b.ctx = ctx
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.ctx
}

// Close stops the browser if it was launched. Call it from TestMain.
func (b *Browser) Close() {
	if b.stop != nil {
		b.stop()
	}
}

// Open opens a new tab, navigates it to url and closes it when the test ends.
func (b *Browser) Open(t testing.TB, url string) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.Context(t))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
	return ctx
}
