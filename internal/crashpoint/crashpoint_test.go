package crashpoint

import (
	"strings"
	"testing"
)

// In the ordinary build Hit must never end the process, whatever the name.
func TestHitIsInertWithoutTag(t *testing.T) {
	if Enabled {
		t.Skip("crashtest build: Hit exits by design")
	}
	for _, p := range Points() {
		Hit(p)
	}
}

func TestPointsAreDistinctAndNamespaced(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Points() {
		if seen[p] {
			t.Fatalf("duplicate point %q", p)
		}
		seen[p] = true
		if !strings.HasPrefix(p, "api.") && !strings.HasPrefix(p, "engine.") && !strings.HasPrefix(p, "memory.") {
			t.Fatalf("point %q names no layer", p)
		}
	}
	if len(seen) != 10 {
		t.Fatalf("got %d points, want the 10 of the matrix", len(seen))
	}
}
