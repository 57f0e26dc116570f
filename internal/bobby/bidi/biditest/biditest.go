// Package biditest gives Firefox tests one shared headless Firefox per test
// binary, launched over WebDriver BiDi on first use, and tabs in fresh user
// contexts. Without Firefox a test skips, except under CI, where it fails.
package biditest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi"
)

// Require skips the test when Firefox is not installed, or fails it when
// CI is set, so a CI machine cannot pass the Firefox tests by skipping them.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(bidi.DefaultFirefox); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but Firefox is missing at %s (apt-get install -y firefox-esr)", bidi.DefaultFirefox)
		}
		t.Skipf("Firefox is missing at %s (apt-get install -y firefox-esr)", bidi.DefaultFirefox)
	}
}

// LaunchTimeout bounds a test's Firefox launch against a hang. It is far
// above the product's default: on a loaded CI machine a launch can take
// longer than 30 s, and a test must not fail for being slow.
const LaunchTimeout = 3 * time.Minute

// Firefox is a lazily launched shared Firefox.
type Firefox struct {
	once sync.Once
	b    *bidi.Browser
	err  error
}

// Browser returns the browser, launching it on first use; it requires
// Firefox as Require does.
func (f *Firefox) Browser(t testing.TB) *bidi.Browser {
	t.Helper()
	Require(t)
	f.once.Do(func() { f.b, f.err = bidi.Launch(context.Background(), bidi.LaunchOptions{Timeout: LaunchTimeout}) })
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.b
}

// Tab opens a background tab with a width×height viewport in a fresh user
// context, which is removed (with the tab) when the test ends.
func (f *Firefox) Tab(t testing.TB, width, height int) (b *bidi.Browser, bc string) {
	t.Helper()
	b = f.Browser(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	uc, err := b.CreateUserContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.RemoveUserContext(context.Background(), uc) })
	bc, err = b.CreateTab(ctx, uc)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetViewport(ctx, bc, width, height); err != nil {
		t.Fatal(err)
	}
	return b, bc
}

// Close closes the browser if it was launched. Call it from TestMain.
func (f *Firefox) Close() {
	if f.b != nil {
		_ = f.b.Close()
	}
}
