package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDeps keeps bobby free of the harness: bobby is a browser runtime and
// must build without delta's configuration, model types, store or engine,
// SQLite or any model SDK. bobby's own configuration is internal/bobby/config.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, bad := range []string{
		"github.com/deltaharness/delta/internal/config",
		"github.com/deltaharness/delta/internal/model",
		"github.com/deltaharness/delta/internal/store",
		"github.com/deltaharness/delta/internal/engine",
		"github.com/deltaharness/delta/internal/api",
		"modernc.org/sqlite",
		"github.com/openai/openai-go",
		"github.com/anthropics/anthropic-sdk-go",
	} {
		for _, d := range deps {
			// The package itself or one below it: internal/model bans
			// internal/model/modeltest too, but not internal/modelfoo.
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("bobby links %s", d)
			}
		}
	}
	for _, need := range []string{
		"github.com/chromedp/chromedp",
		"github.com/modelcontextprotocol/go-sdk/mcp",
		"github.com/deltaharness/delta/internal/bobby/config",
		"github.com/deltaharness/delta/internal/bobby/cmdline",
	} {
		if !slices.Contains(deps, need) {
			t.Errorf("bobby does not link %s (the guard is looking at the wrong package)", need)
		}
	}
}
