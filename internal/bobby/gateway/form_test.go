package gateway

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/config"
)

// TestFormLoop runs the standard form loop on the fixture: workflow_start →
// workflow_observe → intent_complete_form → intent_submit_and_verify, with
// a blocked submit (client validation) repaired in between.
func TestFormLoop(t *testing.T) {
	alice := aliceClient(t)
	// All four are advertised in the startup phase.
	names := toolNames(t, alice)
	for _, n := range []string{"workflow_start", "workflow_observe", "intent_complete_form", "intent_submit_and_verify"} {
		if !names[n] {
			t.Fatalf("%s not advertised in explore", n)
		}
	}
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/form.html"})
	h := start["workflowHandle"]
	obs := mustOK(t, alice, "workflow_observe", map[string]any{"workflowHandle": h, "includeForms": true, "maxNodes": 256, "maxControls": 128})
	if !strings.Contains(dump(obs["formSnapshot"]), "Email") {
		t.Fatalf("formSnapshot lacks the form: %s", dump(obs))
	}

	// Submitting the empty form is blocked by client-side validation.
	blocked := mustFail(t, alice, "intent_submit_and_verify", map[string]any{"workflowHandle": h}, CodeFormValidation)
	issues, _ := get(blocked, "evidence", "formValidation").([]any)
	if len(issues) == 0 {
		t.Fatalf("blocked submit without formValidation: %s", dump(blocked))
	}

	const password = "s3cret-Pa55"
	done := mustOK(t, alice, "intent_complete_form", map[string]any{"workflowHandle": h, "idempotencyKey": "fill-1",
		"values": map[string]any{"Email": "ada@example.com", "Name": "Ada", "Gift": true, "Password": password, "Plan": "Pro"}})
	if strings.Contains(dump(done), password) {
		t.Fatal("a password value was echoed in evidence")
	}
	revealed, _ := get(done, "evidence", "revealedControls").([]any)
	if len(revealed) != 1 || !strings.Contains(dump(revealed[0]), "Gift message") {
		t.Fatalf("revealedControls = %s", dump(get(done, "evidence", "revealedControls")))
	}
	// The revealed control's target is usable at once.
	target := get(revealed[0].(map[string]any), "target")
	ca := mustOK(t, alice, "control_action", map[string]any{"workflowHandle": h, "target": target,
		"action": map[string]any{"kind": "setText", "text": "Happy birthday"}})
	if get(ca, "evidence", "control", "applied") != true {
		t.Errorf("control_action = %s", dump(ca))
	}

	sub := mustOK(t, alice, "intent_submit_and_verify", map[string]any{"workflowHandle": h,
		"expect": map[string]any{"urlContains": "submitted", "textContains": "Thanks"}})
	if get(sub, "evidence", "submission", "status") != "verified" {
		t.Fatalf("submission = %s", dump(sub))
	}
	page := mustOK(t, alice, "page_list", map[string]any{"sessionId": start["sessionId"]})
	if !strings.Contains(dump(page), "submitted.html") || !strings.Contains(dump(page), "giftmsg=Happy") {
		t.Errorf("page after submit = %s", dump(page))
	}
}

func TestControlActionsAndFiles(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/form.html"})
	h := start["workflowHandle"]
	fs := mustOK(t, alice, "form_snapshot", map[string]any{"workflowHandle": h})
	if get(fs, "evidence", "formSnapshot", "controls") == nil {
		t.Fatalf("form_snapshot = %s", dump(fs))
	}
	sel := mustOK(t, alice, "control_action", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "combobox", "name": "Plan"},
		"action": map[string]any{"kind": "selectOne", "option": "pro"}})
	if !strings.Contains(dump(get(sel, "evidence", "control", "selected")), "pro") {
		t.Errorf("selectOne = %s", dump(sel))
	}
	mustFail(t, alice, "control_action", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "checkbox", "name": "Gift"},
		"action": map[string]any{"kind": "setText", "text": "x"}}, CodeInvalidRequest)

	// setFiles needs file:upload at runtime.
	_, base2 := httpGatewayWith(t, func(c *config.Config) { c.Principals[0].Capabilities = []string{"browser:mutate", "page:read"} })
	limited := connectHTTP(t, base2, "alice-token", nil)
	ls := mustOK(t, limited, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/form.html"})
	mustFail(t, limited, "control_action", map[string]any{"workflowHandle": ls["workflowHandle"], "target": map[string]any{"role": "textbox", "name": "Email"},
		"action": map[string]any{"kind": "setFiles", "paths": []string{"/etc/hostname"}}}, CodeCapabilityDenied)
}

// TestSubmitNotVerified: a submit answered 500 and a link that only
// changes the fragment are not verified, and the answer says what was seen.
func TestSubmitNotVerified(t *testing.T) {
	alice := aliceClient(t)

	h := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/order500"})["workflowHandle"]
	res, m := callTool(t, alice, "intent_submit_and_verify", map[string]any{"workflowHandle": h})
	if !res.IsError || errCode(m) != CodeNotVerified || !strings.Contains(dump(get(m, "evidence", "submission", "responses")), `"status":500`) {
		t.Fatalf("submit to a 500 = %s", dump(m))
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "HTTP 500") {
		t.Errorf("the text does not say what was seen: %s", text)
	}

	h = mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/order500"})["workflowHandle"]
	m = mustFail(t, alice, "intent_submit_and_verify", map[string]any{"workflowHandle": h,
		"target": map[string]any{"role": "link", "name": "Send message"}}, CodeNotVerified)
	if get(m, "evidence", "submission", "navigated") != false {
		t.Errorf("a fragment change counted as navigation: %s", dump(m))
	}
}
