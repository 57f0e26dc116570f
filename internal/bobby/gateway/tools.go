package gateway

import (
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

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
// input schema of advertised and the abridged output schema of
// advertisedOutput. The full schemas are enforced all the same and
// published in bobby://schemas; advertising them whole cost more than half
// of tools/list.
func (t *toolDef) mcpTool(p policy.Principal, phase Phase) *mcp.Tool {
	return &mcp.Tool{
		Name:         t.name,
		Title:        t.title,
		Description:  t.desc,
		InputSchema:  t.advertisedInput(p, phase),
		OutputSchema: t.advertisedOutput(phase),
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.ann.ReadOnly,
			DestructiveHint: ptr(t.ann.Destructive),
			IdempotentHint:  t.ann.Idempotent,
			OpenWorldHint:   ptr(t.ann.OpenWorld),
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

// outputFull is the full output schema (bobby://schemas): the result
// type's schema.
func (t *toolDef) outputFull() *jsonschema.Schema { return t.output }

// advertisedOutput is the output schema tools/list shows. Outside the
// explore phase it is the result type's top level: each property with its
// JSON type(s), nothing required and nothing closed, so it holds for a
// result that ran and for a refused call's rejection alike. The explore
// listing, the startup one kept within half of @playwright/mcp's
// tools/list, advertises {"type":"object"} only (structuredContent is
// always an object); bobby://schemas has every shape in full.
func (t *toolDef) advertisedOutput(phase Phase) *jsonschema.Schema {
	if phase == PhaseExplore {
		return bareOutput
	}
	return topLevel(t.output)
}

var bareOutput = &jsonschema.Schema{Type: "object"}

// topLevel is s's properties with their types only.
func topLevel(s *jsonschema.Schema) *jsonschema.Schema {
	out := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for k, ps := range s.Properties {
		out.Properties[k] = &jsonschema.Schema{Type: ps.Type, Types: slices.Clone(ps.Types)}
	}
	return out
}

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
