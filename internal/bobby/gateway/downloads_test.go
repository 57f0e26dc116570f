package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/config"
)

// A download belongs to the command that started it: navigate refuses and
// cancels one, intent_follow reports its own, and a later click reports
// neither.
func TestDownloadsBelongToTheCommandThatStartedThem(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("click.html")})
	h := start["workflowHandle"]

	m := mustFail(t, alice, "navigate", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/attachment"}, CodeNavigationFailed)
	if !strings.Contains(asStr(get(m, "error", "message")), "download_url") {
		t.Errorf("navigate to a download = %s", dump(m))
	}
	mustOK(t, alice, "navigate", map[string]any{"workflowHandle": h, "url": fixtureURL("click.html")})
	m = mustOK(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "#btn"})
	if dl := get(m, "evidence", "downloads"); dl != nil {
		t.Errorf("a click after a refused navigation reports its download: %s", dump(m))
	}

	mustOK(t, alice, "navigate", map[string]any{"workflowHandle": h, "url": fixtureURL("downloads.html")})
	res, m := callTool(t, alice, "intent_follow", map[string]any{"workflowHandle": h, "selector": "#report"})
	dl, _ := get(m, "evidence", "downloads").([]any)
	if res.IsError || get(m, "evidence", "follow", "outcome") != "download" || len(dl) != 1 ||
		get(dl[0].(map[string]any), "state") != "completed" || get(dl[0].(map[string]any), "suggestedFilename") != "report.bin" {
		t.Fatalf("intent_follow on a download link = %s", dump(m))
	}
	if text := textOf(res); !strings.Contains(text, "download report.bin: ") {
		t.Errorf("intent_follow text:\n%s", text)
	}
	m = mustOK(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "h1"})
	if dl := get(m, "evidence", "downloads"); dl != nil {
		t.Errorf("a click after intent_follow reports its download: %s", dump(m))
	}
}

// download_url's local refusals are bad saveAs values, named without the
// downloads root; a cut-off download is a timeout; a failed download has no
// savedTo.
func TestDownloadURLRefusalsAndTimeout(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, base := httpGatewayWith(t, func(c *config.Config) { c.HTTP.DownloadsRoot = root })
	alice := connectHTTP(t, base, "alice-token", nil)
	h := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})["workflowHandle"]

	t.Run("directory", func(t *testing.T) {
		m := mustFail(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/bytes?n=10", "saveAs": "sub"}, CodeInvalidRequest)
		if strings.Contains(dump(m), root) || get(m, "evidence", "download", "savedTo") != nil {
			t.Errorf("saveAs naming a directory = %s", dump(m))
		}
	})
	t.Run("dot-dot inside the root", func(t *testing.T) {
		mustFail(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/bytes?n=10", "saveAs": "sub/../e.bin"}, CodeInvalidRequest)
		if _, err := os.Stat(filepath.Join(root, "e.bin")); err == nil {
			t.Error("a saveAs with .. was saved")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		m := mustFail(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/slow?ms=5000", "saveAs": "slow.bin", "timeoutMs": 1000}, CodeTimeout)
		if get(m, "status") != StatusTimedOut || get(m, "evidence", "download", "savedTo") != nil {
			t.Errorf("a cut-off download = %s", dump(m))
		}
		if _, err := os.Stat(filepath.Join(root, "slow.bin")); err == nil {
			t.Error("a cut-off download was saved")
		}
	})
	t.Run("failure has no savedTo", func(t *testing.T) {
		m := mustFail(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/fail500", "saveAs": "err.bin"}, CodeNavigationFailed)
		if get(m, "evidence", "download", "savedTo") != nil {
			t.Errorf("a failed download = %s", dump(m))
		}
	})
}
