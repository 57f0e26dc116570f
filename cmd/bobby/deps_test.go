package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps bobby free of the harness: no SQLite store, no model SDKs.
// (internal/config, shared with delta, brings the small internal/model
// types package; that is accepted.)
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, bad := range []string{
		"github.com/deltaharness/delta/internal/store",
		"github.com/deltaharness/delta/internal/engine",
		"github.com/deltaharness/delta/internal/api",
		"modernc.org/sqlite",
		"github.com/openai/openai-go",
		"github.com/anthropics/anthropic-sdk-go",
	} {
		for _, d := range deps {
			if strings.HasPrefix(d, bad) {
				t.Errorf("bobby links %s", d)
			}
		}
	}
	for _, need := range []string{"github.com/chromedp/chromedp", "github.com/modelcontextprotocol/go-sdk/mcp"} {
		found := false
		for _, d := range deps {
			found = found || d == need
		}
		if !found {
			t.Errorf("bobby does not link %s (the guard is looking at the wrong package)", need)
		}
	}
}
