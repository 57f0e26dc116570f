package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

// extraKey is this wire's key inside model.Message.Extra.
const extraKey = "responses"

// extra is what the openai.com lane keeps on an assistant message: its
// reasoning items exactly as the server sent them (encrypted_content
// included) and the message phase.
type extra struct {
	Items []json.RawMessage `json:"items,omitempty"`
	Phase string            `json:"phase,omitempty"`
}

// lane is what the host allows beyond the plain surface.
type lane struct {
	native    bool   // an api.openai.com host: reasoning carry, phase, verbosity, summaries
	verbosity string // text.verbosity, native only
	summary   string // reasoning.summary, native only
}

// request is the Responses body; encode.go writes it exactly as the SDK's
// ResponseNewParams would be written. store is always false.
type request struct {
	Instructions  string // "" leaves instructions out
	IncludeSealed bool   // include: ["reasoning.encrypted_content"]
	Input         []inputItem
	Model         string
	ExplicitCache bool   // prompt_cache_options: {"mode":"explicit"}
	Effort        string // reasoning.effort
	Summary       string // reasoning.summary
	Verbosity     string // text.verbosity
	ToolDefs      []byte // the tools, encoded (tool.appendJSON) and comma-separated
}

// Input item kinds.
const (
	kindMessage      = "message"
	kindFunctionCall = "function_call"
	kindCallOutput   = "function_call_output"
	kindStored       = "stored" // a reasoning item replayed verbatim
)

// inputItem is one input item; kind says which of the other fields it sends.
type inputItem struct {
	kind       string
	role       string          // message: user, system or assistant
	text       string          // message content; function_call_output output
	phase      string          // message
	images     []model.Image   // message: sent as a content list, its text first
	breakpoint bool            // message or output: the text goes as one input_text part with a cache breakpoint
	callID     string          // function_call, function_call_output
	name       string          // function_call
	arguments  string          // function_call
	raw        json.RawMessage // stored: valid JSON
}

// tool is one function tool: the schema's top-level members in name
// order, each value the schema's own bytes.
type tool struct {
	name        string
	description string
	parameters  []model.Member
}

// build maps a neutral request onto the Responses body; defs is the
// client's memo of tool definitions (nil for none). System blocks become
// instructions (joined by blank lines); the conversation is sent in full
// every call (store:false), never by previous_response_id.
func build(req model.Request, ln lane, defs *model.ToolDefs) (request, error) {
	if req.Model == "" {
		return request{}, fmt.Errorf("build responses request: model is required")
	}
	p := request{Model: req.Model}
	var sys []string
	for _, s := range req.System {
		if s != "" {
			sys = append(sys, s)
		}
	}
	p.Instructions = strings.Join(sys, "\n\n")
	items := make([]inputItem, 0, 2*len(req.Messages))
	for i, m := range req.Messages {
		switch m.Role {
		case model.RoleUser:
			items = append(items, inputItem{kind: kindMessage, role: "user", text: m.Content, images: m.Images})
		case model.RoleSystem:
			items = append(items, inputItem{kind: kindMessage, role: "system", text: m.Content})
		case model.RoleTool:
			if m.ToolCallID == "" {
				return request{}, fmt.Errorf("build responses request: message %d: tool message without tool_call_id", i)
			}
			items = append(items, inputItem{kind: kindCallOutput, text: m.Content, callID: m.ToolCallID})
		case model.RoleAssistant:
			var ex extra
			if ln.native {
				ex = model.StoredExtra[extra](m.Extra, extraKey)
				// Each item is valid JSON: it was cut from a document
				// json.Unmarshal checked whole.
				for _, it := range ex.Items {
					items = append(items, inputItem{kind: kindStored, raw: it})
				}
			}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				items = append(items, inputItem{kind: kindMessage, role: "assistant", text: m.Content, phase: ex.Phase})
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return request{}, fmt.Errorf("build responses request: message %d: tool call without id or name", i)
				}
				items = append(items, inputItem{kind: kindFunctionCall, arguments: model.ArgumentsText(tc.Arguments), callID: tc.ID, name: tc.Name})
			}
		default:
			return request{}, fmt.Errorf("build responses request: message %d: unknown role %q", i, m.Role)
		}
	}
	if len(items) == 0 {
		return request{}, fmt.Errorf("build responses request: no messages")
	}
	p.Input = items
	var err error
	if p.ToolDefs, err = defs.Join(req.Tools, 0, appendTool); err != nil {
		return request{}, fmt.Errorf("build responses request: %w", err)
	}
	effort := strings.ToLower(strings.TrimSpace(req.ReasoningEffort))
	p.Effort = effort
	if ln.native {
		p.Summary = ln.summary
		p.Verbosity = ln.verbosity
		p.IncludeSealed = effort != "" && effort != "none" || reasoningModel(req.Model)
		if explicitCacheModel(req.Model) {
			placeCacheBreakpoints(&p)
		}
	}
	return p, nil
}

// reasoningModel: OpenAI models that return reasoning items (and refuse
// include=reasoning.encrypted_content when they do not).
func reasoningModel(id string) bool {
	id = strings.TrimPrefix(strings.ToLower(id), "openai/")
	for _, p := range []string{"gpt-5", "o1", "o3", "o4", "codex"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// appendTool appends t's definition as encode.go writes it.
func appendTool(dst []byte, t model.ToolSpec) ([]byte, error) {
	tl, err := buildTool(t)
	if err != nil {
		return dst, err
	}
	return tl.appendJSON(dst), nil
}

// buildTool keeps each top-level schema value as raw JSON, sorted by name,
// so a tool's bytes are stable across calls. It is sent with strict:false:
// Delta's schemas mark optional fields optional, which strict mode forbids.
func buildTool(t model.ToolSpec) (tool, error) {
	params, err := model.ToolMembers(t)
	if err != nil {
		return tool{}, err
	}
	return tool{name: t.Name, description: t.Description, parameters: params}, nil
}
