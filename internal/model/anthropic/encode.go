package anthropic

import (
	"fmt"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/tidwall/sjson"

	"github.com/deltaharness/delta/internal/model"
)

// The request body is written here by hand rather than through the SDK's
// MessageNewParams, whose reflection-based encoder cost ~300 µs for a
// 50-message history. The bytes are the SDK's own: fields in the order of
// its structs, absent fields left out as its omitzero tags leave them
// out, strings HTML-escaped and raw JSON compacted as its encoder does,
// and "stream":true last, where the SDK's sjson set puts it (NewStreaming
// still sets it, finds it there, and leaves the bytes as they are).
// equiv_test.go holds this to the SDK's output byte for byte.

// escapeHTML: the Anthropic SDK's encoder escapes <, > and &.
const escapeHTML = true

// encode is the request body for a streamed call.
func (p *request) encode() []byte {
	b := make([]byte, 0, p.sizeHint())
	b = append(b, `{"max_tokens":`...)
	b = strconv.AppendInt(b, p.MaxTokens, 10)
	b = append(b, `,"messages":[`...)
	for i := range p.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.Messages[i].appendJSON(b)
	}
	b = append(b, `],"model":`...)
	b = model.AppendString(b, p.Model, escapeHTML)
	if p.OutputEffort != "" {
		b = append(b, `,"output_config":{"effort":`...)
		b = model.AppendString(b, p.OutputEffort, escapeHTML)
		b = append(b, '}')
	}
	if len(p.System) > 0 {
		b = append(b, `,"system":[`...)
		for i := range p.System {
			if i > 0 {
				b = append(b, ',')
			}
			b = p.System[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	switch p.Thinking.kind {
	case "enabled":
		b = append(b, `,"thinking":{"budget_tokens":`...)
		b = strconv.AppendInt(b, p.Thinking.budget, 10)
		b = append(b, `,"type":"enabled"}`...)
	case "adaptive", "disabled":
		b = append(b, `,"thinking":{"type":"`...)
		b = append(b, p.Thinking.kind...)
		b = append(b, `"}`...)
	}
	if len(p.ToolDefs) > 0 {
		b = append(b, `,"tools":[`...)
		b = append(b, p.ToolDefs...)
		b = append(b, ']')
	}
	return append(b, `,"stream":true}`...)
}

// sizeHint is roughly the encoded size, so the body is allocated once.
func (p *request) sizeHint() int {
	n := 256 + len(p.Model)
	for _, s := range p.System {
		n += 64 + len(s.text)
	}
	for _, m := range p.Messages {
		n += 32
		for _, c := range m.Content {
			n += 96 + len(c.text) + len(c.id) + len(c.name) + len(c.input) + len(c.signature) + len(c.data)
		}
	}
	n += len(p.ToolDefs)
	return n
}

// MarshalJSON writes one message as the SDK's MessageParam.
func (m message) MarshalJSON() ([]byte, error) { return m.appendJSON(nil), nil }

func (m *message) appendJSON(b []byte) []byte {
	b = append(b, `{"content":[`...)
	for i := range m.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = m.Content[i].appendJSON(b)
	}
	if m.Role == model.RoleAssistant {
		return append(b, `],"role":"assistant"}`...)
	}
	return append(b, `],"role":"user"}`...)
}

const cacheControl = `,"cache_control":{"type":"ephemeral"}`

func (c *content) appendJSON(b []byte) []byte {
	switch c.kind {
	case kindText:
		b = append(b, `{"text":`...)
		b = model.AppendString(b, c.text, escapeHTML)
		if c.cache {
			b = append(b, cacheControl...)
		}
		return append(b, `,"type":"text"}`...)
	case kindImage:
		b = append(b, `{"source":{"data":`...)
		b = model.AppendString(b, c.data, escapeHTML)
		if c.mediaType != "" {
			b = append(b, `,"media_type":`...)
			b = model.AppendString(b, c.mediaType, escapeHTML)
		}
		return append(b, `,"type":"base64"},"type":"image"}`...)
	case kindToolUse:
		b = append(b, `{"id":`...)
		b = model.AppendString(b, c.id, escapeHTML)
		b = append(b, `,"input":`...)
		b = model.AppendCompact(b, c.input, escapeHTML)
		b = append(b, `,"name":`...)
		b = model.AppendString(b, c.name, escapeHTML)
		return append(b, `,"type":"tool_use"}`...)
	case kindToolResult:
		b = append(b, `{"tool_use_id":`...)
		b = model.AppendString(b, c.id, escapeHTML)
		if c.cache {
			b = append(b, cacheControl...)
		}
		if c.text != "" {
			b = append(b, `,"content":[{"text":`...)
			b = model.AppendString(b, c.text, escapeHTML)
			b = append(b, `,"type":"text"}]`...)
		}
		return append(b, `,"type":"tool_result"}`...)
	case kindThinking:
		b = append(b, `{"signature":`...)
		b = model.AppendString(b, c.signature, escapeHTML)
		b = append(b, `,"thinking":`...)
		b = model.AppendString(b, c.text, escapeHTML)
		return append(b, `,"type":"thinking"}`...)
	case kindRedactedThinking:
		b = append(b, `{"data":`...)
		b = model.AppendString(b, c.data, escapeHTML)
		return append(b, `,"type":"redacted_thinking"}`...)
	}
	panic("anthropic: content block of unknown kind " + strconv.Quote(c.kind))
}

// appendJSON writes the SDK's ToolParam. The schema's extra fields go
// last, each as the SDK's sjson set appends it; a key sjson would read as
// path syntax is set through sjson itself, so it lands exactly as the
// SDK's would.
func (t *tool) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"input_schema":`...)
	start := len(b)
	b = append(b, `{"properties":`...)
	b = model.AppendCompact(b, t.properties, escapeHTML)
	if t.required != nil {
		b = append(b, `,"required":[`...)
		for i, r := range t.required {
			if i > 0 {
				b = append(b, ',')
			}
			b = model.AppendString(b, r, escapeHTML)
		}
		b = append(b, ']')
	}
	b = append(b, `,"type":"object"`...)
	var odd []schemaField
	for _, f := range t.extras {
		if !plainKey(f.key) {
			odd = append(odd, f)
			continue
		}
		b = append(b, ',', '"')
		b = append(b, f.key...)
		b = append(b, '"', ':')
		b = model.AppendCompact(b, f.value, escapeHTML)
	}
	b = append(b, '}')
	if len(odd) > 0 {
		schema := b[start:]
		for _, f := range odd {
			var err error
			schema, err = sjson.SetRawBytes(schema, param.EscapeSJSONKey(f.key), model.AppendCompact(nil, f.value, escapeHTML))
			if err != nil {
				return nil, fmt.Errorf("schema key %q: %w", f.key, err)
			}
		}
		b = append(b[:start], schema...)
	}
	b = append(b, `,"name":`...)
	b = model.AppendString(b, t.name, escapeHTML)
	if t.description != "" {
		b = append(b, `,"description":`...)
		b = model.AppendString(b, t.description, escapeHTML)
	}
	return append(b, '}'), nil
}

// plainKey reports whether sjson would append key as it is: a name of
// letters, digits, _, $ and -, not starting with a digit or -, has no
// path syntax and needs no JSON escaping.
func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case (c >= '0' && c <= '9' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
