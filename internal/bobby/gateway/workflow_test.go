package gateway

import (
	"bytes"
	"encoding/base64"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/workflow"
)

func TestWorkflowHandles(t *testing.T) {
	_, base := httpGateway(t)
	alice := connectHTTP(t, base, "alice-token", nil)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	h := asStr(start["workflowHandle"])
	if !workflow.ValidHandle(h) {
		t.Fatalf("handle %q is not wf_ + 32 hex", h)
	}
	if get(start, "navigationOutcome", "status") != "completed" || get(start, "session", "profile") != "default" ||
		get(start, "page", "mode") != "Interactive" || start["workflowId"] == "" {
		t.Errorf("workflow_start = %s", dump(start))
	}
	// The handle replaces the scope fields and carries the workflow id.
	snap := mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "main"}})
	if snap["workflowId"] != start["workflowId"] || !strings.Contains(asStr(get(snap, "evidence", "accessibility", "text")), "Welcome") {
		t.Errorf("a11y_snapshot = %s", dump(snap))
	}
	if get(snap, "evidence", "accessibility", "nodes") != nil {
		t.Error("compact evidence carries structured nodes")
	}
	full := mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h, "evidenceDetail": "full"})
	if get(full, "evidence", "accessibility", "nodes") == nil || full["diagnostics"] == nil {
		t.Error("full evidence lacks nodes/diagnostics")
	}
	// Retained context answers, then a page-changing command invalidates it.
	ask := mustOK(t, alice, "context_ask", map[string]any{"workflowHandle": h, "question": "Go button"})
	if get(ask, "answer", "target", "role") != "button" || get(ask, "answer", "confidence") == nil {
		t.Fatalf("context_ask = %s", dump(ask))
	}
	obs := mustOK(t, alice, "workflow_observe", map[string]any{"workflowHandle": h, "goal": "Go button"})
	if obs["source"] != "retained" || get(obs, "retainedAnswer", "ref") == nil {
		t.Errorf("observe with a valid retained context = %s", dump(obs))
	}
	click := mustOK(t, alice, "click", map[string]any{"workflowHandle": h, "target": get(ask, "answer", "target"), "modifiers": []string{"shift"}})
	if click["workflowId"] != start["workflowId"] || click["commandId"] == "" {
		t.Errorf("click = %s", dump(click))
	}
	if get(click, "evidence", "accessibility") != nil {
		t.Error("an action result carries a snapshot by default")
	}
	after := mustOK(t, alice, "context_ask", map[string]any{"workflowHandle": h, "question": "Go button"})
	if after["answer"] != nil {
		t.Errorf("retained context survived a click: %s", dump(after))
	}
	obs = mustOK(t, alice, "workflow_observe", map[string]any{"workflowHandle": h, "goal": "Go button", "includeForms": true})
	if obs["source"] != "live" || get(obs, "observationOutcome", "status") != "completed" || obs["formSnapshot"] == nil {
		t.Errorf("observe after a click = %s", dump(obs))
	}
	if !strings.Contains(asStr(get(obs, "observationOutcome", "evidence", "accessibility", "text")), "clicked with shift") {
		t.Errorf("the shift modifier was not applied during the click: %s", dump(get(obs, "observationOutcome", "evidence")))
	}
	// Mixing a handle with explicit ids, and bad handles.
	mustFail(t, alice, "navigate", map[string]any{"workflowHandle": h, "sessionId": start["sessionId"], "url": fixtures.URL}, CodeWorkflowBindingConflict)
	mustFail(t, alice, "navigate", map[string]any{"workflowHandle": "wf_nothex", "url": fixtures.URL}, CodeUnknownWorkflowHandle)
	mustFail(t, alice, "navigate", map[string]any{"workflowHandle": "wf_00000000000000000000000000000000", "url": fixtures.URL}, CodeUnknownWorkflowHandle)
	// The explicit form still works alongside.
	mustOK(t, alice, "inspect", map[string]any{"sessionId": start["sessionId"], "pageId": start["pageId"]})
	// Handles are bindings, not authority: bob cannot use alice's handle.
	bob := connectHTTP(t, base, "bob-token", nil)
	mustFail(t, bob, "a11y_snapshot", map[string]any{"workflowHandle": h}, CodeUnknownWorkflowHandle)
	// A failed page-changing command invalidates the retained context too.
	mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h})
	if a := mustOK(t, alice, "context_ask", map[string]any{"workflowHandle": h, "question": "Go button"}); a["answer"] == nil {
		t.Fatalf("no retained answer after a snapshot: %s", dump(a))
	}
	mustFail(t, alice, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"ref": "e999999"}}, CodeTargetNotFound)
	if a := mustOK(t, alice, "context_ask", map[string]any{"workflowHandle": h, "question": "Go button"}); a["answer"] != nil {
		t.Errorf("retained context survived a failed click: %s", dump(a))
	}
	// A new initialize (a new MCP session of the same principal) does not
	// see the handles of the previous one.
	again := connectHTTP(t, base, "alice-token", nil)
	mustFail(t, again, "a11y_snapshot", map[string]any{"workflowHandle": h}, CodeUnknownWorkflowHandle)
	mustOK(t, again, "a11y_snapshot", map[string]any{"sessionId": start["sessionId"], "pageId": start["pageId"]})
	// page_close through the handle evicts it.
	mustOK(t, alice, "page_close", map[string]any{"workflowHandle": h})
	mustFail(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h}, CodeUnknownWorkflowHandle)

	// session_close evicts handles of that session.
	s2 := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default"})
	if s2["navigationOutcome"] != nil || get(s2, "page", "url") != nil {
		t.Errorf("start without url = %s", dump(s2))
	}
	mustOK(t, alice, "session_close", map[string]any{"sessionId": s2["sessionId"]})
	mustFail(t, alice, "workflow_observe", map[string]any{"workflowHandle": s2["workflowHandle"]}, CodeUnknownWorkflowHandle)
}

func TestWorkflowStartNavigationFailure(t *testing.T) {
	alice := aliceClient(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/"
	l.Close() // nothing listens there now
	res, m := callTool(t, alice, "workflow_start", map[string]any{"profile": "default", "url": dead})
	if !res.IsError || m["status"] != StatusFailed || m["reason"] != CodeNavigationFailed || m["workflowHandle"] != nil {
		t.Fatalf("workflow_start to a dead port = %s", dump(m))
	}
	if m["pageId"] == nil || m["sessionId"] == nil || m["sessionDeleted"] != true || m["pageClosed"] != true {
		t.Errorf("cleanup fields = %s", dump(m))
	}
	if get(m, "navigationOutcome", "status") != "failed" {
		t.Errorf("navigationOutcome = %v", m["navigationOutcome"])
	}
	// Nothing is left behind.
	if list := mustOK(t, alice, "session_list", nil); len(list["sessions"].([]any)) != 0 {
		t.Errorf("failed start left sessions: %s", dump(list))
	}
	mustFail(t, alice, "workflow_start", map[string]any{"profile": "nope"}, CodeInvalidRequest)
	mustFail(t, alice, "workflow_start", map[string]any{"profile": "default", "executionPolicy": map[string]any{"visionAssist": true}}, CodeVisionAssistFailed)
}

func TestCommandExecuteAndIdempotency(t *testing.T) {
	_, base := httpGateway(t)
	alice := connectHTTP(t, base, "alice-token", nil)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	env := map[string]any{"kind": "type_text", "sessionId": start["sessionId"], "pageId": start["pageId"],
		"input": map[string]any{"target": map[string]any{"role": "textbox", "name": "Search"}, "text": "abc"}}
	first := mustOK(t, alice, "command_execute", map[string]any{"envelope": env, "idempotencyKey": "k1"})
	second := mustOK(t, alice, "command_execute", map[string]any{"envelope": env, "idempotencyKey": "k1"})
	if second["commandId"] != first["commandId"] || second["replayed"] != true {
		t.Errorf("retry with the same key re-executed: %s vs %s", dump(first), dump(second))
	}
	// Typed once, not twice.
	ex := mustOK(t, alice, "inspect", map[string]any{"sessionId": start["sessionId"], "pageId": start["pageId"], "selector": "#q"})
	if v := get(ex, "evidence", "node", "attributes"); v == nil {
		t.Fatalf("inspect = %s", dump(ex))
	}
	val := mustOK(t, alice, "command_execute", map[string]any{"envelope": map[string]any{"kind": "wait_for",
		"sessionId": start["sessionId"], "pageId": start["pageId"],
		"input": map[string]any{"condition": map[string]any{"kind": "value", "selector": "#q", "matcher": map[string]any{"kind": "exact", "value": "abc"}}}}})
	if get(val, "evidence", "wait", "matched") != true {
		t.Errorf("field value after an idempotent retry: %s", dump(val))
	}
	// Same key, different request.
	env2 := map[string]any{"kind": "type_text", "sessionId": start["sessionId"], "pageId": start["pageId"],
		"input": map[string]any{"selector": "#q", "text": "zzz"}}
	mustFail(t, alice, "command_execute", map[string]any{"envelope": env2, "idempotencyKey": "k1"}, CodeIdempotencyKeyReused)
	// Nested intent envelope.
	loc := mustOK(t, alice, "command_execute", map[string]any{"envelope": map[string]any{"kind": "intent",
		"workflowHandle": start["workflowHandle"], "input": map[string]any{"kind": "locate", "description": "Go button"}}})
	if loc["kind"] != "intent_locate" || get(loc, "evidence", "located", "target", "role") != "button" {
		t.Errorf("intent locate = %s", dump(loc))
	}
	// Envelope input is validated against the kind's schema.
	m := mustFail(t, alice, "command_execute", map[string]any{"envelope": map[string]any{"kind": "navigate",
		"sessionId": start["sessionId"], "pageId": start["pageId"], "input": map[string]any{}}}, CodeSchemaViolation)
	if m["pointer"] != "/envelope/input/url" || m["constraint"] != "required" {
		t.Errorf("envelope violation = %s", dump(m))
	}
	mustFail(t, alice, "command_execute", map[string]any{"envelope": map[string]any{"kind": "intent", "pageId": start["pageId"],
		"input": map[string]any{"kind": "teleport"}}}, CodeSchemaViolation)
	// Capability of the kind is checked: reader cannot navigate through the hatch.
	reader := connectHTTP(t, base, "reader-token", nil)
	rs := mustOK(t, reader, "session_create", map[string]any{"profile": "default"})
	rp := mustOK(t, reader, "page_open", map[string]any{"sessionId": rs["id"]})
	mustFail(t, reader, "command_execute", map[string]any{"envelope": map[string]any{"kind": "navigate",
		"sessionId": rs["id"], "pageId": rp["id"], "input": map[string]any{"url": fixtures.URL}}}, CodeCapabilityDenied)
}

func TestEvaluatePolicyAndScreenshotArtifacts(t *testing.T) {
	_, base := httpGateway(t)
	alice := connectHTTP(t, base, "alice-token", nil)
	plain := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	mustFail(t, alice, "evaluate_javascript", map[string]any{"workflowHandle": plain["workflowHandle"], "expression": "1+1"}, CodePolicyDenied)
	js := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html",
		"executionPolicy": map[string]any{"javascriptEvaluation": true}})
	ev := mustOK(t, alice, "evaluate_javascript", map[string]any{"workflowHandle": js["workflowHandle"], "expression": "document.title + ':' + (6*7)"})
	if get(ev, "evidence", "value") != "Home:42" {
		t.Errorf("evaluate = %s", dump(ev))
	}
	mustFail(t, alice, "evaluate_javascript", map[string]any{"workflowHandle": js["workflowHandle"], "expression": "throw new Error('boom')"}, CodeJavaScriptError)

	shot := mustOK(t, alice, "screenshot", map[string]any{"workflowHandle": plain["workflowHandle"]})
	uri := asStr(get(shot, "evidence", "artifact", "uri"))
	if !strings.HasPrefix(uri, "artifact://") || get(shot, "evidence", "artifact", "sha256") == nil {
		t.Fatalf("screenshot = %s", dump(shot))
	}
	rr, err := alice.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("read %s: %v", uri, err)
	}
	png := rr.Contents[0].Blob
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Errorf("artifact is not a PNG: %q", base64.StdEncoding.EncodeToString(png[:min(len(png), 8)]))
	}
	// The same PNG rides in the result as image content: hosts forward
	// content, not structuredContent, to the model.
	res, _ := callTool(t, alice, "screenshot", map[string]any{"workflowHandle": plain["workflowHandle"]})
	var imgs []*mcp.ImageContent
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			imgs = append(imgs, img)
		}
	}
	if len(imgs) != 1 || imgs[0].MIMEType != "image/png" || !bytes.HasPrefix(imgs[0].Data, []byte("\x89PNG")) {
		t.Errorf("screenshot content: %d images, want one PNG", len(imgs))
	}
	bob := connectHTTP(t, base, "bob-token", nil)
	if _, err := bob.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Error("bob read alice's artifact")
	}
	reader := connectHTTP(t, base, "reader-token", nil)
	if _, err := reader.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Error("a principal without artifact:read read an artifact")
	}
}

func TestWaitForAndPopups(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/slowpage"})
	h := start["workflowHandle"]
	w := mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "networkQuiet", "idleMs": 200}})
	if get(w, "evidence", "wait", "matched") != true {
		t.Errorf("networkQuiet = %s", dump(w))
	}
	mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "text",
		"target": map[string]any{"role": "main"}, "matcher": map[string]any{"kind": "contains", "value": "slow done"}}})
	mustFail(t, alice, "wait_for", map[string]any{"workflowHandle": h, "timeoutMs": 1500, "condition": map[string]any{"kind": "text",
		"matcher": map[string]any{"kind": "exact", "value": "never there"}}}, CodeTimeout)
	mustFail(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "url",
		"matcher": map[string]any{"kind": "regex", "value": "("}}}, CodeInvalidRequest)

	mustOK(t, alice, "navigate", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/index.html"})
	mustOK(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "#pop"})
	mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "networkQuiet"}})
	var pages []any
	// until the popup is listed; the minute only bounds a hang
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		pages = mustOK(t, alice, "page_list", map[string]any{"sessionId": start["sessionId"]})["pages"].([]any)
		if len(pages) == 2 {
			break
		}
		mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "networkQuiet", "idleMs": 100}})
	}
	if len(pages) != 2 || get(pages[1].(map[string]any), "opener_id") != start["pageId"] {
		t.Fatalf("popup not registered in the page graph: %s", dump(pages))
	}
	popup := pages[1].(map[string]any)["id"]
	mustOK(t, alice, "page_activate", map[string]any{"sessionId": start["sessionId"], "pageId": popup})
	// a target that no longer resolves names the repair
	m := mustFail(t, alice, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"ref": "e999999"}}, CodeTargetNotFound)
	if get(m, "error", "repair", "action") != "takeSnapshot" {
		t.Errorf("stale target repair = %v", get(m, "error", "repair"))
	}
}
