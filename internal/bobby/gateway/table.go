package gateway

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

// Annotations are a tool's MCP behaviour hints.
type Annotations struct {
	ReadOnly    bool // changes nothing
	Destructive bool // may undo or lose state (closing, submitting)
	Idempotent  bool // repeating the call with the same arguments changes nothing more
	OpenWorld   bool // touches the web, outside bobby
}

// toolSpec is everything a tool declares about itself, apart from its
// argument and result types (the type parameters of declare and command).
type toolSpec struct {
	name, title, desc string
	// capability is the static requirement ("" = any authenticated
	// principal); dynamic documents the argument-dependent ones, which the
	// handler checks (or, for a command kind, needs).
	capability policy.Capability
	dynamic    string
	ann        Annotations
	// phases are where tools/list advertises the tool; every is all of them.
	phases []Phase
	// props and required are the tool's own arguments. A scoped tool (every
	// command kind, and page_close and context_ask) also gets sessionId,
	// pageId, workflowId, evidenceDetail and timeoutMs.
	props    map[string]*jsonschema.Schema
	required []string
	scoped   bool
	// handle puts the tool on the workflowHandle allowlist: a handle may
	// stand for sessionId+pageId+workflowId.
	handle bool
	// idemKey: the flat tool takes idempotencyKey (the intent tools).
	idemKey bool
	// inputFor, when set, builds a per-principal input schema instead of
	// props (session_create's godmode flag is shown only to principals who
	// may use it).
	inputFor func(p policy.Principal) *jsonschema.Schema
	// engines are the browser engines the tool runs on; nil is Chromium
	// alone. On another engine the tool is left out of tools/list and a
	// call answers unsupportedOnEngine; engineGap says why it is missing
	// there (what that engine's protocol or bobby's Firefox side lacks).
	engines   []string
	engineGap string
}

// runsOn reports whether the tool runs on engine.
func (t *toolDef) runsOn(engine string) bool {
	if t.engines == nil {
		return engine == engineChromium
	}
	return slices.Contains(t.engines, engine)
}

// enginesOf are the engines a tool runs on.
func (t *toolDef) enginesOf() []string {
	if t.engines == nil {
		return []string{engineChromium}
	}
	return t.engines
}

// toolDef is one row of the tool table: the declaration plus what is
// derived from it (schemas, handler, command kind).
type toolDef struct {
	toolSpec
	inputSchema *jsonschema.Schema // nil when inputFor is set
	output      *jsonschema.Schema // generated from the result type
	argsType    reflect.Type       // the typed arguments (a command kind's input)
	kindInput   *jsonschema.Schema // a command kind's input (command_execute)
	handler     func(ctx context.Context, c *call) (any, error)
	// cmd is set for command kinds: flat tools that run through the
	// envelope pipeline, reachable through command_execute too.
	cmd *commandSpec
}

// every is the phases of a tool advertised in all of them.
var every = Phases

// declare builds a tool from its spec and a handler over typed arguments
// (decoded after schema validation) returning a typed result, whose type
// also gives the tool's output schema.
func declare[A, R any](s toolSpec, h func(ctx context.Context, c *call, args A) (R, error)) *toolDef {
	t := &toolDef{toolSpec: s, output: outputFor[R](), argsType: reflect.TypeFor[A]()}
	if s.inputFor == nil {
		t.inputSchema = t.buildInput()
	}
	t.handler = func(ctx context.Context, c *call) (any, error) {
		var args A
		if err := c.decode(&args); err != nil {
			return nil, err
		}
		return h(ctx, c, args)
	}
	return t
}

// command builds a command kind: a flat tool whose arguments are the scope
// fields plus the kind's input A, run by the envelope pipeline (ids,
// deadline, idempotency, classification) and returning an Outcome. The same
// kind is an envelope kind of command_execute (the intent_* tools as kind
// "intent" with input.kind = the name without "intent_").
func command[A any](s toolSpec, spec commandSpec, run func(ctx context.Context, x *execCtx, in A) (evidence, diag map[string]any, err error)) *toolDef {
	s.scoped = true
	t := &toolDef{toolSpec: s, output: outputFor[*Outcome](), argsType: reflect.TypeFor[A]()}
	t.inputSchema = t.buildInput()
	t.kindInput = object(s.props, s.required...)
	spec.run = func(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
		var in A
		if err := decodeInput(x.input, &in); err != nil {
			return nil, nil, err
		}
		return run(ctx, x, in)
	}
	t.cmd = &spec
	t.handler = flatCommand(s.name)
	return t
}

// needing adds an argument-dependent capability check to a command kind.
func needing[A any](t *toolDef, needs func(in A) []policy.Capability) *toolDef {
	t.cmd.needs = func(input map[string]any) []policy.Capability {
		var in A
		if decodeInput(input, &in) != nil {
			return nil
		}
		return needs(in)
	}
	return t
}

// decodeInput decodes a (validated) kind input into its typed arguments.
func decodeInput(input map[string]any, v any) error {
	b, err := json.Marshal(input)
	if err != nil {
		return errorf(CodeInvalidRequest, "encode input: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errorf(CodeInvalidRequest, "decode input: %v", err)
	}
	return nil
}

func (t *toolDef) buildInput() *jsonschema.Schema {
	props := map[string]*jsonschema.Schema{}
	if t.scoped {
		props["sessionId"], props["pageId"], props["workflowId"] = str(""), str(""), str("")
		props["evidenceDetail"], props["timeoutMs"] = detailProp, timeoutProp
		if t.handle {
			props["workflowHandle"] = str("or sessionId+pageId")
		}
	}
	if t.idemKey {
		props["idempotencyKey"] = idemProp
	}
	for k, s := range t.props {
		props[k] = s
	}
	return object(props, t.required...)
}

// kindSchema is the schema of a command kind's input inside command_execute.
func (t *toolDef) kindSchema() *jsonschema.Schema { return t.kindInput }

func (t *toolDef) inPhase(p Phase) bool { return slices.Contains(t.phases, p) }

// toolTable is every tool bobby serves, each declared once: name, title,
// description, annotations, capability, phases, argument schema, typed
// arguments and result. tools/list, bobby://capabilities, bobby://phases,
// bobby://schemas, the workflowHandle allowlist and command_execute's
// envelope kinds are all derived from it.
//
// Adding a tool is one entry here: declare(spec, handler) for a tool with
// its own handler (func(ctx, *call, Args) (*Result, error)), or
// command(spec, commandSpec{…}, run) for a page command that runs through
// the envelope pipeline and returns an Outcome (func(ctx, *execCtx, Args)
// (evidence, diag, error)). Args' JSON fields must be the schema's
// properties (TestArgsMatchSchemas checks), and the result type is the
// output schema (TestOutputParity checks every result the tests produce).
//
// The table is built in init, since handlers refer to what is derived
// from it.
var toolTable []*toolDef

// toolIndex finds a tool of toolTable by name; commandSpecs are its
// command kinds by name.
var (
	toolIndex    map[string]*toolDef
	commandSpecs map[string]commandSpec
)

func buildTools() []*toolDef {
	mutate, read := policy.BrowserMutate, policy.PageRead
	X, A, I, V := PhaseExplore, PhaseAct, PhaseIntent, PhaseVerify
	in := func(ps ...Phase) []Phase { return ps }
	web := func(an Annotations) Annotations { an.OpenWorld = true; return an }
	tools := []*toolDef{
		declare(toolSpec{
			name: "session_create", title: "Create browser session", engines: bothEngines,
			desc:    "Create an isolated browser session (own cookies/storage) from a named profile.",
			dynamic: "executionPolicy.fingerprint needs browser:fingerprint, .humanize needs browser:humanize, zigzagzig needs both",
			phases:  every, inputFor: sessionCreateSchema,
		}, handleSessionCreate),
		declare(toolSpec{
			name: "session_list", title: "List sessions", engines: bothEngines, desc: "List your sessions (use after a lost response to find orphans).",
			ann: Annotations{ReadOnly: true, Idempotent: true}, phases: every,
		}, handleSessionList),
		declare(toolSpec{
			name: "session_close", title: "Close session", engines: bothEngines, desc: "Close a session and all its pages; evicts its workflow handles.",
			ann: Annotations{Destructive: true, Idempotent: true}, phases: every,
			props: map[string]*jsonschema.Schema{"sessionId": str("")}, required: []string{"sessionId"},
		}, handleSessionClose),
		declare(toolSpec{
			name: "page_open", title: "Open page", engines: bothEngines, desc: "Open a page in a session; with url also navigates (needs browser:mutate) and adds navigationOutcome.",
			dynamic: "url needs browser:mutate", ann: Annotations{OpenWorld: true}, phases: every,
			props: map[string]*jsonschema.Schema{"sessionId": str(""), "url": strN("", 1, 65536)}, required: []string{"sessionId"},
		}, handlePageOpen),
		declare(toolSpec{
			name: "page_close", title: "Close page", engines: bothEngines, desc: "Close a page; evicts its workflow handles.",
			ann: Annotations{Destructive: true, Idempotent: true}, phases: every, scoped: true, handle: true,
		}, handlePageClose),
		declare(toolSpec{
			name: "page_list", title: "List pages", engines: bothEngines, desc: "List a session's pages, popups and window.open targets included.",
			ann: Annotations{ReadOnly: true, Idempotent: true}, phases: every,
			props: map[string]*jsonschema.Schema{"sessionId": str("")}, required: []string{"sessionId"},
		}, handlePageList),
		command(toolSpec{
			name: "page_activate", title: "Activate page", engines: bothEngines, desc: "Bring a page to the front and make it the session's active page.",
			ann: Annotations{Idempotent: true}, phases: every, handle: true,
		}, commandSpec{readOnly: true, timeout: 10 * time.Second}, runActivate),
		declare(toolSpec{
			name: "runtime_info", title: "Runtime info", engines: bothEngines, desc: "Principal, credentialExpiresAt, capabilities, phase, browser version and limits.",
			ann: Annotations{ReadOnly: true, Idempotent: true}, phases: every,
		}, handleRuntimeInfo),
		declare(toolSpec{
			name: "toolset_select", title: "Select phase", engines: bothEngines, desc: "Switch the advertised toolset: explore, act, intent or verify (see bobby://phases). Hidden tools stay callable.",
			ann: Annotations{Idempotent: true}, phases: every,
			props: map[string]*jsonschema.Schema{"phase": enum("", "explore", "act", "intent", "verify")}, required: []string{"phase"},
		}, handleToolsetSelect),
		declare(toolSpec{
			name: "workflow_start", title: "Start workflow", engines: bothEngines, capability: mutate,
			desc: "Create session + page (+ navigate) and return a workflowHandle, published only if setup succeeded.",
			ann:  Annotations{OpenWorld: true}, phases: every,
			inputFor: func(p policy.Principal) *jsonschema.Schema {
				return object(map[string]*jsonschema.Schema{
					"profile":         strN("", 1, 64),
					"url":             strN("", 1, 65536),
					"executionPolicy": executionPolicySchema(p.Capabilities.Has(policy.BrowserFingerprint, policy.BrowserHumanize)),
				}, "profile")
			},
		}, handleWorkflowStart),
		declare(toolSpec{
			name: "workflow_observe", title: "Observe workflow", engines: bothEngines, capability: mutate,
			desc:    "Compact context for a handle: retained answer when valid, else a live accessibility observation.",
			dynamic: "includeForms needs page:read",
			ann:     Annotations{ReadOnly: true, Idempotent: true, OpenWorld: true}, phases: every,
			props: map[string]*jsonschema.Schema{
				"workflowHandle": str(""), "goal": strN("", 0, 2000), "includeForms": boolean(""),
				"maxNodes": integer("", 1, 2000), "maxControls": integer("", 1, 1000), "evidenceDetail": detailProp, "target": targetSchema,
			},
			required: []string{"workflowHandle"},
		}, handleWorkflowObserve),
		command(toolSpec{
			name: "navigate", title: "Navigate", engines: bothEngines, desc: "Load a URL in the page and report navigationOutcome.",
			capability: mutate, ann: web(Annotations{Idempotent: true}), phases: in(X, A), handle: true,
			props: map[string]*jsonschema.Schema{"url": strN("absolute http(s) URL", 1, 65536)}, required: []string{"url"},
		}, commandSpec{mutates: true, timeout: 45 * time.Second}, runNavigate),
		command(toolSpec{
			name: "click", title: "Click", engines: bothEngines, desc: "Native click on a target or selector; modifiers are held during the click.",
			capability: mutate, ann: web(Annotations{}), phases: in(A), handle: true,
			props: map[string]*jsonschema.Schema{
				"target":     targetSchema,
				"selector":   selectorProp,
				"modifiers":  &jsonschema.Schema{Type: "array", Items: enum("", "shift", "ctrl", "alt", "meta"), MaxItems: ptr(4), UniqueItems: true},
				"button":     enum("", "left", "right", "middle"),
				"clickCount": integer("", 1, 3),
			},
		}, commandSpec{mutates: true, timeout: 20 * time.Second}, runClick),
		command(toolSpec{
			name: "type_text", title: "Type text", engines: bothEngines, desc: "Type into a target or selector (clear:true replaces).",
			capability: mutate, ann: web(Annotations{}), phases: in(A), handle: true,
			props: map[string]*jsonschema.Schema{
				"target": targetSchema, "selector": selectorProp, "text": strN("", 0, 100000), "clear": boolean("clear the field first"),
			},
			required: []string{"text"},
		}, commandSpec{mutates: true, timeout: 20 * time.Second}, runTypeText),
		command(toolSpec{
			name: "a11y_snapshot", title: "Accessibility snapshot", engines: bothEngines, desc: "Bounded accessibility tree with refs (use target {role:\"main\"} to scope); refreshes retained context.",
			capability: read, ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(X, A, V), handle: true,
			props: map[string]*jsonschema.Schema{
				"target":      targetSchema,
				"maxNodes":    integer("", 1, 2000),
				"maxBytes":    integer("", 1024, 1<<20),
				"interesting": boolean("only landmarks, headings, links and controls"),
			},
		}, commandSpec{readOnly: true, timeout: 20 * time.Second}, runA11ySnapshot),
		command(toolSpec{
			name: "form_snapshot", title: "Form snapshot", engines: bothEngines, desc: "Form controls with state, labels and semantic targets.",
			capability: read, ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(X, I, V), handle: true,
			props: map[string]*jsonschema.Schema{"target": targetSchema, "maxControls": integer("", 1, 1000)},
		}, commandSpec{readOnly: true, timeout: 20 * time.Second}, runFormSnapshot),
		needing(command(toolSpec{
			name: "control_action", title: "Control action", engines: bothEngines, desc: "setText|setChecked|selectOne|selectMany|setFiles|clear|activate on a control; typed reread evidence.",
			capability: mutate, dynamic: "setFiles → file:upload", ann: web(Annotations{}), phases: in(A, I), handle: true,
			props:    map[string]*jsonschema.Schema{"target": targetSchema, "action": controlActionSchema},
			required: []string{"target", "action"},
		}, commandSpec{mutates: true, timeout: 20 * time.Second}, runControlAction), func(in controlActionArgs) []policy.Capability {
			if in.Action.Kind == "setFiles" {
				return []policy.Capability{policy.FileUpload}
			}
			return nil
		}),
		command(toolSpec{
			name: "wait_for", title: "Wait for", engines: bothEngines, desc: "Wait for text, value, document, url, element or networkQuiet. timeoutMs is the wait itself (default 10000).",
			capability: read, ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(A, I, V), handle: true,
			props: map[string]*jsonschema.Schema{"condition": waitConditionSchema}, required: []string{"condition"},
		}, commandSpec{readOnly: true, waits: true}, runWaitFor),
		command(toolSpec{
			name: "screenshot", title: "Screenshot", engines: bothEngines, desc: "PNG capture stored as an artifact:// resource.",
			capability: policy.ArtifactCapture, dynamic: "(artifact:// read needs artifact:read)",
			ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(V), handle: true,
			props: map[string]*jsonschema.Schema{"fullPage": boolean(""), "target": targetSchema, "selector": selectorProp},
		}, commandSpec{readOnly: true, timeout: 20 * time.Second}, runScreenshot),
		command(toolSpec{
			name: "inspect", title: "Inspect", engineGap: "it reads the node's box and attributes through CDP's DOM domain; use a11y_snapshot, or extract_structured for attributes", desc: "Page summary, or one element's tag, attributes, box and text.",
			capability: read, ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(V), handle: true,
			props: map[string]*jsonschema.Schema{"target": targetSchema, "selector": selectorProp},
		}, commandSpec{readOnly: true, timeout: 15 * time.Second}, runInspect),
		command(toolSpec{
			name: "extract_structured", title: "Extract structured", engines: bothEngines, desc: "Extract items (and fields) by CSS selector as JSON.",
			capability: read, ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(V), handle: true,
			props: map[string]*jsonschema.Schema{
				"selector": strN("CSS selector of the items (default: the page)", 1, 4096),
				"fields": &jsonschema.Schema{Type: "object", Description: "field name → CSS selector inside each item (value is its text; 'css@attr' reads an attribute)",
					AdditionalProperties: strN("", 1, 4096), MaxProperties: ptr(64)},
				"limit": integer("max items", 1, 500),
			},
		}, commandSpec{readOnly: true, timeout: 20 * time.Second}, runExtract),
		declare(toolSpec{
			name: "context_ask", title: "Ask context", engines: bothEngines, capability: read,
			desc: "Where is the control described as X? Answers from the retained snapshot: a bound target + confidence, or nothing.",
			ann:  Annotations{ReadOnly: true, Idempotent: true}, phases: in(X, I, V), scoped: true, handle: true,
			props: map[string]*jsonschema.Schema{"question": strN("", 1, 1000)}, required: []string{"question"},
		}, handleContextAsk),
		command(toolSpec{
			name: "evaluate_javascript", title: "Evaluate JavaScript", engines: bothEngines, desc: "Evaluate an expression; only in sessions whose executionPolicy.javascriptEvaluation is true.",
			capability: mutate, dynamic: "session executionPolicy.javascriptEvaluation", ann: web(Annotations{}), phases: in(A), handle: true,
			props:    map[string]*jsonschema.Schema{"expression": strN("JavaScript expression; promises are awaited", 1, 100000)},
			required: []string{"expression"},
		}, commandSpec{mutates: true, timeout: 20 * time.Second}, runEvaluate),
		command(toolSpec{
			name: "dialog", title: "Answer dialog", engines: bothEngines, desc: "Accept or dismiss the open JavaScript dialog.",
			capability: mutate, ann: web(Annotations{}), phases: in(A), handle: true,
			props:    map[string]*jsonschema.Schema{"accept": boolean("accept (OK) or dismiss (Cancel)"), "promptText": strN("", 0, 10000)},
			required: []string{"accept"},
		}, commandSpec{mutates: true, timeout: 10 * time.Second}, runDialog),
		command(toolSpec{
			name: "intent_locate", title: "Locate", engines: bothEngines, desc: "Find the element matching a description.",
			capability: read, ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(I), handle: true, idemKey: true,
			props: map[string]*jsonschema.Schema{
				"description": strN("what to find, e.g. 'the checkout button'", 1, 1000),
				"role":        strN("restrict to a role", 1, 64),
			},
			required: []string{"description"},
		}, commandSpec{readOnly: true, timeout: 20 * time.Second}, runIntentLocate),
		command(toolSpec{
			name: "intent_fill", title: "Fill", engines: bothEngines, desc: "Fill fields by target or label.",
			capability: mutate, ann: web(Annotations{Idempotent: true}), phases: in(I), handle: true, idemKey: true,
			props: map[string]*jsonschema.Schema{"fields": array("", fillFieldSchema, 200)}, required: []string{"fields"},
		}, commandSpec{mutates: true, timeout: 30 * time.Second}, runIntentFill),
		command(toolSpec{
			name: "intent_complete_form", title: "Complete form", engines: bothEngines, desc: "Fill a form from label→value pairs; evidence lists revealedControls.",
			capability: mutate, ann: web(Annotations{Idempotent: true}), phases: in(X, I), handle: true, idemKey: true,
			props: map[string]*jsonschema.Schema{
				"values": &jsonschema.Schema{Type: "object", Description: "label/name → value (string, number, boolean, list for multi-select, null clears)",
					AdditionalProperties: fillValueSchema, MaxProperties: ptr(200)},
				"form": targetSchema,
			},
			required: []string{"values"},
		}, commandSpec{mutates: true, timeout: 60 * time.Second}, runIntentCompleteForm),
		command(toolSpec{
			name: "intent_submit_and_verify", title: "Submit and verify", engines: bothEngines, desc: "Submit a form, wait, verify; blocked submits return value-free formValidation.",
			capability: mutate, ann: web(Annotations{Destructive: true}), phases: in(X, I), handle: true, idemKey: true,
			props: map[string]*jsonschema.Schema{"target": targetSchema, "expect": expectSchema, "waitFor": enum("", "networkQuiet", "navigation")},
		}, commandSpec{mutates: true, timeout: 60 * time.Second}, runIntentSubmitAndVerify),
	}
	tools = append(tools, browserTools()...)
	// command_execute comes last: its envelope kinds are the command kinds
	// above.
	return append(tools, declare(toolSpec{
		name: "command_execute", title: "Execute command", engines: bothEngines,
		desc:    "Escape hatch: run an envelope {kind, sessionId, pageId, workflowId?, input}; kind intent takes input {kind: locate|fill|complete_form|submit_and_verify, …}.",
		dynamic: "the capability of the envelope's kind",
		ann:     Annotations{Destructive: true, OpenWorld: true}, phases: in(A),
		props: map[string]*jsonschema.Schema{
			"envelope": object(map[string]*jsonschema.Schema{
				"kind":           enum("", commandKinds(tools)...),
				"sessionId":      str(""),
				"pageId":         str(""),
				"workflowId":     str(""),
				"workflowHandle": str(""),
				"timeoutMs":      timeoutProp,
				"evidenceDetail": detailProp,
				"input":          &jsonschema.Schema{Type: "object"},
			}, "kind"),
			"idempotencyKey": idemProp,
		},
		required: []string{"envelope"},
	}, handleCommandExecute))
}

func init() {
	toolTable = buildTools()
	toolIndex = make(map[string]*toolDef, len(toolTable))
	commandSpecs = map[string]commandSpec{}
	for _, t := range toolTable {
		if _, dup := toolIndex[t.name]; dup {
			panic("gateway: duplicate tool " + t.name)
		}
		toolIndex[t.name] = t
		if t.cmd != nil {
			commandSpecs[t.name] = *t.cmd
		}
		// Resolve the static schemas now, not on the first call.
		for _, s := range []*jsonschema.Schema{t.inputSchema, t.kindInput} {
			if s != nil {
				c, err := compile(s)
				if err != nil {
					panic("gateway: " + t.name + ": " + err.Error())
				}
				checkers.Store(s, c)
			}
		}
	}
}

// intentPrefix marks the command kinds command_execute reaches through
// kind "intent" with input.kind set to the rest of the name.
const intentPrefix = "intent_"

// commandKinds are the envelope kinds command_execute accepts: "intent"
// and every command kind of tools that is not an intent_* one.
func commandKinds(tools []*toolDef) []string {
	kinds := []string{"intent"}
	for _, t := range tools {
		if t.cmd != nil && !strings.HasPrefix(t.name, intentPrefix) {
			kinds = append(kinds, t.name)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// intentKinds maps an intent envelope's input.kind to its command kind.
func intentKinds() map[string]string {
	m := map[string]string{}
	for _, t := range toolTable {
		if t.cmd != nil && strings.HasPrefix(t.name, intentPrefix) {
			m[strings.TrimPrefix(t.name, intentPrefix)] = t.name
		}
	}
	return m
}

// inPhase reports whether tool is advertised in phase.
func inPhase(tool string, phase Phase) bool {
	t, ok := toolIndex[tool]
	return ok && t.inPhase(phase)
}

// alwaysTools are the tools of every phase, in table order.
func alwaysTools() []string {
	var out []string
	for _, t := range toolTable {
		if len(t.phases) == len(Phases) {
			out = append(out, t.name)
		}
	}
	return out
}

// phaseTools are the tools of phase on top of alwaysTools, in table order.
func phaseTools(p Phase) []string {
	var out []string
	for _, t := range toolTable {
		if len(t.phases) < len(Phases) && t.inPhase(p) {
			out = append(out, t.name)
		}
	}
	return out
}

// outputFor is the full output schema of result type R: what a call that
// ran returns (a refused call returns the rejection shape instead, see
// rejectionOutput). Raw JSON (evaluated values, extraction results) may be
// any value.
func outputFor[R any]() *jsonschema.Schema {
	s, err := jsonschema.For[R](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
		reflect.TypeFor[Phase]():           {Type: "string"},
	}})
	if err != nil {
		panic("gateway: output schema: " + err.Error())
	}
	// A result is an object, never null.
	if s.Type == "" && slices.Contains(s.Types, "object") {
		s.Types, s.Type = nil, "object"
	}
	// Fields of an embedded pointer struct are present only when it is set.
	rt := reflect.TypeFor[R]()
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	if rt.Kind() == reflect.Struct {
		for _, f := range reflect.VisibleFields(rt) {
			if len(f.Index) > 1 && rt.FieldByIndex(f.Index[:1]).Type.Kind() == reflect.Pointer {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "" {
					name = f.Name
				}
				s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
			}
		}
	}
	return s
}

// rejection is the result of a call refused before it ran (errorResult):
// status rejected, the error, and for a schema violation where and which
// keyword. Some refusals add fields of their own, so it is left open.
type rejection struct {
	Status     string     `json:"status"`
	Error      *ErrorInfo `json:"error"`
	Reason     string     `json:"reason,omitempty"`
	Pointer    *string    `json:"pointer,omitempty"`
	Constraint string     `json:"constraint,omitempty"`
	Repair     *Repair    `json:"repair,omitempty"`
}

// rejectionOutput is the schema of a rejection (bobby://schemas).
var rejectionOutput = func() *jsonschema.Schema {
	s := outputFor[rejection]()
	s.AdditionalProperties = nil
	return s
}()
