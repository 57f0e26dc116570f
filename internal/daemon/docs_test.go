package daemon

import (
	"strconv"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/tool/search"
)

// config cannot import search, so DELTA_PINNED_TOOLS' documentation spells
// the guardrail out; this keeps the number true.
func TestPinnedToolsDocNamesTheGuardrail(t *testing.T) {
	for _, v := range config.Vars() {
		if v.Name != "DELTA_PINNED_TOOLS" {
			continue
		}
		if !strings.Contains(v.Doc, "more than "+strconv.Itoa(search.Guardrail)+" tools") {
			t.Fatalf("DELTA_PINNED_TOOLS doc %q does not name the guardrail of %d tools", v.Doc, search.Guardrail)
		}
		return
	}
	t.Fatal("DELTA_PINNED_TOOLS is not documented")
}
