package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/deltaharness/delta/internal/model"
)

// errIncomplete marks a stream that ended before the model finished.
var errIncomplete = errors.New("stream ended before the model finished")

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
	dec := ssestream.NewDecoder(res)
	if dec == nil {
		return fmt.Errorf("read stream: no body: %w", errIncomplete)
	}
	defer dec.Close()
	for !a.done && dec.Next() {
		if err := a.event(dec.Event().Data); err != nil {
			return err
		}
	}
	if err := dec.Err(); err != nil {
		return fmt.Errorf("read stream: %w", err)
	}
	if !a.done && !a.finished {
		return errIncomplete
	}
	return nil
}

// streamError is an error object the server sent inside a 200 stream
// (OpenRouter does this when the upstream fails mid-answer).
type streamError struct {
	code    int // HTTP-like status from error.code, 0 when absent
	message string
}

func (e *streamError) Error() string { return "error event in stream: " + e.message }

// event applies one SSE data payload.
func (a *accumulator) event(data []byte) error {
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
	var c sdk.ChatCompletionChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("malformed stream chunk: %w", err)
	}
	a.chunk(&c)
	return nil
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
		se := &streamError{message: probe.Error.Message}
		var code int
		if json.Unmarshal(probe.Error.Code, &code) == nil && code >= 400 && code <= 599 {
			se.code = code
		}
		if se.message == "" {
			se.message = "unspecified error"
		}
		return se
	}
	return nil
}

func (a *accumulator) chunk(c *sdk.ChatCompletionChunk) {
	if c.Model != "" {
		a.served = c.Model
	}
	if c.JSON.Usage.Valid() {
		a.usage = usageOf(c.Usage)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		d := &ch.Delta
		if r := reasoningOf(d.JSON.ExtraFields); r != "" && a.s.OnReasoning != nil {
			a.s.OnReasoning(r)
		}
		if d.Content != "" {
			a.text.WriteString(d.Content)
			if a.s.OnText != nil {
				a.s.OnText(d.Content)
			}
		}
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

// reasoningOf reads the reasoning delta OpenRouter sends as delta.reasoning
// (other gateways use delta.reasoning_content). Neither is in the SDK's
// types, so both come from the raw extra fields.
func reasoningOf(extra map[string]respjson.Field) string {
	for _, key := range [...]string{"reasoning", "reasoning_content"} {
		f, ok := extra[key]
		if !ok {
			continue
		}
		raw := f.Raw()
		if raw == "" || raw == "null" {
			continue
		}
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// usageOf maps the wire usage. OpenRouter adds usage.cost in USD, which is
// what the call was billed, so it wins over any price table.
func usageOf(u sdk.CompletionUsage) model.Usage {
	out := model.Usage{
		InputTokens:      u.PromptTokens,
		OutputTokens:     u.CompletionTokens,
		CacheReadTokens:  u.PromptTokensDetails.CachedTokens,
		CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
	}
	if f, ok := u.JSON.ExtraFields["cost"]; ok {
		var cost float64
		if raw := f.Raw(); raw != "" && raw != "null" && json.Unmarshal([]byte(raw), &cost) == nil && cost >= 0 {
			out.CostUSD = cost
			out.CostReported = true
		}
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
		Usage:        a.usage,
	}
	calls := append([]*callBuilder(nil), a.calls...)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].index < calls[j].index })
	for i, b := range calls {
		id := b.id
		if id == "" {
			// Some gateways omit ids; the tool result must still be able
			// to name its call.
			id = fmt.Sprintf("call_%d", i)
		}
		args := b.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		r.ToolCalls = append(r.ToolCalls, model.ToolCall{ID: id, Name: b.name, Arguments: json.RawMessage(args)})
	}
	return r
}

// fromCompletion maps a whole chat.completion object, for gateways that
// answer a streaming request with plain JSON.
func (a *accumulator) fromCompletion(c *sdk.ChatCompletion) {
	a.served = c.Model
	if c.JSON.Usage.Valid() {
		a.usage = usageOf(c.Usage)
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if r := reasoningOf(ch.Message.JSON.ExtraFields); r != "" && a.s.OnReasoning != nil {
			a.s.OnReasoning(r)
		}
		if ch.Message.Content != "" {
			a.text.WriteString(ch.Message.Content)
			if a.s.OnText != nil {
				a.s.OnText(ch.Message.Content)
			}
		}
		for i, tc := range ch.Message.ToolCalls {
			b := &callBuilder{index: int64(i), id: tc.ID, name: tc.Function.Name}
			b.args.WriteString(tc.Function.Arguments)
			a.calls = append(a.calls, b)
		}
		a.finish = ch.FinishReason
		a.finished = true
	}
}
