package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/gatewaytest"
)

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestSessionCapEvictsLRU: past [http] max_sessions the least recently
// used browser session is closed with its pages, and runtime_info counts it.
func TestSessionCapEvictsLRU(t *testing.T) {
	_, base := httpGatewayWith(t, func(c *config.Config) { c.HTTP.MaxSessions = 2 })
	alice := connectHTTP(t, base, "alice-token", nil)

	first := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	second := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default"})
	// Using the first makes the second the least recently used.
	mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": first["workflowHandle"]})
	third := mustOK(t, alice, "session_create", map[string]any{"profile": "default"})

	live := map[string]bool{}
	for _, s := range get(mustOK(t, alice, "session_list", nil), "sessions").([]any) {
		live[asStr(s.(map[string]any)["id"])] = true
	}
	if len(live) != 2 || !live[asStr(first["sessionId"])] || !live[asStr(third["id"])] {
		t.Fatalf("live sessions after the cap = %v", live)
	}
	if _, err := sharedRT.Session(asStr(second["sessionId"])); err == nil {
		t.Error("the evicted session's browser context is still open")
	}
	mustFail(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": second["workflowHandle"]}, CodeUnknownWorkflowHandle)
	mustFail(t, alice, "page_list", map[string]any{"sessionId": second["sessionId"]}, CodeNotFound)

	info := mustOK(t, alice, "runtime_info", nil)
	if s := get(info, "sessions"); jsonNum(get(info, "sessions", "browserSessions")) != 2 || jsonNum(get(info, "sessions", "maxSessions")) != 2 ||
		jsonNum(get(info, "sessions", "evictedLRU")) != 1 || jsonNum(get(info, "sessions", "mcpSessions")) < 1 {
		t.Errorf("runtime_info sessions = %s", dump(s))
	}
}

// TestIdleSessionsReaped: a browser session unused for [http] idle_timeout
// is closed by the server on its own.
func TestIdleSessionsReaped(t *testing.T) {
	_, base := httpGatewayWith(t, func(c *config.Config) { c.HTTP.IdleTimeout = time.Second })
	alice := connectHTTP(t, base, "alice-token", nil)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default"})
	sid := asStr(start["sessionId"])
	waitUntil(t, 20*time.Second, "the idle session is reaped", func() bool {
		return jsonNum(get(mustOK(t, alice, "runtime_info", nil), "sessions", "reapedIdle")) >= 1
	})
	if _, err := sharedRT.Session(sid); err == nil {
		t.Error("the reaped session's browser context is still open")
	}
	if n := len(get(mustOK(t, alice, "session_list", nil), "sessions").([]any)); n != 0 {
		t.Errorf("%d sessions listed after the idle timeout", n)
	}
	if info := mustOK(t, alice, "runtime_info", nil); jsonNum(get(info, "sessions", "browserSessions")) != 0 || jsonNum(get(info, "sessions", "idleTimeoutSeconds")) != 1 {
		t.Errorf("runtime_info sessions = %s", dump(get(info, "sessions")))
	}
	mustFail(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": start["workflowHandle"]}, CodeUnknownWorkflowHandle)
}

// TestCallBeforeInitialize: a request before initialize is a JSON-RPC
// error with a real code, over HTTP and over stdio.
func TestCallBeforeInitialize(t *testing.T) {
	_, base := httpGateway(t)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	a := gatewaytest.Post(t, testCtx(t), base+MCPPath, body, "Authorization", "Bearer alice-token")
	if a.Status != http.StatusBadRequest || !strings.Contains(a.Body, `"code":-32600`) || !strings.Contains(a.Body, `"id":7`) {
		t.Errorf("HTTP tools/list before initialize = %d %s", a.Status, a.Body)
	}

	stdin, lines := startStdio(t, stdioCmd(t))
	_, _ = io.WriteString(stdin, body+"\n"+`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"runtime_info","arguments":{}}}`+"\n")
	for id := 7.0; id <= 8; id++ {
		var line string
		select {
		case line = <-lines:
		case <-time.After(30 * time.Second):
			t.Fatal("bobby stdio did not answer before initialize")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdio line %q: %v", line, err)
		}
		if code := get(m, "error", "code"); code != -32002.0 || m["id"] != id {
			t.Errorf("stdio answer before initialize = %s", line)
		}
	}
}

func jsonNum(v any) float64 { f, _ := v.(float64); return f }
