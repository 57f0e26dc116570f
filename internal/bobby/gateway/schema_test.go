package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

func mustArgs(t testing.TB, s string) any {
	t.Helper()
	v, err := decodeArgs(json.RawMessage(s))
	if err != nil {
		t.Fatalf("decodeArgs(%s): %v", s, err)
	}
	return v
}

func toolInput(t testing.TB, name string) func(any) *violation {
	t.Helper()
	for _, td := range buildTools() {
		if td.name == name {
			// DefaultLocal lacks fingerprint/humanize: no godmode flag.
			p, _ := policy.NewPrincipal("x", policy.NewSet(policy.DefaultLocal...), zeroTime, "")
			return func(v any) *violation { return validate(td.input(p), v) }
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// TestSchemaViolationsPerFamily checks one violation of each kind for every
// tool family: the pointer and constraint name the schema, and the
// submitted value never appears in what is reported.
func TestSchemaViolationsPerFamily(t *testing.T) {
	const secret = "hunter2-SECRET"
	for _, tt := range []struct {
		tool, args         string
		pointer, constrain string
	}{
		// lifecycle
		{"session_create", `{}`, "/profile", "required"},
		{"session_create", `{"profile":7}`, "/profile", "type"},
		{"session_create", `{"profile":"default","executionPolicy":{"zigzagzig":true}}`, "/executionPolicy", "additionalProperties"},
		{"session_close", `{}`, "/sessionId", "required"},
		{"page_open", `{"sessionId":"s","url":""}`, "/url", "minLength"},
		{"page_list", `{"sessionId":"s","` + secret + `":1}`, "", "additionalProperties"},
		{"toolset_select", `{"phase":"` + secret + `"}`, "/phase", "enum"},
		{"runtime_info", `{"x":1}`, "", "additionalProperties"},
		// workflow
		{"workflow_start", `{"url":"http://x"}`, "/profile", "required"},
		{"workflow_observe", `{}`, "/workflowHandle", "required"},
		{"workflow_observe", `{"workflowHandle":"h","maxNodes":0}`, "/maxNodes", "minimum"},
		// flat browser tools
		{"navigate", `{"pageId":"p"}`, "/url", "required"},
		{"click", `{"pageId":"p","modifiers":["shift","shift"]}`, "/modifiers", "uniqueItems"},
		{"click", `{"pageId":"p","modifiers":["hyper"]}`, "/modifiers/0", "enum"},
		{"click", `{"pageId":"p","target":{"ref":"e1","colour":"` + secret + `"}}`, "/target", "additionalProperties"},
		{"type_text", `{"pageId":"p","text":5}`, "/text", "type"},
		{"wait_for", `{"pageId":"p","condition":{}}`, "/condition/kind", "required"},
		{"wait_for", `{"pageId":"p","condition":{"kind":"` + secret + `"}}`, "/condition/kind", "enum"},
		{"wait_for", `{"pageId":"p","condition":{"kind":"text"}}`, "/condition/matcher", "required"},
		{"wait_for", `{"pageId":"p","condition":{"kind":"text","matcher":{"kind":"fuzzy","value":"` + secret + `"}}}`, "/condition/matcher/kind", "enum"},
		{"screenshot", `{"pageId":"p","fullPage":"yes"}`, "/fullPage", "type"},
		{"evaluate_javascript", `{"pageId":"p"}`, "/expression", "required"},
		{"dialog", `{"pageId":"p","accept":"` + secret + `"}`, "/accept", "type"},
		{"inspect", `{"pageId":"p","target":{"index":-1}}`, "/target/index", "minimum"},
		{"extract_structured", `{"pageId":"p","limit":100000}`, "/limit", "maximum"},
		// snapshots and forms
		{"a11y_snapshot", `{"pageId":"p","maxNodes":"many"}`, "/maxNodes", "type"},
		{"form_snapshot", `{"pageId":"p","maxControls":1.5}`, "/maxControls", "type"},
		{"control_action", `{"pageId":"p","target":{"ref":"e1"}}`, "/action", "required"},
		{"control_action", `{"pageId":"p","target":{"ref":"e1"},"action":{"kind":"setText"}}`, "/action/text", "required"},
		{"control_action", `{"pageId":"p","target":{"ref":"e1"},"action":{"kind":"setText","text":"` + secret + `","extra":1}}`, "/action", "additionalProperties"},
		{"context_ask", `{"pageId":"p"}`, "/question", "required"},
		// intents
		{"intent_locate", `{"pageId":"p","description":""}`, "/description", "minLength"},
		{"intent_fill", `{"pageId":"p","fields":[{"field":"Email"}]}`, "/fields/0/value", "required"},
		{"intent_complete_form", `{"pageId":"p","values":{"Email":{"x":1}}}`, "/values/Email", "type"},
		{"intent_submit_and_verify", `{"pageId":"p","expect":{"urlContains":""}}`, "/expect/urlContains", "minLength"},
		{"intent_submit_and_verify", `{"pageId":"p","waitFor":"forever"}`, "/waitFor", "enum"},
		{"intent_submit_and_verify", `{"pageId":"p","idempotencyKey":""}`, "/idempotencyKey", "minLength"},
		// escape hatch
		{"command_execute", `{}`, "/envelope", "required"},
		{"command_execute", `{"envelope":{"kind":"` + secret + `"}}`, "/envelope/kind", "enum"},
	} {
		t.Run(tt.tool+tt.pointer+"/"+tt.constrain, func(t *testing.T) {
			v := toolInput(t, tt.tool)(mustArgs(t, tt.args))
			if v == nil {
				t.Fatalf("%s accepted %s", tt.tool, tt.args)
			}
			if v.Pointer != tt.pointer || v.Constraint != tt.constrain {
				t.Errorf("violation = %q %q, want %q %q (%s)", v.Pointer, v.Constraint, tt.pointer, tt.constrain, v.Error())
			}
			if strings.Contains(v.Error(), secret) || strings.Contains(v.Pointer, secret) {
				t.Errorf("violation echoes the submitted value: %s", v.Error())
			}
		})
	}
}

func TestSchemaAccepts(t *testing.T) {
	for _, tt := range []struct{ tool, args string }{
		{"session_create", `{"profile":"default","executionPolicy":{"javascriptEvaluation":true}}`},
		{"navigate", `{"workflowHandle":"wf_0123456789abcdef0123456789abcdef","url":"http://x"}`},
		{"click", `{"pageId":"p","target":{"role":"button","name":"Go","index":1},"modifiers":["ctrl","shift"]}`},
		{"wait_for", `{"pageId":"p","condition":{"kind":"networkQuiet","idleMs":200}}`},
		{"wait_for", `{"pageId":"p","condition":{"kind":"text","matcher":{"kind":"regex","value":"a+"},"target":{"role":"main"}}}`},
		{"control_action", `{"pageId":"p","target":{"ref":"e1"},"action":{"kind":"selectMany","options":["a","b"]}}`},
		{"intent_complete_form", `{"pageId":"p","values":{"Email":"a@b.c","Gift":true,"Colours":["red"]}}`},
		{"command_execute", `{"envelope":{"kind":"intent","sessionId":"s","pageId":"p","input":{"kind":"locate","description":"x"}},"idempotencyKey":"k"}`},
		{"workflow_observe", `{"workflowHandle":"h","goal":"checkout","includeForms":true,"maxNodes":256,"maxControls":128}`},
	} {
		if v := toolInput(t, tt.tool)(mustArgs(t, tt.args)); v != nil {
			t.Errorf("%s rejected %s: %s %s", tt.tool, tt.args, v.Pointer, v.Constraint)
		}
	}
}

// TestToolMetadata: every tool has a title, all four annotations, an object
// input schema and an object output schema, so hosts can show and gate them.
func TestToolMetadata(t *testing.T) {
	p, _ := policy.NewPrincipal("x", policy.NewSet(policy.All...), zeroTime, "")
	names := map[string]bool{}
	for _, td := range buildTools() {
		mt := td.mcpTool(p, PhaseExplore)
		b, _ := json.Marshal(mt)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		ann, _ := m["annotations"].(map[string]any)
		for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := ann[k]; !ok {
				t.Errorf("%s: annotation %s missing", td.name, k)
			}
		}
		if m["title"] == "" || m["title"] == nil {
			t.Errorf("%s: no title", td.name)
		}
		if in, _ := m["inputSchema"].(map[string]any); in["type"] != "object" {
			t.Errorf("%s: input schema type %v", td.name, in["type"])
		}
		if out, _ := m["outputSchema"].(map[string]any); out["type"] != "object" {
			t.Errorf("%s: output schema type %v", td.name, out["type"])
		}
		if _, ok := commandSpecs[td.name]; !ok && td.handler == nil {
			t.Errorf("%s: no handler", td.name)
		}
		names[td.name] = true
	}
	for _, want := range append(alwaysTools(), "navigate", "click", "type_text", "a11y_snapshot", "form_snapshot",
		"control_action", "wait_for", "screenshot", "inspect", "extract_structured", "context_ask", "evaluate_javascript", "dialog",
		"intent_locate", "intent_fill", "intent_complete_form", "intent_submit_and_verify", "command_execute") {
		if !names[want] {
			t.Errorf("tool %s missing", want)
		}
	}
	for _, destructive := range []string{"session_close", "page_close", "intent_submit_and_verify"} {
		for _, td := range buildTools() {
			if td.name == destructive && !td.ann.Destructive {
				t.Errorf("%s must be destructiveHint", destructive)
			}
		}
	}
	for _, ro := range []string{"inspect", "a11y_snapshot", "form_snapshot", "session_list", "page_list", "runtime_info"} {
		for _, td := range buildTools() {
			if td.name == ro && !td.ann.ReadOnly {
				t.Errorf("%s must be readOnlyHint", ro)
			}
		}
	}
}

func TestPhaseTable(t *testing.T) {
	tools := map[string]bool{}
	for _, td := range buildTools() {
		tools[td.name] = true
	}
	for _, p := range Phases {
		for _, name := range phaseTools(p) {
			if !tools[name] {
				t.Errorf("phase %s names unknown tool %s", p, name)
			}
		}
		for _, a := range alwaysTools() {
			if !inPhase(a, p) {
				t.Errorf("%s missing from phase %s", a, p)
			}
		}
	}
	for _, loop := range []string{"workflow_start", "workflow_observe", "intent_complete_form", "intent_submit_and_verify"} {
		if !inPhase(loop, PhaseExplore) {
			t.Errorf("form-loop tool %s not in explore", loop)
		}
	}
	for name := range tools {
		found := false
		for _, p := range Phases {
			found = found || inPhase(name, p)
		}
		if !found {
			t.Errorf("tool %s is in no phase", name)
		}
	}
}

func TestTaxonomyCoversCodes(t *testing.T) {
	for _, code := range []string{CodeSchemaViolation, CodeInvalidRequest, CodeNetworkPolicyDenied, CodeNotFound,
		CodeWorkflowBindingConflict, CodeUnknownWorkflowHandle, CodeVisionAssistFailed, CodeNeedsReconciliation,
		CodePageOpenFailed, CodeNavigationFailed, CodeWorkflowGenerationChanged, CodeWorkflowSupervisorLost,
		CodeCapabilityDenied, CodeTargetNotFound, CodeDialogOpen, CodeFormValidation} {
		info, ok := taxonomy[code]
		if !ok || info.Action == "" || info.Meaning == "" {
			t.Errorf("taxonomy lacks %s", code)
		}
		if r := repairFor(code); r.Doc != TaxonomyURI+"#"+code {
			t.Errorf("repair doc of %s = %s", code, r.Doc)
		}
	}
	if taxonomy[CodeNeedsReconciliation].Retry != "never" {
		t.Error("needsReconciliation must carry the never-retry repair")
	}
}

func FuzzValidate(f *testing.F) {
	f.Add("navigate", `{"pageId":"p","url":"http://x"}`)
	f.Add("wait_for", `{"condition":{"kind":"text","matcher":{"kind":"exact","value":""}}}`)
	f.Add("command_execute", `{"envelope":{"kind":"intent","input":{"kind":"fill"}}}`)
	f.Add("click", `{"target":{"ref":"e1"},"modifiers":[]}`)
	f.Add("session_create", `[1,2,{"a":null}]`)
	f.Add("control_action", `{"action":{"kind":"setFiles","paths":["/etc/passwd"]}}`)
	tools := buildTools()
	p, _ := policy.NewPrincipal("x", policy.NewSet(policy.All...), zeroTime, "")
	f.Fuzz(func(t *testing.T, tool, args string) {
		v, err := decodeArgs(json.RawMessage(args))
		if err != nil {
			return
		}
		for _, td := range tools {
			if td.name == tool || tool == "" {
				if vi := validate(td.input(p), v); vi != nil && vi.Constraint == "" {
					t.Fatalf("violation without constraint for %s", args)
				}
			}
		}
	})
}

// TestAdvertisedSchemas: tools/list shows abridged input schemas (no
// bounds, compact targets, explore without the rarely used optional
// fields), but every call is still validated against the full schema, and
// the abridged one never names an argument the full one lacks nor omits a
// required one.
func TestAdvertisedSchemas(t *testing.T) {
	p, _ := policy.NewPrincipal("x", policy.NewSet(policy.All...), zeroTime, "")
	bounds := []string{`"minLength"`, `"maxLength"`, `"minimum"`, `"maximum"`, `"maxItems"`, `"minItems"`, `"maxProperties"`, `"$defs"`, `"$ref"`}
	for _, td := range buildTools() {
		full := td.input(p)
		for _, phase := range Phases {
			adv := advertised(full, phase)
			b, _ := json.Marshal(adv)
			for _, kw := range bounds {
				if strings.Contains(string(b), kw) {
					t.Errorf("%s (%s): advertised schema keeps %s: %s", td.name, phase, kw, b)
				}
			}
			for k := range adv.Properties {
				if _, ok := full.Properties[k]; !ok {
					t.Errorf("%s (%s): advertises %s, which the full schema lacks", td.name, phase, k)
				}
			}
			for _, r := range full.Required {
				if _, ok := adv.Properties[r]; !ok {
					t.Errorf("%s (%s): required %s is not advertised", td.name, phase, r)
				}
			}
			for _, k := range exploreHidden {
				_, inFull := full.Properties[k]
				_, inAdv := adv.Properties[k]
				if want := inFull && phase != PhaseExplore; inAdv != want {
					t.Errorf("%s (%s): %s advertised = %v, want %v", td.name, phase, k, inAdv, want)
				}
			}
		}
		// The full schema still carries its bounds.
		if td.name == "navigate" {
			if v := validate(full, mustArgs(t, `{"pageId":"p","url":"`+strings.Repeat("a", 70000)+`"}`)); v == nil || v.Constraint != "maxLength" {
				t.Errorf("navigate: an over-long url is accepted after abridging: %+v", v)
			}
		}
	}
	// Hidden in the explore listing, still accepted.
	if v := toolInput(t, "a11y_snapshot")(mustArgs(t, `{"pageId":"p","workflowId":"w","evidenceDetail":"full","timeoutMs":5000}`)); v != nil {
		t.Errorf("a11y_snapshot rejects the explore-hidden fields: %s %s", v.Pointer, v.Constraint)
	}
	if v := toolInput(t, "a11y_snapshot")(mustArgs(t, `{"pageId":"p","timeoutMs":5}`)); v == nil || v.Constraint != "minimum" {
		t.Errorf("a11y_snapshot timeoutMs 5: %+v, want minimum", v)
	}
}
