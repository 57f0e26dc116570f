package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/gatewaytest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHTTPAuth(t *testing.T) {
	_, base := httpGateway(t)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tt := range []struct {
		name, auth string
		want       int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"not bearer", "Basic YWxpY2U6eA==", http.StatusUnauthorized},
		{"unknown token", "Bearer nope", http.StatusUnauthorized},
		{"expired credential", "Bearer old-token", http.StatusUnauthorized},
		{"valid", "Bearer alice-token", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if a := gatewaytest.Post(t, testCtx(t), base+MCPPath, initBody, "Authorization", tt.auth); a.Status != tt.want {
				t.Errorf("status %d, want %d", a.Status, tt.want)
			}
		})
	}
	// DELETE ends an MCP session; the id is then unknown.
	sid := gatewaytest.Post(t, testCtx(t), base+MCPPath, initBody, "Authorization", "Bearer alice-token").Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("initialize returned no Mcp-Session-Id")
	}
	del, _ := http.NewRequest(http.MethodDelete, base+MCPPath, nil)
	del.Header.Set("Mcp-Session-Id", sid)
	del.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE = %s", resp.Status)
	}
	if a := gatewaytest.Post(t, testCtx(t), base+MCPPath, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Authorization", "Bearer alice-token", "Mcp-Session-Id", sid); a.Status != http.StatusNotFound {
		t.Errorf("request on a deleted session = %d", a.Status)
	}

	resp, err = http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Errorf("healthz body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || h["status"] != "ok" {
		t.Errorf("healthz = %d %v", resp.StatusCode, h)
	}
}

func TestCapabilityGating(t *testing.T) {
	_, base := httpGateway(t)
	reader := connectHTTP(t, base, "reader-token", nil)
	alice := connectHTTP(t, base, "alice-token", nil)

	rt := toolNames(t, reader)
	for _, hidden := range []string{"navigate", "workflow_start", "workflow_observe", "intent_complete_form"} {
		if rt[hidden] {
			t.Errorf("reader (page:read only) sees %s", hidden)
		}
	}
	for _, visible := range []string{"a11y_snapshot", "form_snapshot", "context_ask", "session_create", "runtime_info"} {
		if !rt[visible] {
			t.Errorf("reader does not see %s", visible)
		}
	}
	if at := toolNames(t, alice); !at["navigate"] || !at["workflow_start"] {
		t.Errorf("alice (all capabilities) misses navigate/workflow_start: %v", at)
	}
	// Advertisement is never authority: the hidden tool is refused on call.
	s := mustOK(t, reader, "session_create", map[string]any{"profile": "default"})
	p := mustOK(t, reader, "page_open", map[string]any{"sessionId": s["id"]})
	m := mustFail(t, reader, "navigate", map[string]any{"sessionId": s["id"], "pageId": p["id"], "url": fixtures.URL}, CodeCapabilityDenied)
	if get(m, "error", "repair", "doc") != TaxonomyURI+"#"+CodeCapabilityDenied {
		t.Errorf("repair = %v", get(m, "error", "repair"))
	}
	// Dynamic requirements: page_open with a URL needs browser:mutate.
	mustFail(t, reader, "page_open", map[string]any{"sessionId": s["id"], "url": fixtures.URL}, CodeCapabilityDenied)
	// The godmode flag is not even in reader's schema.
	mustFail(t, reader, "session_create", map[string]any{"profile": "default", "executionPolicy": map[string]any{"zigzagzig": true}}, CodeSchemaViolation)
	mustFail(t, reader, "session_create", map[string]any{"profile": "default", "executionPolicy": map[string]any{"fingerprint": true}}, CodeCapabilityDenied)

	info := mustOK(t, reader, "runtime_info", nil)
	if info["principal"] != "reader" || info["credentialExpiresAt"] != nil || info["phase"] != "explore" {
		t.Errorf("runtime_info = %s", dump(info))
	}
	if caps, _ := info["grantedCapabilities"].([]any); len(caps) != 1 || caps[0] != "page:read" {
		t.Errorf("grantedCapabilities = %v", info["grantedCapabilities"])
	}
	if feats := dump(info["capabilities"]); strings.Contains(feats, "vision") {
		t.Errorf("vision features listed without a vision provider: %s", feats)
	}
}

func TestOwnershipAcrossPrincipals(t *testing.T) {
	_, base := httpGateway(t)
	alice := connectHTTP(t, base, "alice-token", nil)
	bob := connectHTTP(t, base, "bob-token", nil)
	s := mustOK(t, alice, "session_create", map[string]any{"profile": "default"})
	sid := s["id"]
	p := mustOK(t, alice, "page_open", map[string]any{"sessionId": sid, "url": fixtures.URL + "/index.html"})
	pid := p["id"]

	if list := mustOK(t, bob, "session_list", nil); len(list["sessions"].([]any)) != 0 {
		t.Errorf("bob sees alice's sessions: %s", dump(list))
	}
	mustFail(t, bob, "page_list", map[string]any{"sessionId": sid}, CodeNotFound)
	mustFail(t, bob, "a11y_snapshot", map[string]any{"sessionId": sid, "pageId": pid}, CodeNotFound)
	mustFail(t, bob, "a11y_snapshot", map[string]any{"pageId": pid}, CodeNotFound)
	mustFail(t, bob, "session_close", map[string]any{"sessionId": sid}, CodeNotFound)
	// Unknown and foreign look the same.
	foreign := mustFail(t, bob, "page_list", map[string]any{"sessionId": sid}, CodeNotFound)
	unknown := mustFail(t, bob, "page_list", map[string]any{"sessionId": "10000000-0000-4000-8000-000000000001"}, CodeNotFound)
	if strings.ReplaceAll(asStr(get(foreign, "error", "message")), asStr(sid), "X") != strings.ReplaceAll(asStr(get(unknown, "error", "message")), "10000000-0000-4000-8000-000000000001", "X") {
		t.Errorf("foreign and unknown differ: %v vs %v", get(foreign, "error"), get(unknown, "error"))
	}
	// Alice's session survived bob's attempts.
	if list := mustOK(t, alice, "session_list", nil); len(list["sessions"].([]any)) != 1 {
		t.Errorf("alice's sessions = %s", dump(list))
	}
	mustOK(t, alice, "session_close", map[string]any{"sessionId": sid})
	mustFail(t, alice, "page_list", map[string]any{"sessionId": sid}, CodeNotFound)
}

func TestPhasesAndListChanged(t *testing.T) {
	_, base := httpGateway(t)
	changedA := make(chan struct{}, 8)
	changedB := make(chan struct{}, 8)
	a := connectHTTP(t, base, "alice-token", changedA)
	b := connectHTTP(t, base, "alice-token", changedB)

	before := toolNames(t, a)
	if !before["intent_complete_form"] || before["click"] {
		t.Fatalf("explore phase tools wrong: %v", before)
	}
	m := mustOK(t, a, "toolset_select", map[string]any{"phase": "act"})
	if m["changed"] != true || m["previousPhase"] != "explore" {
		t.Errorf("toolset_select = %s", dump(m))
	}
	select {
	case <-changedA:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after a phase change")
	}
	after := toolNames(t, a)
	if !after["click"] || after["intent_complete_form"] || !after["workflow_start"] || !after["session_create"] {
		t.Errorf("act phase tools wrong: %v", after)
	}
	// Selecting the phase in effect sends nothing; the other session heard nothing.
	if m := mustOK(t, a, "toolset_select", map[string]any{"phase": "act"}); m["changed"] != false {
		t.Errorf("re-select = %s", dump(m))
	}
	select {
	case <-changedA:
		t.Error("list_changed sent for the phase already in effect")
	case <-changedB:
		t.Error("list_changed leaked to another session")
	case <-time.After(500 * time.Millisecond):
	}
	if bt := toolNames(t, b); bt["click"] || !bt["intent_complete_form"] {
		t.Errorf("other session's tools changed: %v", bt)
	}
	// A tool hidden by the phase stays callable.
	s := mustOK(t, a, "session_create", map[string]any{"profile": "default"})
	p := mustOK(t, a, "page_open", map[string]any{"sessionId": s["id"]})
	m = mustOK(t, a, "context_ask", map[string]any{"sessionId": s["id"], "pageId": p["id"], "question": "the Go button"})
	if m["answer"] != nil || m["reason"] != "noRetainedContext" {
		t.Errorf("context_ask on a fresh page = %s", dump(m))
	}
	if info := mustOK(t, a, "runtime_info", nil); info["phase"] != "act" {
		t.Errorf("runtime_info phase = %v", info["phase"])
	}
}

func TestSchemaViolationOverMCP(t *testing.T) {
	alice := aliceClient(t)
	m := mustFail(t, alice, "session_create", map[string]any{}, CodeSchemaViolation)
	if m["reason"] != "schemaViolation" || m["pointer"] != "/profile" || m["constraint"] != "required" {
		t.Errorf("structuredContent = %s", dump(m))
	}
	if get(m, "repair", "doc") != TaxonomyURI+"#schemaViolation" || get(m, "repair", "action") == "" {
		t.Errorf("repair = %v", m["repair"])
	}
	// Oversized tool input.
	mustFail(t, alice, "context_ask", map[string]any{"pageId": "p", "question": strings.Repeat("x", MaxToolInputBytes)}, CodeInputTooLarge)

	// Malformed protocol requests are JSON-RPC -32602 with the same data.
	for _, tt := range []struct {
		name    string
		params  *mcp.CallToolParams
		pointer string
	}{
		{"unknown tool", &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}, "/params/name"},
		{"arguments not an object", &mcp.CallToolParams{Name: "session_list", Arguments: []int{1}}, "/params/arguments"},
	} {
		_, err := alice.CallTool(testCtx(t), tt.params)
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("%s: err = %v, want -32602", tt.name, err)
		}
		var data map[string]any
		if err := json.Unmarshal(werr.Data, &data); err != nil {
			t.Fatalf("%s: data %s: %v", tt.name, werr.Data, err)
		}
		if data["reason"] != "schemaViolation" || data["pointer"] != tt.pointer || data["constraint"] == "" || get(data, "repair", "doc") == nil {
			t.Errorf("%s: data = %s", tt.name, werr.Data)
		}
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	_, base := httpGateway(t)
	reader := connectHTTP(t, base, "reader-token", nil)
	res, err := reader.ListResources(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	uris := map[string]bool{}
	for _, r := range res.Resources {
		uris[r.URI] = true
	}
	for _, u := range []string{ResourceTaxonomy, ResourceCapabilities, ResourcePhases, ResourceSchemas} {
		if !uris[u] {
			t.Errorf("resource %s not listed", u)
		}
		rr, err := reader.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: u})
		if err != nil || len(rr.Contents) != 1 || !json.Valid([]byte(rr.Contents[0].Text)) {
			t.Errorf("read %s: %v", u, err)
		}
	}
	rr, _ := reader.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: ResourceTaxonomy})
	for _, code := range []string{"schemaViolation", "workflowBindingConflict", "unknownWorkflowHandle", "needsReconciliation", "pageOpenFailed"} {
		if !strings.Contains(rr.Contents[0].Text, `"`+code+`"`) {
			t.Errorf("taxonomy lacks %s", code)
		}
	}
	pr, err := reader.ListPrompts(testCtx(t), nil)
	if err != nil || len(pr.Prompts) != 3 {
		t.Fatalf("prompts = %v, %v", pr, err)
	}
	for _, p := range pr.Prompts {
		got, err := reader.GetPrompt(testCtx(t), &mcp.GetPromptParams{Name: p.Name, Arguments: map[string]string{"sessionId": "S1", "pageId": "P1"}})
		if err != nil || len(got.Messages) == 0 || !strings.Contains(dump(got.Messages), "P1") {
			t.Errorf("prompt %s: %v %v", p.Name, err, got)
		}
	}
	if _, err := reader.GetPrompt(testCtx(t), &mcp.GetPromptParams{Name: "recover_workflow", Arguments: map[string]string{"sessionId": "S1"}}); err == nil {
		t.Error("prompt without pageId accepted")
	}
}
