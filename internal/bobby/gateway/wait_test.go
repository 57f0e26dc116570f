package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
)

func TestWaitBudget(t *testing.T) {
	wait := commandSpecs["wait_for"]
	nav := commandSpecs["navigate"]
	for _, tt := range []struct {
		name          string
		spec          commandSpec
		timeoutMs     int
		command, wait time.Duration
	}{
		{"wait default", wait, 0, defaultWait + waitOverhead, defaultWait},
		{"wait 500ms is 500ms", wait, 500, 500*time.Millisecond + waitOverhead, 500 * time.Millisecond},
		{"wait 100ms floor of the schema", wait, 100, 100*time.Millisecond + waitOverhead, 100 * time.Millisecond},
		{"wait 2s is 2s", wait, 2000, 2*time.Second + waitOverhead, 2 * time.Second},
		{"wait at the cap", wait, 300000, browser.MaxWaitTimeout + waitOverhead, browser.MaxWaitTimeout},
		{"wait above the cap", wait, 400000, browser.MaxWaitTimeout + waitOverhead, browser.MaxWaitTimeout},
		{"other command default", nav, 0, nav.timeout, 0},
		{"other command timeoutMs is its deadline", nav, 1500, 1500 * time.Millisecond, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			command, w := tt.spec.budget(tt.timeoutMs)
			if command != tt.command || w != tt.wait {
				t.Errorf("budget(%d) = command %s, wait %s; want %s, %s", tt.timeoutMs, command, w, tt.command, tt.wait)
			}
		})
	}
}

// TestWaitForWaitsTheCallersTimeout waits on a page whose text appears
// 800 ms after load: a 1500 ms wait sees it, and a 500 ms wait for a text
// the page never shows reports a timeout of 500 ms (not of what was left
// after the command's overhead). The short wait is not for the late text:
// under load the page can be 800 ms past its load before the wait begins.
func TestWaitForWaitsTheCallersTimeout(t *testing.T) {
	alice := aliceClient(t)
	cond := map[string]any{"kind": "text", "selector": "#late", "matcher": map[string]any{"kind": "exact", "value": "Ready now"}}

	h := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/late.html"})["workflowHandle"]
	ok := mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "timeoutMs": 1500, "condition": cond})
	if get(ok, "evidence", "wait", "matched") != true {
		t.Fatalf("wait_for = %s", dump(ok))
	}

	h = mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/late.html"})["workflowHandle"]
	never := map[string]any{"kind": "text", "selector": "#late", "matcher": map[string]any{"kind": "exact", "value": "Never shown"}}
	_, m := callTool(t, alice, "wait_for", map[string]any{"workflowHandle": h, "timeoutMs": 500, "condition": never})
	if m["status"] != StatusTimedOut || errCode(m) != CodeTimeout || !strings.Contains(asStr(get(m, "error", "message")), "within 500 ms") {
		t.Fatalf("short wait_for = %s", dump(m))
	}
}
