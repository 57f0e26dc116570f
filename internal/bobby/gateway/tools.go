package gateway

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/policy"
	"github.com/deltaharness/delta/internal/bobby/workflow"
)

// toolDef is one MCP tool: metadata, schemas, gate and handler.
type toolDef struct {
	name, title, desc string
	// capability is the static requirement ("" = any authenticated
	// principal); dynamic requirements live in the handler and in dynamic.
	capability policy.Capability
	dynamic    string // documentation of argument-dependent requirements

	readOnly, destructive, idempotent, openWorld bool

	inputSchema *jsonschema.Schema
	// inputFor, when set, builds a per-principal schema (session_create's
	// godmode flag is shown only to principals who may use it).
	inputFor func(p policy.Principal) *jsonschema.Schema
	output   *jsonschema.Schema

	handler func(ctx context.Context, c *call) (any, error)
}

func (t *toolDef) capabilities() []policy.Capability {
	if t.capability == "" {
		return nil
	}
	return []policy.Capability{t.capability}
}

func (t *toolDef) input(p policy.Principal) *jsonschema.Schema {
	if t.inputFor != nil {
		return t.inputFor(p)
	}
	return t.inputSchema
}

func (t *toolDef) advertisedTo(p policy.Principal, phase Phase) bool {
	return p.Capabilities.Has(t.capabilities()...) && inPhase(t.name, phase)
}

// mcpTool is the tool as tools/list advertises it in phase: the abridged
// input schema of advertised and a bare {"type":"object"} output schema.
// The full schemas are enforced all the same and published in
// bobby://schemas; advertising them cost more than half of tools/list.
func (t *toolDef) mcpTool(p policy.Principal, phase Phase) *mcp.Tool {
	return &mcp.Tool{
		Name:         t.name,
		Title:        t.title,
		Description:  t.desc,
		InputSchema:  t.advertisedInput(p, phase),
		OutputSchema: advertisedOutput,
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.readOnly,
			DestructiveHint: ptr(t.destructive),
			IdempotentHint:  t.idempotent,
			OpenWorldHint:   ptr(t.openWorld),
		},
	}
}

// advertisedInput is advertised, plus: in the explore phase, where
// session_create and workflow_start are listed side by side,
// workflow_start's executionPolicy points at session_create's instead of
// repeating it.
func (t *toolDef) advertisedInput(p policy.Principal, phase Phase) *jsonschema.Schema {
	s := advertised(t.input(p), phase)
	if phase == PhaseExplore && t.name == "workflow_start" && s.Properties["executionPolicy"] != nil {
		s.Properties["executionPolicy"] = &jsonschema.Schema{Type: "object", Description: "as in session_create"}
	}
	return s
}

// outputFull is the full output schema (bobby://schemas).
func (t *toolDef) outputFull() *jsonschema.Schema {
	if t.output != nil {
		return t.output
	}
	return outputObject(nil)
}

// advertisedOutput is every tool's advertised output schema: MCP requires
// type object, and structuredContent is always an object; the property
// shapes are in bobby://schemas.
var advertisedOutput = &jsonschema.Schema{Type: "object"}

// exploreHidden are optional arguments the explore-phase listing leaves
// out: accepted everywhere, rarely needed in the form loop, and advertised
// in the other phases and in bobby://schemas.
var exploreHidden = []string{"workflowId", "evidenceDetail", "timeoutMs", "idempotencyKey"}

// advertised returns the input schema tools/list shows: s without the
// bounds validate enforces anyway (lengths, ranges, item and property
// counts), with the semantic target as one compact shape, and in the
// explore phase without exploreHidden (unless required) and with
// workflow_start's executionPolicy left to session_create's listing.
func advertised(s *jsonschema.Schema, phase Phase) *jsonschema.Schema {
	out := lean(s)
	if phase != PhaseExplore || out == nil || out.Properties == nil {
		return out
	}
	for _, k := range exploreHidden {
		if !slices.Contains(out.Required, k) {
			delete(out.Properties, k)
		}
	}
	return out
}

// targetAdvert is the advertised shape of a semantic target everywhere one
// is accepted ($defs/target in bobby://schemas has the fields and bounds).
var targetAdvert = &jsonschema.Schema{Type: "object", Description: "{ref} from a snapshot, {role, name?, index?}, or {selector}"}

// lean deep-copies s without bounds and with targets compacted.
func lean(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	if s.Ref == targetSchema.Ref {
		return targetAdvert
	}
	if isFalse(s) {
		return s
	}
	c := *s
	c.MinLength, c.MaxLength, c.Minimum, c.Maximum = nil, nil, nil, nil
	c.MinItems, c.MaxItems, c.MinProperties, c.MaxProperties = nil, nil, nil, nil
	c.Defs = nil
	if s.Properties != nil {
		c.Properties = make(map[string]*jsonschema.Schema, len(s.Properties))
		for k, v := range s.Properties {
			c.Properties[k] = lean(v)
		}
	}
	c.Items = lean(s.Items)
	c.AdditionalProperties = lean(s.AdditionalProperties)
	if s.OneOf != nil {
		c.OneOf = make([]*jsonschema.Schema, len(s.OneOf))
		for i, o := range s.OneOf {
			c.OneOf[i] = lean(o)
		}
	}
	return &c
}

// Shared schema pieces.
var (
	// targetDef is published once per tool under $defs/target.
	targetDef = object(map[string]*jsonschema.Schema{
		"ref":      strN("from a snapshot", 1, 32),
		"role":     strN("", 1, 64),
		"name":     strN("accessible name", 0, 512),
		"index":    integer("", 0, 10000),
		"selector": strN("CSS; 'iframe >> css' enters an iframe", 1, 4096),
	})
	targetSchema = &jsonschema.Schema{Ref: "#/$defs/target"}
	detailProp   = enum("", "compact", "full")
	timeoutProp  = integer("ms", 100, 300000)
	idemProp     = strN("replays the first outcome", 1, 128)
	selectorProp = strN("CSS (or use target)", 1, 4096)
	matcherProp  = object(map[string]*jsonschema.Schema{
		"kind":  enum("", "exact", "contains", "regex"),
		"value": strN("", 0, 65536),
	}, "kind", "value")
)

// schemaDefs are the shared definitions a tool schema may reference as
// #/$defs/<name>; withDefs attaches the ones a schema reaches.
var schemaDefs = map[string]*jsonschema.Schema{"target": targetDef}

func withDefs(s *jsonschema.Schema) *jsonschema.Schema {
	used := map[string]bool{}
	var walk func(*jsonschema.Schema)
	walk = func(x *jsonschema.Schema) {
		if x == nil {
			return
		}
		if strings.HasPrefix(x.Ref, "#/$defs/") {
			used[strings.TrimPrefix(x.Ref, "#/$defs/")] = true
		}
		for _, p := range x.Properties {
			walk(p)
		}
		walk(x.Items)
		walk(x.AdditionalProperties)
		for _, o := range x.OneOf {
			walk(o)
		}
	}
	walk(s)
	if len(used) == 0 {
		return s
	}
	c := *s
	c.Defs = map[string]*jsonschema.Schema{}
	for name := range used {
		c.Defs[name] = schemaDefs[name]
	}
	return &c
}

// scoped adds the scope fields of an envelope-minting tool.
func scoped(tool string, props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	all := map[string]*jsonschema.Schema{
		"sessionId":      str(""),
		"pageId":         str(""),
		"workflowId":     str(""),
		"evidenceDetail": detailProp,
		"timeoutMs":      timeoutProp,
	}
	if workflow.AcceptsHandle(tool) {
		all["workflowHandle"] = str("or sessionId+pageId")
	}
	for k, v := range props {
		all[k] = v
	}
	return object(all, required...)
}

// kindProps are the command-specific arguments of each envelope kind, shared
// by the flat tool and command_execute's envelope.input.
var kindProps = map[string]map[string]*jsonschema.Schema{
	"navigate": {"url": strN("absolute http(s) URL", 1, 65536)},
	"click": {
		"target":     targetSchema,
		"selector":   selectorProp,
		"modifiers":  &jsonschema.Schema{Type: "array", Items: enum("", "shift", "ctrl", "alt", "meta"), MaxItems: ptr(4), UniqueItems: true},
		"button":     enum("", "left", "right", "middle"),
		"clickCount": integer("", 1, 3),
	},
	"type_text": {
		"target":   targetSchema,
		"selector": selectorProp,
		"text":     strN("", 0, 100000),
		"clear":    boolean("clear the field first"),
	},
	"wait_for": {"condition": waitConditionSchema},
	"screenshot": {
		"fullPage": boolean(""),
		"target":   targetSchema,
		"selector": selectorProp,
	},
	"inspect": {
		"target":   targetSchema,
		"selector": selectorProp,
	},
	"extract_structured": {
		"selector": strN("CSS selector of the items (default: the page)", 1, 4096),
		"fields": &jsonschema.Schema{Type: "object", Description: "field name → CSS selector inside each item (value is its text; 'css@attr' reads an attribute)",
			AdditionalProperties: strN("", 1, 4096), MaxProperties: ptr(64)},
		"limit": integer("max items", 1, 500),
	},
	"evaluate_javascript": {"expression": strN("JavaScript expression; promises are awaited", 1, 100000)},
	"dialog": {
		"accept":     boolean("accept (OK) or dismiss (Cancel)"),
		"promptText": strN("", 0, 10000),
	},
	"page_activate": {},
	"a11y_snapshot": {
		"target":      targetSchema,
		"maxNodes":    integer("", 1, 2000),
		"maxBytes":    integer("", 1024, 1<<20),
		"interesting": boolean("only landmarks, headings, links and controls"),
	},
	"form_snapshot": {
		"target":      targetSchema,
		"maxControls": integer("", 1, 1000),
	},
	"control_action": {
		"target": targetSchema,
		"action": controlActionSchema,
	},
	"intent_locate": {
		"description": strN("what to find, e.g. 'the checkout button'", 1, 1000),
		"role":        strN("restrict to a role", 1, 64),
	},
	"intent_fill": {
		"fields": array("", fillFieldSchema, 200),
	},
	"intent_complete_form": {
		"values": &jsonschema.Schema{Type: "object", Description: "label/name → value (string, number, boolean, list for multi-select, null clears)",
			AdditionalProperties: fillValueSchema, MaxProperties: ptr(200)},
		"form": targetSchema,
	},
	"intent_submit_and_verify": {
		"target":  targetSchema,
		"expect":  expectSchema,
		"waitFor": enum("", "networkQuiet", "navigation"),
	},
}

var waitConditionSchema = &jsonschema.Schema{
	Description: "discriminated by kind",
	OneOf: []*jsonschema.Schema{
		object(map[string]*jsonschema.Schema{"kind": constStr("text"), "matcher": matcherProp, "target": targetSchema, "selector": selectorProp}, "kind", "matcher"),
		object(map[string]*jsonschema.Schema{"kind": constStr("value"), "matcher": matcherProp, "target": targetSchema, "selector": selectorProp}, "kind", "matcher"),
		object(map[string]*jsonschema.Schema{"kind": constStr("document"), "readyState": enum("", "loading", "interactive", "complete")}, "kind"),
		object(map[string]*jsonschema.Schema{"kind": constStr("url"), "matcher": matcherProp}, "kind", "matcher"),
		object(map[string]*jsonschema.Schema{"kind": constStr("element"), "target": targetSchema, "selector": selectorProp, "state": enum("", "present", "visible", "hidden")}, "kind"),
		object(map[string]*jsonschema.Schema{"kind": constStr("networkQuiet"), "idleMs": integer("", 0, 60000)}, "kind"),
	},
}

var controlActionSchema = &jsonschema.Schema{
	Description: "discriminated by kind",
	OneOf: []*jsonschema.Schema{
		object(map[string]*jsonschema.Schema{"kind": constStr("setText"), "text": strN("", 0, 100000)}, "kind", "text"),
		object(map[string]*jsonschema.Schema{"kind": constStr("setChecked"), "checked": boolean("")}, "kind", "checked"),
		object(map[string]*jsonschema.Schema{"kind": constStr("selectOne"), "option": strN("option value, else visible label", 1, 10000)}, "kind", "option"),
		object(map[string]*jsonschema.Schema{"kind": constStr("selectMany"), "options": array("values or labels; [] deselects all", strN("", 1, 10000), 500)}, "kind", "options"),
		object(map[string]*jsonschema.Schema{"kind": constStr("setFiles"), "paths": array("local file paths (needs file:upload)", strN("", 1, 4096), 50)}, "kind", "paths"),
		object(map[string]*jsonschema.Schema{"kind": constStr("clear")}, "kind"),
		object(map[string]*jsonschema.Schema{"kind": constStr("activate")}, "kind"),
	},
}

var fillValueSchema = &jsonschema.Schema{Types: []string{"string", "number", "boolean", "array", "null"}, Items: strN("", 0, 10000), MaxLength: ptr(100000)}

var fillFieldSchema = object(map[string]*jsonschema.Schema{
	"field":  strN("label, name, id or placeholder (or use target)", 1, 512),
	"target": targetSchema,
	"value":  fillValueSchema,
}, "value")

var expectSchema = object(map[string]*jsonschema.Schema{
	"urlContains":  strN("", 1, 4096),
	"textContains": strN("", 1, 10000),
})

// commandKinds are the envelope kinds command_execute accepts.
func commandKinds() []string {
	kinds := []string{"intent"}
	for k := range kindProps {
		if k == "intent_locate" || k == "intent_fill" || k == "intent_complete_form" || k == "intent_submit_and_verify" {
			continue
		}
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

var intentKinds = map[string]string{
	"locate": "intent_locate", "fill": "intent_fill", "complete_form": "intent_complete_form", "submit_and_verify": "intent_submit_and_verify",
}

// outcomeOutput is the output schema of every command tool.
var outcomeOutput = outputObject(map[string]string{"status": "string"})

// buildTools is the explicit tool table. Capability and phase of each tool
// are documented in doc.go and served as bobby://capabilities.
func buildTools() []*toolDef {
	scopeOnly := func(tool string) *jsonschema.Schema { return scoped(tool, kindProps[tool]) }
	cmd := func(name, title, desc string, capability policy.Capability, ro, destr, idem bool) *toolDef {
		return &toolDef{
			name: name, title: title, desc: desc, capability: capability,
			readOnly: ro, destructive: destr, idempotent: idem, openWorld: true,
			inputSchema: scoped(name, kindProps[name], kindRequired[name]...), output: outcomeOutput,
			handler: flatCommand(name),
		}
	}
	tools := []*toolDef{
		{
			name: "session_create", title: "Create browser session",
			desc:     "Create an isolated browser session (own cookies/storage) from a named profile.",
			dynamic:  "executionPolicy.fingerprint needs browser:fingerprint, .humanize needs browser:humanize, zigzagzig needs both",
			inputFor: sessionCreateSchema,
			output:   outputObject(map[string]string{"status": "string", "id": "string", "page_ids": "array", "execution_policy": "object"}),
			handler:  handleSessionCreate,
		},
		{
			name: "session_list", title: "List sessions", desc: "List your sessions (use after a lost response to find orphans).",
			readOnly: true, idempotent: true, inputSchema: object(nil),
			output: outputObject(map[string]string{"status": "string", "sessions": "array"}), handler: handleSessionList,
		},
		{
			name: "session_close", title: "Close session", desc: "Close a session and all its pages; evicts its workflow handles.",
			destructive: true, idempotent: true,
			inputSchema: object(map[string]*jsonschema.Schema{"sessionId": str("")}, "sessionId"),
			output:      outputObject(map[string]string{"status": "string", "sessionId": "string", "closedPages": "integer"}), handler: handleSessionClose,
		},
		{
			name: "page_open", title: "Open page", desc: "Open a page in a session; with url also navigates (needs browser:mutate) and adds navigationOutcome.",
			dynamic: "url needs browser:mutate", openWorld: true,
			inputSchema: object(map[string]*jsonschema.Schema{"sessionId": str(""), "url": strN("", 1, 65536)}, "sessionId"),
			output:      outputObject(map[string]string{"status": "string", "id": "string", "session_id": "string", "navigationOutcome": "object"}), handler: handlePageOpen,
		},
		{
			name: "page_close", title: "Close page", desc: "Close a page; evicts its workflow handles.",
			destructive: true, idempotent: true, inputSchema: scoped("page_close", nil),
			output: outputObject(map[string]string{"status": "string", "pageId": "string"}), handler: handlePageClose,
		},
		{
			name: "page_list", title: "List pages", desc: "List a session's pages, popups and window.open targets included.",
			readOnly: true, idempotent: true,
			inputSchema: object(map[string]*jsonschema.Schema{"sessionId": str("")}, "sessionId"),
			output:      outputObject(map[string]string{"status": "string", "pages": "array", "activePageId": "string|null"}), handler: handlePageList,
		},
		{
			name: "page_activate", title: "Activate page", desc: "Bring a page to the front and make it the session's active page.",
			idempotent: true, inputSchema: scopeOnly("page_activate"), output: outcomeOutput, handler: flatCommand("page_activate"),
		},
		{
			name: "runtime_info", title: "Runtime info", desc: "Principal, credentialExpiresAt, capabilities, phase, browser version and limits.",
			readOnly: true, idempotent: true, inputSchema: object(nil),
			output: outputObject(map[string]string{"status": "string", "principal": "string", "credentialExpiresAt": "string|null", "capabilities": "array", "phase": "string"}), handler: handleRuntimeInfo,
		},
		{
			name: "toolset_select", title: "Select phase", desc: "Switch the advertised toolset: explore, act, intent or verify (see bobby://phases). Hidden tools stay callable.",
			idempotent:  true,
			inputSchema: object(map[string]*jsonschema.Schema{"phase": enum("", "explore", "act", "intent", "verify")}, "phase"),
			output:      outputObject(map[string]string{"status": "string", "phase": "string", "changed": "boolean", "tools": "array"}), handler: handleToolsetSelect,
		},
		{
			name: "workflow_start", title: "Start workflow", capability: policy.BrowserMutate,
			desc:      "Create session + page (+ navigate) and return a workflowHandle, published only if setup succeeded.",
			openWorld: true,
			inputFor: func(p policy.Principal) *jsonschema.Schema {
				return object(map[string]*jsonschema.Schema{
					"profile":         strN("", 1, 64),
					"url":             strN("", 1, 65536),
					"executionPolicy": executionPolicySchema(p.Capabilities.Has(policy.BrowserFingerprint, policy.BrowserHumanize)),
				}, "profile")
			},
			output: outputObject(map[string]string{"status": "string", "workflowHandle": "string|null", "sessionId": "string|null", "pageId": "string|null",
				"workflowId": "string|null", "session": "object|null", "page": "object|null", "navigationOutcome": "object|null"}),
			handler: handleWorkflowStart,
		},
		{
			name: "workflow_observe", title: "Observe workflow", capability: policy.BrowserMutate,
			desc:     "Compact context for a handle: retained answer when valid, else a live accessibility observation.",
			dynamic:  "includeForms needs page:read",
			readOnly: true, idempotent: true, openWorld: true,
			inputSchema: object(map[string]*jsonschema.Schema{
				"workflowHandle": str(""), "goal": strN("", 0, 2000), "includeForms": boolean(""),
				"maxNodes": integer("", 1, 2000), "maxControls": integer("", 1, 1000), "evidenceDetail": detailProp, "target": targetSchema,
			}, "workflowHandle"),
			output: outputObject(map[string]string{"status": "string", "source": "string", "workflowHandle": "string", "retainedAnswer": "object|null",
				"observationOutcome": "object|null", "formSnapshot": "object|null"}),
			handler: handleWorkflowObserve,
		},
		cmd("navigate", "Navigate", "Load a URL in the page and report navigationOutcome.", policy.BrowserMutate, false, false, true),
		cmd("click", "Click", "Native click on a target or selector; modifiers are held during the click.", policy.BrowserMutate, false, false, false),
		cmd("type_text", "Type text", "Type into a target or selector (clear:true replaces).", policy.BrowserMutate, false, false, false),
		cmd("a11y_snapshot", "Accessibility snapshot", "Bounded accessibility tree with refs (use target {role:\"main\"} to scope); refreshes retained context.", policy.PageRead, true, false, true),
		cmd("form_snapshot", "Form snapshot", "Form controls with state, labels and semantic targets.", policy.PageRead, true, false, true),
		cmd("control_action", "Control action", "setText|setChecked|selectOne|selectMany|setFiles|clear|activate on a control; typed reread evidence.", policy.BrowserMutate, false, false, false),
		cmd("wait_for", "Wait for", "Wait for text, value, document, url, element or networkQuiet. timeoutMs is the wait itself (default 10000).", policy.PageRead, true, false, true),
		cmd("screenshot", "Screenshot", "PNG capture stored as an artifact:// resource.", policy.ArtifactCapture, true, false, true),
		cmd("inspect", "Inspect", "Page summary, or one element's tag, attributes, box and text.", policy.PageRead, true, false, true),
		cmd("extract_structured", "Extract structured", "Extract items (and fields) by CSS selector as JSON.", policy.PageRead, true, false, true),
		{
			name: "context_ask", title: "Ask context", capability: policy.PageRead,
			desc:     "Where is the control described as X? Answers from the retained snapshot: a bound target + confidence, or nothing.",
			readOnly: true, idempotent: true,
			inputSchema: scoped("context_ask", map[string]*jsonschema.Schema{"question": strN("", 1, 1000)}, "question"),
			output:      outputObject(map[string]string{"status": "string", "answer": "object|null", "reason": "string"}),
			handler:     handleContextAsk,
		},
		cmd("evaluate_javascript", "Evaluate JavaScript", "Evaluate an expression; only in sessions whose executionPolicy.javascriptEvaluation is true.", policy.BrowserMutate, false, false, false),
		cmd("dialog", "Answer dialog", "Accept or dismiss the open JavaScript dialog.", policy.BrowserMutate, false, false, false),
		intentTool("intent_locate", "Locate", "Find the element matching a description.", policy.PageRead, true, false, true),
		intentTool("intent_fill", "Fill", "Fill fields by target or label.", policy.BrowserMutate, false, false, true),
		intentTool("intent_complete_form", "Complete form", "Fill a form from label→value pairs; evidence lists revealedControls.", policy.BrowserMutate, false, false, true),
		intentTool("intent_submit_and_verify", "Submit and verify", "Submit a form, wait, verify; blocked submits return value-free formValidation.", policy.BrowserMutate, false, true, false),
		{
			name: "command_execute", title: "Execute command",
			desc:        "Escape hatch: run an envelope {kind, sessionId, pageId, workflowId?, input}; kind intent takes input {kind: locate|fill|complete_form|submit_and_verify, …}.",
			dynamic:     "the capability of the envelope's kind",
			destructive: true, openWorld: true,
			inputSchema: object(map[string]*jsonschema.Schema{
				"envelope": object(map[string]*jsonschema.Schema{
					"kind":           enum("", commandKinds()...),
					"sessionId":      str(""),
					"pageId":         str(""),
					"workflowId":     str(""),
					"workflowHandle": str(""),
					"timeoutMs":      timeoutProp,
					"evidenceDetail": detailProp,
					"input":          &jsonschema.Schema{Type: "object"},
				}, "kind"),
				"idempotencyKey": idemProp,
			}, "envelope"),
			output:  outcomeOutput,
			handler: handleCommandExecute,
		},
	}
	return tools
}

func intentTool(name, title, desc string, capability policy.Capability, ro, destr, idem bool) *toolDef {
	props := map[string]*jsonschema.Schema{"idempotencyKey": idemProp}
	for k, v := range kindProps[name] {
		props[k] = v
	}
	return &toolDef{
		name: name, title: title, desc: desc, capability: capability,
		readOnly: ro, destructive: destr, idempotent: idem, openWorld: true,
		inputSchema: scoped(name, props, kindRequired[name]...), output: outcomeOutput,
		handler: flatCommand(name),
	}
}

func executionPolicySchema(godmode bool) *jsonschema.Schema {
	props := map[string]*jsonschema.Schema{
		"javascriptEvaluation": boolean("allow evaluate_javascript"),
		"visionAssist":         boolean("needs a configured vision node"),
		"fingerprint":          boolean("needs browser:fingerprint"),
		"humanize":             boolean("needs browser:humanize"),
		"visionNode":           strN("a [nodes.<name>] entry", 1, 64),
	}
	if godmode {
		props["zigzagzig"] = boolean("godmode: forces fingerprint and humanize")
	}
	return object(props)
}

func sessionCreateSchema(p policy.Principal) *jsonschema.Schema {
	godmode := p.Capabilities.Has(policy.BrowserFingerprint, policy.BrowserHumanize)
	return object(map[string]*jsonschema.Schema{
		"profile":         strN("a configured profile, e.g. default", 1, 64),
		"executionPolicy": executionPolicySchema(godmode),
	}, "profile")
}
