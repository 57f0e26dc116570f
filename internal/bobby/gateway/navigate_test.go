package gateway

import (
	"strings"
	"testing"
)

// A navigation cut off by the call's timeoutMs names that timeout.
func TestNavigateTimeoutNamesTimeoutMs(t *testing.T) {
	alice := aliceClient(t)
	h := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("home.html")})["workflowHandle"]
	m := mustFail(t, alice, "navigate", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/slow?ms=5000", "timeoutMs": 1000}, CodeTimeout)
	if msg := asStr(get(m, "error", "message")); !strings.Contains(msg, "within 1s") {
		t.Errorf("navigate with timeoutMs 1000 = %s, want the message to name 1s", dump(m))
	}
}
