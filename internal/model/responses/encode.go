package responses

import (
	"github.com/deltaharness/delta/internal/model"
)

// The request body is written here by hand rather than through the SDK's
// ResponseNewParams, whose reflection-based encoder cost ~350 µs for a
// 50-message history. The bytes are the SDK's own: fields in the order of
// its structs, absent fields left out as its omitzero tags leave them
// out, strings escaped as its encoder escapes them (no HTML escaping),
// tool schemas' raw values copied, stored reasoning items compacted (the
// SDK re-encodes an override), and "stream":true last, where the sjson
// set the client used to add puts it. equiv_test.go holds this to the
// SDK's output byte for byte.

// escapeHTML: the OpenAI SDK's encoder leaves <, > and & alone.
const escapeHTML = false

// breakpointPart closes an input_text part that carries an explicit cache
// breakpoint.
const breakpointPart = `,"prompt_cache_breakpoint":{"mode":"explicit"},"type":"input_text"}]`

// encode is the request body for a streamed call.
func (p *request) encode() []byte {
	b := make([]byte, 0, p.sizeHint())
	b = append(b, '{')
	if p.Instructions != "" {
		b = append(b, `"instructions":`...)
		b = model.AppendString(b, p.Instructions, escapeHTML)
		b = append(b, ',')
	}
	b = append(b, `"store":false`...)
	if p.IncludeSealed {
		b = append(b, `,"include":["reasoning.encrypted_content"]`...)
	}
	b = append(b, `,"input":[`...)
	for i := range p.Input {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.Input[i].appendJSON(b)
	}
	b = append(b, `],"model":`...)
	b = model.AppendString(b, p.Model, escapeHTML)
	if p.ExplicitCache {
		b = append(b, `,"prompt_cache_options":{"mode":"explicit"}`...)
	}
	if p.Effort != "" || p.Summary != "" {
		b = append(b, `,"reasoning":{`...)
		if p.Effort != "" {
			b = append(b, `"effort":`...)
			b = model.AppendString(b, p.Effort, escapeHTML)
			if p.Summary != "" {
				b = append(b, ',')
			}
		}
		if p.Summary != "" {
			b = append(b, `"summary":`...)
			b = model.AppendString(b, p.Summary, escapeHTML)
		}
		b = append(b, '}')
	}
	if p.Verbosity != "" {
		b = append(b, `,"text":{"verbosity":`...)
		b = model.AppendString(b, p.Verbosity, escapeHTML)
		b = append(b, '}')
	}
	if len(p.ToolDefs) > 0 {
		b = append(b, `,"tools":[`...)
		b = append(b, p.ToolDefs...)
		b = append(b, ']')
	}
	return append(b, `,"stream":true}`...)
}

// MarshalJSON is the body Complete sends.
func (p request) MarshalJSON() ([]byte, error) { return p.encode(), nil }

// sizeHint is roughly the encoded size, so the body is allocated once.
func (p *request) sizeHint() int {
	n := 256 + len(p.Instructions) + len(p.Model)
	for _, it := range p.Input {
		n += 96 + len(it.text) + len(it.phase) + len(it.callID) + len(it.name) + len(it.arguments) + len(it.raw)
		for _, im := range it.images {
			n += 64 + len(im.MIME) + (len(im.Data)+2)/3*4
		}
	}
	n += len(p.ToolDefs)
	return n
}

func (it *inputItem) appendJSON(b []byte) []byte {
	switch it.kind {
	case kindStored:
		return model.AppendCompact(b, it.raw, escapeHTML)
	case kindFunctionCall:
		b = append(b, `{"arguments":`...)
		b = model.AppendString(b, it.arguments, escapeHTML)
		b = append(b, `,"call_id":`...)
		b = model.AppendString(b, it.callID, escapeHTML)
		b = append(b, `,"name":`...)
		b = model.AppendString(b, it.name, escapeHTML)
		return append(b, `,"type":"function_call"}`...)
	case kindCallOutput:
		b = append(b, `{"output":`...)
		if it.breakpoint {
			b = append(b, `[{"text":`...)
			b = model.AppendString(b, it.text, escapeHTML)
			b = append(b, breakpointPart...)
		} else {
			b = model.AppendString(b, it.text, escapeHTML)
		}
		b = append(b, `,"call_id":`...)
		b = model.AppendString(b, it.callID, escapeHTML)
		return append(b, `,"type":"function_call_output"}`...)
	}
	// A message.
	b = append(b, `{"content":`...)
	switch {
	case it.breakpoint:
		b = append(b, `[{"text":`...)
		b = model.AppendString(b, it.text, escapeHTML)
		b = append(b, breakpointPart...)
	case len(it.images) > 0:
		b = append(b, '[')
		if it.text != "" {
			b = append(b, `{"text":`...)
			b = model.AppendString(b, it.text, escapeHTML)
			b = append(b, `,"type":"input_text"},`...)
		}
		for i, im := range it.images {
			if i > 0 {
				b = append(b, ',')
			}
			// The API requires a detail; "auto" lets it choose.
			b = append(b, `{"detail":"auto","image_url":`...)
			b = model.AppendString(b, im.DataURL(), escapeHTML)
			b = append(b, `,"type":"input_image"}`...)
		}
		b = append(b, ']')
	default:
		b = model.AppendString(b, it.text, escapeHTML)
	}
	b = append(b, `,"role":`...)
	b = model.AppendString(b, it.role, escapeHTML)
	if it.phase != "" {
		b = append(b, `,"phase":`...)
		b = model.AppendString(b, it.phase, escapeHTML)
	}
	return append(b, '}')
}

func (t *tool) appendJSON(b []byte) []byte {
	b = append(b, `{"strict":false,"parameters":`...)
	b = model.AppendObject(b, t.parameters, escapeHTML, false)
	b = append(b, `,"name":`...)
	b = model.AppendString(b, t.name, escapeHTML)
	if t.description != "" {
		b = append(b, `,"description":`...)
		b = model.AppendString(b, t.description, escapeHTML)
	}
	return append(b, `,"type":"function"}`...)
}
