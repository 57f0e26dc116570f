package daemon

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bundle"
)

// A reviewed-write tool that joins after boot (a server that connects late,
// or reveals tools) brings the review policy into the next system prompt.
func TestLivePromptFollowsToolsThatJoinLater(t *testing.T) {
	b, err := bundle.Load(bundle.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := newLivePrompt(b, slog.New(slog.DiscardHandler))
	hasPolicy := func() bool { return strings.Contains(strings.Join(p.System("", nil), "\n"), "# Review policy") }
	p.bindTools([]string{"read_file"})
	if hasPolicy() {
		t.Fatal("review policy without a reviewed-write tool")
	}
	p.bindTools([]string{"read_file", "crm__propose_change"})
	if !hasPolicy() {
		t.Fatal("no review policy once crm__propose_change joined")
	}
}
