package openai

import (
	"fmt"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

// request is the Chat Completions body; encode.go writes it exactly as the
// SDK's ChatCompletionNewParams would be written.
type request struct {
	Messages []message
	Model    string
	// ReasoningEffort is reasoning_effort (direct endpoints);
	// RouterEffort is OpenRouter's reasoning.effort. At most one is set.
	ReasoningEffort string
	RouterEffort    string
	ToolDefs        []byte // the tools, encoded (tool.appendJSON) and comma-separated

	// Reuse of the last body's opening (prefix.go): the first skip
	// elements are not in Messages, their bytes are head; next, when the
	// request has a memo, collects this body's opening for the next call.
	skip int
	head []byte
	next *prefix
}

// message is one chat message; Role selects the fields it sends.
type message struct {
	Role       model.Role
	Content    string
	HasContent bool          // assistant only: content is sent (tool-call turns without text leave it out)
	Images     []model.Image // user only: content goes as parts, text first
	ToolCallID string        // tool only
	ToolCalls  []toolCall    // assistant only
}

type toolCall struct {
	ID, Name, Arguments string
}

// tool is one function tool. Parameters are the schema's top-level
// members in name order, each value the schema's own bytes.
type tool struct {
	Name        string
	Description string
	Parameters  []model.Member
}

// build maps a neutral request onto the Chat Completions body; defs is
// the client's memo of tool definitions (nil for none).
//
// System blocks become one system message each, in order: keeping them
// apart leaves each block's bytes untouched, which is what prefix caches
// key on. openRouter selects the reasoning wire.
func build(req model.Request, openRouter bool, defs *model.ToolDefs) (request, error) {
	return buildAfter(req, openRouter, defs, nil)
}

// buildAfter is build reusing pre, the opening of the conversation's last
// body (nil = none): the leading elements equal to pre's are not built
// again. When req has a memo, the request also collects its own opening.
func buildAfter(req model.Request, openRouter bool, defs *model.ToolDefs, pre *prefix) (request, error) {
	if req.Model == "" {
		return request{}, fmt.Errorf("build chat request: model is required")
	}
	p := request{Model: req.Model}
	if req.Memo != nil {
		p.next = &prefix{}
		if pre != nil {
			p.next.keys, p.next.ends = pre.keys[:0], pre.ends[:0] // owned: Take handed them over
		}
	}
	// matching is whether every element so far equals pre's; keep is
	// whether every element so far has its key in p.next.
	matching, keep := pre != nil, p.next != nil
	elem := 0
	add := func(key func() elemKey, same func(*elemKey) bool, msg func() (message, error)) error {
		if matching && elem < len(pre.keys) && same(&pre.keys[elem]) {
			p.skip = elem + 1
			p.next.keys = p.next.keys[:elem+1] // the key in place is the same
			elem++
			return nil
		}
		matching = false
		m, err := msg()
		if err != nil {
			return err
		}
		if keep && len(m.Images) == 0 {
			p.next.keys = append(p.next.keys, key())
		} else {
			keep = false
		}
		p.Messages = append(p.Messages, m)
		elem++
		return nil
	}
	for _, block := range req.System {
		if block == "" {
			continue
		}
		_ = add(func() elemKey { return systemKey(block) },
			func(k *elemKey) bool {
				return k.role == model.RoleSystem && k.content == block && len(k.calls) == 0 && k.toolCallID == ""
			},
			func() (message, error) { return message{Role: model.RoleSystem, Content: block}, nil })
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		err := add(func() elemKey { return messageKey(m) }, func(k *elemKey) bool { return k.sameMessage(m) },
			func() (message, error) { return buildMessage(*m) })
		if err != nil {
			return request{}, fmt.Errorf("build chat request: message %d: %w", i, err)
		}
	}
	if p.skip > 0 {
		p.head = pre.body[:pre.ends[p.skip-1]]
		p.next.ends = p.next.ends[:p.skip]
	}
	if len(p.Messages) == 0 && p.skip == 0 {
		return request{}, fmt.Errorf("build chat request: no messages")
	}
	if effort := strings.ToLower(strings.TrimSpace(req.ReasoningEffort)); effort != "" {
		if openRouter {
			p.RouterEffort = effort
		} else {
			p.ReasoningEffort = effort
		}
	}
	// OpenRouter's reasoning object is an extra field, which the SDK merges
	// after encoding every other field without trusting nested values to
	// be compact: tool schemas are compacted then.
	encode, variant := appendTool, byte(0)
	if p.RouterEffort != "" {
		encode, variant = appendCompactTool, 1
	}
	var err error
	if p.ToolDefs, err = defs.Join(req.Tools, variant, encode); err != nil {
		return request{}, fmt.Errorf("build chat request: %w", err)
	}
	return p, nil
}

func buildMessage(m model.Message) (message, error) {
	switch m.Role {
	case model.RoleSystem:
		return message{Role: model.RoleSystem, Content: m.Content}, nil
	case model.RoleUser:
		// A user message that carries images is sent as content parts: its
		// text first, then one image_url part per image with the bytes in
		// a data: URL (the endpoint never fetches anything).
		return message{Role: model.RoleUser, Content: m.Content, Images: m.Images}, nil
	case model.RoleTool:
		if m.ToolCallID == "" {
			return message{}, fmt.Errorf("tool message without tool_call_id")
		}
		return message{Role: model.RoleTool, Content: m.Content, ToolCallID: m.ToolCallID}, nil
	case model.RoleAssistant:
		a := message{Role: model.RoleAssistant, Content: m.Content, HasContent: m.Content != "" || len(m.ToolCalls) == 0}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, toolCall{ID: tc.ID, Name: tc.Name, Arguments: model.ArgumentsText(tc.Arguments)})
		}
		return a, nil
	default:
		return message{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// appendTool appends t's definition as encode.go writes it.
func appendTool(dst []byte, t model.ToolSpec) ([]byte, error) {
	tl, err := buildTool(t)
	if err != nil {
		return dst, err
	}
	return tl.appendJSON(dst, false), nil
}

// appendCompactTool is appendTool with the schema's values compacted.
func appendCompactTool(dst []byte, t model.ToolSpec) ([]byte, error) {
	tl, err := buildTool(t)
	if err != nil {
		return dst, err
	}
	return tl.appendJSON(dst, true), nil
}

func buildTool(t model.ToolSpec) (tool, error) {
	// Keep each top-level value as raw JSON: the schema reaches the wire
	// byte for byte below the top level (numbers, nested key order), and
	// the top level is sorted, so a tool's bytes are stable across calls.
	params, err := model.ToolMembers(t)
	if err != nil {
		return tool{}, err
	}
	return tool{Name: t.Name, Description: t.Description, Parameters: params}, nil
}
