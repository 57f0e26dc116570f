package config

import (
	"os/exec"
	"strings"
	"testing"
)

// TestConfigIsALeaf keeps configuration importable by both binaries without
// dragging in the harness: config links no other package of this module
// except internal/clip, which links only the standard library.
// A value whose type belongs to another package (DELTA_MODEL_PRICES) stays a
// raw document here and is parsed next to its owner.
func TestConfigIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"github.com/deltaharness/delta/internal/config": true,
		"github.com/deltaharness/delta/internal/clip":   true,
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "github.com/deltaharness/delta/") && !allowed[d] {
			t.Errorf("internal/config links %s", d)
		}
	}
}
