package gateway

import (
	"strings"
	"testing"
	"time"
)

// TestDialogNeverHangs: while an alert blocks the page, other tools answer
// at once, page work fails fast with dialogOpen, and dialog repairs it.
func TestDialogNeverHangs(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/dialog.html"})
	h := start["workflowHandle"]
	_, click := callTool(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "#alert"})
	if !strings.Contains(dump(click), "hello there") {
		t.Fatalf("click that opened an alert = %s", dump(click))
	}
	began := time.Now()
	pl := mustOK(t, alice, "page_list", map[string]any{"sessionId": start["sessionId"]})
	if !strings.Contains(dump(pl), `"type":"alert"`) {
		t.Errorf("page_list does not show the open dialog: %s", dump(pl))
	}
	mustOK(t, alice, "runtime_info", nil)
	mustOK(t, alice, "session_list", nil)
	m := mustFail(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h}, CodeDialogOpen)
	if get(m, "error", "repair", "action") != "handleDialog" {
		t.Errorf("repair = %v", get(m, "error", "repair"))
	}
	// Generous bound: the point is "not the 180 s hang users report".
	if waited := time.Since(began); waited > 30*time.Second {
		t.Errorf("tools blocked for %s behind a dialog", waited)
	}
	d := mustOK(t, alice, "dialog", map[string]any{"workflowHandle": h, "accept": true})
	if get(d, "evidence", "dialog", "type") != "alert" {
		t.Errorf("dialog = %s", dump(d))
	}
	mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h})
	mustFail(t, alice, "dialog", map[string]any{"workflowHandle": h, "accept": true}, CodeNoDialog)

	callTool(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "#confirm"})
	mustOK(t, alice, "dialog", map[string]any{"workflowHandle": h, "accept": false})
	mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "text",
		"selector": "#out", "matcher": map[string]any{"kind": "exact", "value": "no"}}})
}
