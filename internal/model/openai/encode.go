package openai

import (
	"github.com/deltaharness/delta/internal/model"
)

// The request body is written here by hand rather than through the SDK's
// ChatCompletionNewParams, whose reflection-based encoder cost most of a
// call's overhead. The bytes are the SDK's own: fields in the order of its
// structs, absent fields left out as its omitzero tags leave them out,
// strings escaped as its encoder escapes them (no HTML escaping), tool
// schemas' raw values copied as it copies them, and "stream":true last,
// where the sjson set the client used to add puts it. equiv_test.go holds
// this to the SDK's output byte for byte.

// escapeHTML: the OpenAI SDK's encoder leaves <, > and & alone.
const escapeHTML = false

// encode is the request body for a streamed call with usage reported.
// The opening reused from the last body (p.head, p.skip elements) is
// copied, not extended in place: the transport may still be reading the
// last body when its call has returned. With p.next set, the opening of
// this body is collected in it for the next call.
func (p *request) encode() []byte {
	b := make([]byte, 0, len(p.head)+p.sizeHint())
	if p.skip > 0 {
		b = append(b, p.head...)
	} else {
		b = append(b, `{"messages":[`...)
	}
	for i := range p.Messages {
		if i > 0 || p.skip > 0 {
			b = append(b, ',')
		}
		b = p.Messages[i].appendJSON(b)
		if p.next != nil && len(p.next.ends) < len(p.next.keys) {
			p.next.ends = append(p.next.ends, len(b))
		}
	}
	if p.next != nil {
		p.next.body = b
	}
	b = append(b, `],"model":`...)
	b = model.AppendString(b, p.Model, escapeHTML)
	if p.ReasoningEffort != "" {
		b = append(b, `,"reasoning_effort":`...)
		b = model.AppendString(b, p.ReasoningEffort, escapeHTML)
	}
	b = append(b, `,"stream_options":{"include_usage":true}`...)
	if len(p.ToolDefs) > 0 {
		b = append(b, `,"tools":[`...)
		b = append(b, p.ToolDefs...)
		b = append(b, ']')
	}
	if p.RouterEffort != "" {
		// sjson encodes the extra's value with encoding/json, which does
		// escape HTML.
		b = append(b, `,"reasoning":{"effort":`...)
		b = model.AppendString(b, p.RouterEffort, true)
		b = append(b, '}')
	}
	return append(b, `,"stream":true}`...)
}

// sizeHint is roughly the encoded size, so the body is allocated once.
func (p *request) sizeHint() int {
	n := 128 + len(p.Model)
	for _, m := range p.Messages {
		n += 64 + len(m.Content) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += 64 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
		for _, im := range m.Images {
			n += 64 + len(im.MIME) + (len(im.Data)+2)/3*4
		}
	}
	n += len(p.ToolDefs)
	return n
}

func (m *message) appendJSON(b []byte) []byte {
	switch m.Role {
	case model.RoleSystem:
		b = append(b, `{"content":`...)
		b = model.AppendString(b, m.Content, escapeHTML)
		return append(b, `,"role":"system"}`...)
	case model.RoleUser:
		b = append(b, `{"content":`...)
		if len(m.Images) == 0 {
			b = model.AppendString(b, m.Content, escapeHTML)
		} else {
			b = append(b, '[')
			if m.Content != "" {
				b = append(b, `{"text":`...)
				b = model.AppendString(b, m.Content, escapeHTML)
				b = append(b, `,"type":"text"},`...)
			}
			for i, im := range m.Images {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"image_url":{"url":`...)
				b = model.AppendString(b, im.DataURL(), escapeHTML)
				b = append(b, `},"type":"image_url"}`...)
			}
			b = append(b, ']')
		}
		return append(b, `,"role":"user"}`...)
	case model.RoleTool:
		b = append(b, `{"content":`...)
		b = model.AppendString(b, m.Content, escapeHTML)
		b = append(b, `,"tool_call_id":`...)
		b = model.AppendString(b, m.ToolCallID, escapeHTML)
		return append(b, `,"role":"tool"}`...)
	}
	b = append(b, '{')
	if m.HasContent {
		b = append(b, `"content":`...)
		b = model.AppendString(b, m.Content, escapeHTML)
		b = append(b, ',')
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = model.AppendString(b, tc.ID, escapeHTML)
			b = append(b, `,"function":{"arguments":`...)
			b = model.AppendString(b, tc.Arguments, escapeHTML)
			b = append(b, `,"name":`...)
			b = model.AppendString(b, tc.Name, escapeHTML)
			b = append(b, `},"type":"function"}`...)
		}
		b = append(b, `],`...)
	}
	return append(b, `"role":"assistant"}`...)
}

func (t *tool) appendJSON(b []byte, compact bool) []byte {
	b = append(b, `{"function":{"name":`...)
	b = model.AppendString(b, t.Name, escapeHTML)
	if t.Description != "" {
		b = append(b, `,"description":`...)
		b = model.AppendString(b, t.Description, escapeHTML)
	}
	b = append(b, `,"parameters":`...)
	b = model.AppendObject(b, t.Parameters, escapeHTML, compact)
	return append(b, `},"type":"function"}`...)
}
