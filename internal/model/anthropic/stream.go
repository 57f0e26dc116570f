package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

// event is the union of the Messages stream events, only the fields this
// client reads (the SDK's MessageStreamEventUnion decodes every field of
// every variant, several times slower).
type event struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Text      string `json:"text"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// wireUsage is Anthropic's usage: input_tokens excludes cache reads and
// cache writes. message_delta repeats it cumulatively, so a present field
// replaces the earlier value.
type wireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	// ServiceTier is the tier the call was served at (standard, priority,
	// batch); "" when not reported.
	ServiceTier string `json:"service_tier"`
}

// blockBuilder is one content block being streamed.
type blockBuilder struct {
	kind      string // text | tool_use | thinking | redacted_thinking | other
	id, name  string
	text      strings.Builder // text, thinking, or tool input JSON
	signature string
	data      string
}

// accumulator assembles one streamed answer and forwards deltas to the
// caller's Stream as they arrive.
type accumulator struct {
	s        model.Stream
	blocks   []*blockBuilder
	byIndex  map[int]*blockBuilder
	served   string
	stop     string
	in       int64
	out      int64
	cacheR   int64
	cacheW   int64
	speed    string // the service tier usage reported
	started  bool
	finished bool // message_stop arrived
}

func newAccumulator(s model.Stream) *accumulator {
	return &accumulator{s: s, byIndex: map[int]*blockBuilder{}}
}

// errorStatus maps Anthropic error types to the HTTP status they stand for.
var errorStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// read consumes a text/event-stream body until message_stop, its end, or
// an error.
func (a *accumulator) read(res *http.Response) error {
	return model.ReadStream(res, a.event, a.complete, a.complete)
}

// complete reports whether message_stop arrived.
func (a *accumulator) complete() bool {
	return a.finished
}

// event applies one SSE data payload. The payload's own type field is
// authoritative (the SSE event name repeats it).
func (a *accumulator) event(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	var e event
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("malformed stream event: %w", err)
	}
	switch e.Type {
	case "error":
		// overloaded_error mid-answer is the common one
		se := &model.StreamError{Message: "unspecified error"}
		if e.Error != nil {
			se.Status = errorStatus[e.Error.Type]
			if e.Error.Message != "" {
				se.Message = e.Error.Message
			}
		}
		return se
	case "message_start":
		if e.Message == nil {
			return fmt.Errorf("malformed stream event: message_start without message")
		}
		a.started = true
		a.served = e.Message.Model
		a.usage(e.Message.Usage)
	case "content_block_start":
		if e.ContentBlock == nil {
			return fmt.Errorf("malformed stream event: content_block_start without content_block")
		}
		cb := e.ContentBlock
		b := &blockBuilder{kind: cb.Type, id: cb.ID, name: cb.Name, signature: cb.Signature, data: cb.Data}
		a.byIndex[e.Index] = b
		a.blocks = append(a.blocks, b)
		switch cb.Type {
		case "text":
			grow(b, cb.Text, a.s.OnText)
		case "thinking":
			grow(b, cb.Thinking, a.s.OnReasoning)
		}
	case "content_block_delta":
		b := a.byIndex[e.Index]
		if b == nil || e.Delta == nil {
			return fmt.Errorf("malformed stream event: delta for unknown block %d", e.Index)
		}
		switch e.Delta.Type {
		case "text_delta":
			grow(b, e.Delta.Text, a.s.OnText)
		case "input_json_delta":
			b.text.WriteString(e.Delta.PartialJSON)
		case "thinking_delta":
			grow(b, e.Delta.Thinking, a.s.OnReasoning)
		case "signature_delta":
			b.signature += e.Delta.Signature
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			a.stop = e.Delta.StopReason
		}
		a.usage(e.Usage)
	case "message_stop":
		a.finished = true
	}
	// ping, content_block_stop and event types added later need nothing.
	return nil
}

// grow appends the delta d to b's text and hands it to on, the stream's
// text or reasoning callback (nil when no one listens).
func grow(b *blockBuilder, d string, on func(string)) {
	if d == "" {
		return
	}
	b.text.WriteString(d)
	if on != nil {
		on(d)
	}
}

func (a *accumulator) usage(u *wireUsage) {
	if u == nil {
		return
	}
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&a.in, u.InputTokens)
	set(&a.out, u.OutputTokens)
	set(&a.cacheR, u.CacheReadInputTokens)
	set(&a.cacheW, u.CacheCreationInputTokens)
	if u.ServiceTier != "" {
		a.speed = u.ServiceTier
	}
}

// finishReasons maps stop_reason onto the Chat Completions vocabulary the
// other wires report, so events read the same whatever the wire.
var finishReasons = map[string]string{
	"end_turn":                      "stop",
	"stop_sequence":                 "stop",
	"tool_use":                      "tool_calls",
	"max_tokens":                    "length",
	"model_context_window_exceeded": "length",
	"refusal":                       "content_filter",
}

// response is what was assembled so far; it is complete only after read
// returned nil.
func (a *accumulator) response() model.Response {
	r := model.Response{
		Model: a.served,
		Usage: model.Usage{
			// model.Usage counts gross input; Anthropic's input_tokens is
			// only the uncached part.
			InputTokens:      a.in + a.cacheR + a.cacheW,
			OutputTokens:     a.out,
			CacheReadTokens:  a.cacheR,
			CacheWriteTokens: a.cacheW,
		},
		FinishReason: a.stop,
		Speed:        a.speed,
	}
	if f, ok := finishReasons[a.stop]; ok {
		r.FinishReason = f
	}
	var text strings.Builder
	var ex extra
	for i, b := range a.blocks {
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			r.ToolCalls = append(r.ToolCalls, model.StreamedCall(b.id, "toolu_", i, b.name, b.text.String()))
		case "thinking":
			if b.signature != "" {
				raw, _ := json.Marshal(map[string]string{"type": "thinking", "thinking": b.text.String(), "signature": b.signature})
				ex.Thinking = append(ex.Thinking, raw)
			}
		case "redacted_thinking":
			if b.data != "" {
				raw, _ := json.Marshal(map[string]string{"type": "redacted_thinking", "data": b.data})
				ex.Thinking = append(ex.Thinking, raw)
			}
		}
	}
	r.Text = text.String()
	if len(ex.Thinking) > 0 {
		raw, _ := json.Marshal(map[string]extra{extraKey: ex})
		r.Extra = raw
	}
	return r
}
