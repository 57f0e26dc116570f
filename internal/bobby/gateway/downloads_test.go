package gateway

import (
	"strings"
	"testing"
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
