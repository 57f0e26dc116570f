package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/browser"
)

// resultTextOf returns the single text content of a result.
func resultTextOf(t *testing.T, name string, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	return tc.Text
}

// TestResultText: the text content is what a model reads, a compact
// rendering next to the full structuredContent: a one-line header with the
// status and only the ids a next call needs, the snapshot text unescaped,
// a short line for actions, the error code and repair for failures.
func TestResultText(t *testing.T) {
	_, base := httpGateway(t)
	cs := connectHTTP(t, base, "alice-token", nil)

	res, start := callTool(t, cs, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	h := asStr(start["workflowHandle"])
	text := resultTextOf(t, "workflow_start", res)
	if !strings.HasPrefix(text, "completed workflow_start workflowHandle="+h) {
		t.Errorf("workflow_start text does not lead with the handle:\n%s", text)
	}
	// A host that forwards only text needs the ids for page_list,
	// session_close and explicit-scope calls: each appears once, on the header.
	head, _, _ := strings.Cut(text, "\n")
	for _, k := range []string{"sessionId", "pageId", "workflowId"} {
		id := asStr(start[k])
		if !strings.Contains(head, " "+k+"="+id) || strings.Count(text, id) != 1 {
			t.Errorf("workflow_start text should name %s=%s once, on the header:\n%s", k, id, text)
		}
	}

	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		prefix   string
		contains []string
		absent   []string // structuredContent fields the text must not repeat
	}{
		{
			name:     "snapshot by handle: header then the snapshot text",
			tool:     "a11y_snapshot",
			args:     map[string]any{"workflowHandle": h},
			prefix:   "completed a11y_snapshot; ",
			contains: []string{fixtures.URL + "/; ", " nodes\n", `button "Go" [ref=e`},
			absent:   []string{"commandId", "workflowId", "sessionId", "pageId", `\"`, `"text":`},
		},
		{
			name:     "snapshot by explicit page: the minted workflowId is echoed",
			tool:     "a11y_snapshot",
			args:     map[string]any{"pageId": asStr(start["pageId"]), "interesting": true},
			prefix:   "completed a11y_snapshot workflowId=",
			contains: []string{`button "Go" [ref=e`},
			absent:   []string{"commandId", "pageId=", "sessionId"},
		},
		{
			name:     "click: one short line",
			tool:     "click",
			args:     map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Go"}},
			prefix:   "completed click; ",
			contains: []string{"ref=e", "networkQuiet=", "page=" + fixtures.URL + "/ (complete)"},
			absent:   []string{"commandId", "session_id", "\n"},
		},
		{
			name:     "a failed command: code, message and repair",
			tool:     "click",
			args:     map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "No such button"}},
			prefix:   "failed click",
			contains: []string{"\nerror targetNotFound: ", "\nrepair: takeSnapshot bobby://failure-taxonomy#targetNotFound"},
			absent:   []string{"commandId"},
		},
		{
			name:     "a rejected call: pointer and constraint, never the value",
			tool:     "navigate",
			args:     map[string]any{"workflowHandle": h, "url": strings.Repeat("x", 70000)},
			prefix:   "rejected navigate",
			contains: []string{"\nerror schemaViolation at /url (maxLength): ", "\nrepair: fixArguments "},
			absent:   []string{"xxxxxxxx"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, m := callTool(t, cs, tt.tool, tt.args)
			text := resultTextOf(t, tt.tool, res)
			if !strings.HasPrefix(text, tt.prefix) {
				t.Errorf("text does not start with %q:\n%s", tt.prefix, text)
			}
			for _, want := range tt.contains {
				if !strings.Contains(text, want) {
					t.Errorf("text lacks %q:\n%s", want, text)
				}
			}
			for _, no := range tt.absent {
				if strings.Contains(text, no) {
					t.Errorf("text repeats %q:\n%s", no, text)
				}
			}
			// structuredContent stays the whole contract.
			sc, _ := json.Marshal(res.StructuredContent)
			if len(text) >= len(sc) {
				t.Errorf("text (%d bytes) is not smaller than structuredContent (%d bytes)", len(text), len(sc))
			}
			if m["status"] == StatusCompleted && tt.tool != "workflow_start" && (m["commandId"] == "" || m["sessionId"] == "" || m["pageId"] == "") {
				t.Errorf("structuredContent lost its ids: %s", dump(m))
			}
			if tt.tool == "a11y_snapshot" {
				snap := asStr(get(m, "evidence", "accessibility", "text"))
				if snap == "" || !strings.HasSuffix(text, strings.TrimRight(snap, "\n")) {
					t.Errorf("text does not end with the snapshot text %q:\n%s", snap, text)
				}
			}
		})
	}
}

// TestPageListText: a listed page reads as one line even with what a
// listing adds to its state (the popup's opener, an open dialog), and a key
// the renderer does not know shows as key=value, not as a JSON dump.
func TestPageListText(t *testing.T) {
	u := "http://h/popup.html"
	res := &pageListResult{Status: StatusCompleted, SessionID: "s1", Pages: []pageEntry{
		{PageState: browser.PageState{ID: "p1", SessionID: "s1", URL: ptr("http://h/"), Mode: browser.ModeInteractive, ReadyState: "complete"}},
		{PageState: browser.PageState{ID: "p2", SessionID: "s1", URL: &u, Mode: browser.ModeInteractive, ReadyState: "complete"},
			OpenerID: "p1", Dialog: &dialogBrief{Type: "alert", Message: "Hi there"}},
	}}
	text := resultText("page_list", res)
	want := `pages: ["p1 http://h/ (complete)","p2 http://h/popup.html (complete) opened by p1 dialog alert \"Hi there\""]`
	if !strings.Contains(text, want) {
		t.Errorf("page_list text:\n%s\nwant the line %s", text, want)
	}
	s, ok := pageStateText(map[string]any{"id": "p3", "ready_state": "loading", "zoom": 1.5, "frozen": "yes"}, nil)
	if !ok || s != "p3 about:blank (loading) frozen=yes zoom=1.5" {
		t.Errorf("a page state with unknown keys = %q, %v", s, ok)
	}
}
