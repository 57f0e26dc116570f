package gateway

import (
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// textHost calls tools the way a host that forwards only content text
// does (delta among them): it never reads structuredContent.
type textHost struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func (h textHost) call(name string, args map[string]any) string {
	h.t.Helper()
	res, err := h.cs.CallTool(testCtx(h.t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("call %s: %v", name, err)
	}
	text := resultTextOf(h.t, name, res)
	if res.IsError {
		h.t.Fatalf("%s failed:\n%s", name, text)
	}
	return text
}

// id reads key=value from the header line of a result text.
func (h textHost) id(text, key string) string {
	h.t.Helper()
	head, _, _ := strings.Cut(text, "\n")
	m := regexp.MustCompile(`[ ;]` + key + `=([A-Za-z0-9_-]+)`).FindStringSubmatch(head)
	if m == nil {
		h.t.Fatalf("the header names no %s:\n%s", key, text)
	}
	return m[1]
}

// TestTextOnlyHostChains: every result names the ids the next call needs,
// so a chain of calls works from the text alone.
func TestTextOnlyHostChains(t *testing.T) {
	_, base := httpGateway(t)
	h := textHost{t, connectHTTP(t, base, "alice-token", nil)}

	start := h.call("workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	sid, pid := h.id(start, "sessionId"), h.id(start, "pageId")
	h.call("a11y_snapshot", map[string]any{"workflowHandle": h.id(start, "workflowHandle")})
	h.call("a11y_snapshot", map[string]any{"sessionId": sid, "pageId": pid})
	if list := h.call("page_list", map[string]any{"sessionId": sid}); !strings.Contains(list, pid) {
		t.Errorf("page_list does not name page %s:\n%s", pid, list)
	}

	created := h.call("session_create", map[string]any{"profile": "default"})
	sid2 := h.id(created, "sessionId")
	opened := h.call("page_open", map[string]any{"sessionId": sid2, "url": fixtures.URL + "/index.html"})
	pid2 := h.id(opened, "pageId")
	if h.id(opened, "sessionId") != sid2 {
		t.Errorf("page_open names another session:\n%s", opened)
	}
	h.call("click", map[string]any{"pageId": pid2, "target": map[string]any{"role": "button", "name": "Go"}})
	closed := h.call("page_close", map[string]any{"pageId": pid2})
	if h.id(closed, "pageId") != pid2 {
		t.Errorf("page_close text:\n%s", closed)
	}
	h.call("session_close", map[string]any{"sessionId": sid2})
	h.call("session_close", map[string]any{"sessionId": sid})
}
