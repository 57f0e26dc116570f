package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

// errIncomplete marks a stream that ended before the model finished.
var errIncomplete = model.ErrIncompleteStream

// accumulator assembles one streamed answer from chunk bodies and forwards
// deltas to the caller's Stream as they arrive.
type accumulator struct {
	s        model.Stream
	text     strings.Builder
	calls    []*callBuilder
	byIndex  map[int64]*callBuilder
	finish   string
	finished bool // a finish_reason arrived
	done     bool // data: [DONE] arrived
	served   string
	speed    string // the service tier the endpoint reported
	usage    model.Usage
}

type callBuilder struct {
	index int64
	id    string
	name  string
	args  strings.Builder
}

func newAccumulator(s model.Stream) *accumulator {
	return &accumulator{s: s, byIndex: map[int64]*callBuilder{}}
}

// read consumes a text/event-stream body until [DONE], its end, or an
// error. It returns errIncomplete (wrapped) for a body that ended cleanly
// before any finish_reason or [DONE].
func (a *accumulator) read(res *http.Response) error {
	return model.ReadStream(res, a.event,
		func() bool { return a.done },               // a usage chunk may follow the finish_reason
		func() bool { return a.done || a.finished }) // a cut after the finish still has the whole answer
}

// event applies one SSE data payload.
func (a *accumulator) event(data []byte) error { return a.apply(data, decodeChunk) }

// apply applies one SSE data payload: a blank one is skipped, [DONE] ends
// the stream, an error event fails it, and any other is a chunk as decode
// reads it.
func (a *accumulator) apply(data []byte, decode func(data []byte) (chunk, error)) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		a.done = true
		return nil
	}
	if err := errorEvent(data); err != nil {
		return err
	}
	c, err := decode(data)
	if err != nil {
		return err
	}
	a.chunk(&c)
	return nil
}

// decodeChunk reads one chunk with the fields this client uses.
func decodeChunk(data []byte) (chunk, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return c, fmt.Errorf("malformed stream chunk: %w", err)
		}
		// A field of an unexpected type (arguments sent as an object, a
		// count as a string): read what can be read of such a chunk, as
		// the SDK's lenient decoder did (lenient.go).
		lc, lerr := lenientChunk(data)
		if lerr != nil {
			return c, fmt.Errorf("malformed stream chunk: %w", err) // not an object: the type error says so
		}
		c = lc
	}
	return c, nil
}

// errorEvent returns the error a payload carries at its top level, if any.
func errorEvent(data []byte) error {
	if !bytes.Contains(data, []byte(`"error"`)) {
		return nil // the common case: skip a second parse of every chunk
	}
	var probe struct {
		Error *struct {
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return fmt.Errorf("malformed stream chunk: %w", err)
	}
	if probe.Error != nil {
		// OpenRouter sends one when the upstream fails mid-answer; its
		// error.code is an HTTP-like status, left 0 when it is none.
		se := &model.StreamError{Message: probe.Error.Message}
		var code int
		if json.Unmarshal(probe.Error.Code, &code) == nil && code >= 400 && code <= 599 {
			se.Status = code
		}
		if se.Message == "" {
			se.Message = "unspecified error"
		}
		return se
	}
	return nil
}

// chunk is the part of a chat.completion.chunk this client reads (the
// SDK's ChatCompletionChunk decodes every field through reflection, ten
// times slower).
type chunk struct {
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chunkUsage   `json:"usage"` // nil when absent or null
	// ServiceTier is the tier the endpoint says it served the call at
	// (default, flex, priority, …); "" when it says none.
	ServiceTier string `json:"service_tier"`
}

type chunkChoice struct {
	Index        int64      `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content string `json:"content"`
	// Reasoning arrives as delta.reasoning (OpenRouter) or
	// delta.reasoning_content (other gateways); neither is in the SDK's
	// types. Raw, so a value of another type is skipped, not refused.
	Reasoning        json.RawMessage `json:"reasoning"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	ToolCalls        []chunkToolCall `json:"tool_calls"`
}

type chunkToolCall struct {
	Index    int64  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	// Cost is OpenRouter's usage.cost in USD; raw, so a value of another
	// type is skipped, not refused.
	Cost json.RawMessage `json:"cost"`
}

func (a *accumulator) chunk(c *chunk) {
	if c.Model != "" {
		a.served = c.Model
	}
	if c.ServiceTier != "" {
		a.speed = c.ServiceTier
	}
	if c.Usage != nil {
		a.usage = usageOf(c.Usage)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		d := &ch.Delta
		a.textOf(d)
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			b := a.byIndex[tc.Index]
			if b == nil {
				b = &callBuilder{index: tc.Index}
				a.byIndex[tc.Index] = b
				a.calls = append(a.calls, b)
			}
			if b.id == "" {
				b.id = tc.ID
			}
			// The name arrives whole in the first fragment; some gateways
			// repeat it on every fragment, so it is never concatenated.
			if b.name == "" {
				b.name = tc.Function.Name
			}
			b.args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
			a.finished = true
		}
	}
}

// textOf takes a choice's text: its reasoning goes to OnReasoning, its
// content onto the answer and to OnText. A streamed chunk and a whole
// completion carry both the same way.
func (a *accumulator) textOf(d *chunkDelta) {
	if r := reasoningOf(d.Reasoning, d.ReasoningContent); r != "" && a.s.OnReasoning != nil {
		a.s.OnReasoning(r)
	}
	if d.Content != "" {
		a.text.WriteString(d.Content)
		if a.s.OnText != nil {
			a.s.OnText(d.Content)
		}
	}
}

// reasoningOf is the reasoning delta: the first of delta.reasoning and
// delta.reasoning_content that is a non-empty string.
func reasoningOf(raws ...json.RawMessage) string {
	for _, raw := range raws {
		if len(raw) == 0 || raw[0] != '"' {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// usageOf maps the wire usage. OpenRouter adds usage.cost in USD, which is
// what the call was billed, so it wins over any price table.
func usageOf(u *chunkUsage) model.Usage {
	out := model.Usage{
		InputTokens:      u.PromptTokens,
		OutputTokens:     u.CompletionTokens,
		CacheReadTokens:  u.PromptTokensDetails.CachedTokens,
		CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
	}
	var cost float64
	if len(u.Cost) > 0 && string(u.Cost) != "null" && json.Unmarshal(u.Cost, &cost) == nil && cost >= 0 {
		out.CostUSD = cost
		out.CostReported = true
	}
	return out
}

// response is what was assembled so far; it is complete only after read
// returned nil.
func (a *accumulator) response() model.Response {
	r := model.Response{
		Model:        a.served,
		Text:         a.text.String(),
		FinishReason: a.finish,
		Speed:        a.speed,
		Usage:        a.usage,
	}
	calls := append([]*callBuilder(nil), a.calls...)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].index < calls[j].index })
	for i, b := range calls {
		r.ToolCalls = append(r.ToolCalls, model.StreamedCall(b.id, "call_", i, b.name, b.args.String()))
	}
	return r
}

// fromCompletion maps a whole chat.completion object, for gateways that
// answer a streaming request with plain JSON.
func (a *accumulator) fromCompletion(c *chunk) {
	a.served = c.Model
	if c.Usage != nil {
		a.usage = usageOf(c.Usage)
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		m := &ch.Delta
		a.textOf(m)
		for i, tc := range m.ToolCalls {
			b := &callBuilder{index: int64(i), id: tc.ID, name: tc.Function.Name}
			b.args.WriteString(tc.Function.Arguments)
			a.calls = append(a.calls, b)
		}
		a.finish = ch.FinishReason
		a.finished = true
	}
}
