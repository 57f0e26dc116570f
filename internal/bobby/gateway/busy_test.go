package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// callWithin calls a tool and fails the test if no answer comes within a
// hang guard well past any timeout the call asks for (not a speed
// assertion).
func callWithin(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("%s on a busy page gave no answer within 20s", name)
	}
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res, structured(t, name, res)
}

// On a page whose main thread a script holds, element commands answer
// within their timeoutMs, and as a retryable timeout: their target never
// resolved, so nothing was sent to the page. An evaluation cut off there
// terminates the script, and the page answers again.
func TestBusyPage(t *testing.T) {
	cs := aliceClient(t)
	wf := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/signup.html",
		"executionPolicy": map[string]any{"javascriptEvaluation": true}})
	h := wf["workflowHandle"]
	mustOK(t, cs, "evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "setTimeout(() => { while (true) {} }, 0); 1"})

	for _, tt := range []struct {
		name string
		tool string
		args map[string]any
	}{
		{"click by selector", "click", map[string]any{"selector": "button"}},
		{"click by role and name", "click", map[string]any{"target": map[string]any{"role": "button", "name": "Create account"}}},
		{"type_text by selector", "type_text", map[string]any{"selector": "input[name=email]", "text": "abc"}},
		{"control_action", "control_action", map[string]any{"target": map[string]any{"role": "textbox", "name": "Email"},
			"action": map[string]any{"kind": "setText", "text": "abc"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.args["workflowHandle"], tt.args["timeoutMs"] = h, 3000
			res, m := callWithin(t, cs, tt.tool, tt.args)
			if !res.IsError {
				t.Fatalf("%s on a busy page succeeded: %s", tt.tool, dump(m))
			}
			if m["status"] != StatusTimedOut || errCode(m) != CodeTimeout {
				t.Errorf("%s on a busy page = %s %s, want %s %s: %s", tt.tool, m["status"], errCode(m), StatusTimedOut, CodeTimeout, dump(m))
			}
		})
	}

	_, m := callWithin(t, cs, "evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "1+1", "timeoutMs": 3000})
	if m["status"] == StatusCompleted {
		t.Fatalf("evaluate on a busy page completed: %s", dump(m))
	}
	if msg := asStr(get(m, "error", "message")); !strings.Contains(msg, "terminated") {
		t.Errorf("evaluate on a busy page says %q, want it to say the script was terminated", msg)
	}
	_, m = callWithin(t, cs, "evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "1+1"})
	if m["status"] != StatusCompleted || get(m, "evidence", "value") != 2.0 {
		t.Fatalf("evaluate after the busy script was terminated = %s, want 2", dump(m))
	}
	mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Create account"}})
}

// A page-changing command's timeout is needsReconciliation unless it came
// before any input reached the page.
func TestClassifyTimeouts(t *testing.T) {
	parent := context.Background()
	for _, tt := range []struct {
		name       string
		err        error
		mutates    bool
		wantStatus string
		wantCode   string
	}{
		{"mutation cut off", browser.ErrTimeout, true, StatusNeedsReconciliation, CodeNeedsReconciliation},
		{"mutation cancelled", context.Canceled, true, StatusNeedsReconciliation, CodeNeedsReconciliation},
		{"mutation cut off before input", unsent(fmt.Errorf("resolve target: %w", browser.ErrTimeout)), true, StatusTimedOut, CodeTimeout},
		{"mutation cancelled before input", unsent(fmt.Errorf("resolve target: get frame tree: %w", context.Canceled)), true, StatusTimedOut, CodeTimeout},
		{"read cut off", browser.ErrTimeout, false, StatusTimedOut, CodeTimeout},
		{"target missing before input", unsent(snapshot.ErrTargetNotFound), true, StatusFailed, CodeTargetNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, info := classify(tt.err, commandSpec{mutates: tt.mutates}, parent)
			if status != tt.wantStatus || info.Code != tt.wantCode {
				t.Errorf("classify(%v) = %s %s, want %s %s", tt.err, status, info.Code, tt.wantStatus, tt.wantCode)
			}
		})
	}
}

// On Firefox too, element commands on a page whose main thread a script
// holds answer a retryable timeout within their timeoutMs: they locate
// their target (script calls the busy page never answers) before they send
// it any input. A click that was dispatched and then cut off (its own
// handler never yields) may have landed, and stays needsReconciliation.
// Firefox cannot stop such a script: the page stays busy until its session
// is closed, and so do the other pages of its site, which share its
// content process, so each busy session is closed before the next starts.
func TestFirefoxBusyPage(t *testing.T) {
	_, cs := engineGateway(t, engineFirefox)
	policy := map[string]any{"javascriptEvaluation": true}

	t.Run("click dispatched, then cut off", func(t *testing.T) {
		wf := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/signup.html", "executionPolicy": policy})
		defer mustOK(t, cs, "session_close", map[string]any{"sessionId": wf["sessionId"]})
		h := wf["workflowHandle"]
		mustOK(t, cs, "evaluate_javascript", map[string]any{"workflowHandle": h,
			"expression": `document.querySelector("button").addEventListener("click", () => { while (true) {} }); 1`})
		res, m := callWithin(t, cs, "click", map[string]any{"workflowHandle": h, "timeoutMs": 2000,
			"target": map[string]any{"role": "button", "name": "Create account"}})
		if !res.IsError || m["status"] != StatusNeedsReconciliation || errCode(m) != CodeNeedsReconciliation {
			t.Errorf("a click cut off in its own handler = %s %s, want %s: %s", m["status"], errCode(m), CodeNeedsReconciliation, dump(m))
		}
	})

	h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/signup.html", "executionPolicy": policy})["workflowHandle"]
	text := snapshotText(t, cs, h)
	button := refOf(t, text, "button", "Create account")
	email := refOf(t, text, "textbox", "Email")
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Before the page is busy a target not in it is targetNotFound, as on
	// Chromium; on the busy page nothing can tell, and it is a timeout.
	for _, target := range []map[string]any{{"role": "button", "name": "No such button"}, {"ref": "e9999"}} {
		mustFail(t, cs, "click", map[string]any{"workflowHandle": h, "target": target}, CodeTargetNotFound)
		mustFail(t, cs, "type_text", map[string]any{"workflowHandle": h, "target": target, "text": "abc"}, CodeTargetNotFound)
	}
	mustOK(t, cs, "evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "setTimeout(() => { while (true) {} }, 0); 1"})
	for _, tt := range []struct {
		name string
		tool string
		args map[string]any
	}{
		{"click by ref", "click", map[string]any{"target": map[string]any{"ref": button}}},
		{"click by role and name", "click", map[string]any{"target": map[string]any{"role": "button", "name": "Create account"}}},
		{"click on a target not in the page", "click", map[string]any{"target": map[string]any{"role": "button", "name": "No such button"}}},
		{"type_text by ref", "type_text", map[string]any{"target": map[string]any{"ref": email}, "text": "abc"}},
		{"type_text by role and name", "type_text", map[string]any{"target": map[string]any{"role": "textbox", "name": "Email"}, "text": "abc"}},
		{"control_action", "control_action", map[string]any{"target": map[string]any{"role": "textbox", "name": "Email"},
			"action": map[string]any{"kind": "setText", "text": "abc"}}},
		{"upload_files", "upload_files", map[string]any{"target": map[string]any{"role": "button", "name": "Create account"}, "paths": []string{file}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.args["workflowHandle"], tt.args["timeoutMs"] = h, 2000
			res, m := callWithin(t, cs, tt.tool, tt.args)
			if !res.IsError {
				t.Fatalf("%s on a busy page succeeded: %s", tt.tool, dump(m))
			}
			if m["status"] != StatusTimedOut || errCode(m) != CodeTimeout {
				t.Errorf("%s on a busy page = %s %s, want %s %s: %s", tt.tool, m["status"], errCode(m), StatusTimedOut, CodeTimeout, dump(m))
			}
		})
	}
}
