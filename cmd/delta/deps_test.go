package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbidden are the packages delta must not link: bobby's browser stack
// (chromedp and its protocol packages), bobby's own packages, and the test
// helpers of the model wires (`delta demo` uses model/scripted instead).
// A path ending in "/" bans everything under it.
var forbidden = []string{
	"github.com/chromedp/",
	"github.com/deltaharness/delta/internal/bobby/", // every package of bobby's
	"github.com/deltaharness/delta/internal/model/modeltest",
	"github.com/deltaharness/delta/internal/collector/pgtest",
	"github.com/BurntSushi/toml", // bobby's TOML parser (internal/bobby/config)
}

// TestDeps keeps delta free of bobby and of test-only packages.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, bad := range forbidden {
		var hits []string
		for _, d := range deps {
			if d == bad || strings.HasPrefix(d, strings.TrimSuffix(bad, "/")+"/") {
				hits = append(hits, d)
			}
		}
		if len(hits) > 0 {
			t.Errorf("delta links %s (%d packages; `go mod why %s` shows the path)", bad, len(hits), hits[0])
		}
	}
	for _, need := range []string{
		"github.com/deltaharness/delta/internal/store",
		"github.com/deltaharness/delta/internal/model/scripted",
		"modernc.org/sqlite",
	} {
		if !slices.Contains(deps, need) {
			t.Errorf("delta does not link %s (the guard is looking at the wrong package)", need)
		}
	}
}
