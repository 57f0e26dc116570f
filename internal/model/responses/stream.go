package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

// event holds the fields of the Responses stream events this client reads
// (the SDK's ResponseStreamEventUnion decodes every variant's fields).
type event struct {
	Type     string          `json:"type"`
	Delta    string          `json:"delta"`
	ItemID   string          `json:"item_id"`
	Args     string          `json:"arguments"`
	Item     json.RawMessage `json:"item"`
	Response *wireResponse   `json:"response"`
	Code     string          `json:"code"`
	Message  string          `json:"message"`
}

type wireResponse struct {
	Model             string `json:"model"`
	Status            string `json:"status"`
	ServiceTier       string `json:"service_tier"` // the tier it was served at; "" when not said
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens     int64 `json:"cached_tokens"`
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

type item struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Phase     string `json:"phase"`
}

type callBuilder struct {
	id, callID, name string
	args             strings.Builder
	done             bool // arguments came whole in a .done event
}

type accumulator struct {
	s          model.Stream
	native     bool
	text       strings.Builder
	calls      []*callBuilder
	byItem     map[string]*callBuilder
	reasoning  []json.RawMessage
	phase      string
	served     string
	speed      string
	usage      model.Usage
	incomplete string
	finished   bool
}

func newAccumulator(s model.Stream, native bool) *accumulator {
	return &accumulator{s: s, native: native, byItem: map[string]*callBuilder{}}
}

// codeStatus maps error codes sent in the stream to the status they mean.
var codeStatus = map[string]int{
	"rate_limit_exceeded":  http.StatusTooManyRequests,
	"server_error":         http.StatusInternalServerError,
	"server_is_overloaded": http.StatusServiceUnavailable,
	"invalid_prompt":       http.StatusBadRequest,
}

// read consumes a text/event-stream body until response.completed (or
// response.incomplete), its end, or an error.
func (a *accumulator) read(res *http.Response) error {
	return model.ReadStream(res, a.event, a.complete, a.complete)
}

// complete reports whether the response's last event arrived.
func (a *accumulator) complete() bool { return a.finished }

func (a *accumulator) event(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("[DONE]")) {
		return nil
	}
	var e event
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("malformed stream event: %w", err)
	}
	switch e.Type {
	case "error":
		msg := e.Message
		if msg == "" {
			msg = "unspecified error"
		}
		return &model.StreamError{Status: codeStatus[e.Code], Code: e.Code, Message: msg}
	case "response.failed":
		se := &model.StreamError{Message: "response failed"}
		if e.Response != nil && e.Response.Error != nil {
			se.Code, se.Status = e.Response.Error.Code, codeStatus[e.Response.Error.Code]
			if e.Response.Error.Message != "" {
				se.Message = e.Response.Error.Message
			}
		}
		return se
	case "response.created", "response.in_progress":
		if e.Response != nil && e.Response.Model != "" {
			a.served = e.Response.Model
		}
	case "response.output_text.delta":
		if e.Delta != "" {
			a.text.WriteString(e.Delta)
			if a.s.OnText != nil {
				a.s.OnText(e.Delta)
			}
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if e.Delta != "" && a.s.OnReasoning != nil {
			a.s.OnReasoning(e.Delta)
		}
	case "response.output_item.added", "response.output_item.done":
		return a.item(e.Item, e.Type == "response.output_item.done")
	case "response.function_call_arguments.delta":
		if b := a.byItem[e.ItemID]; b != nil && !b.done {
			b.args.WriteString(e.Delta)
		}
	case "response.function_call_arguments.done":
		if b := a.byItem[e.ItemID]; b != nil {
			b.args.Reset()
			b.args.WriteString(e.Args)
			b.done = true
		}
	case "response.completed", "response.incomplete":
		if e.Response == nil {
			return fmt.Errorf("malformed stream event: %s without response", e.Type)
		}
		r := e.Response
		if r.Model != "" {
			a.served = r.Model
		}
		if r.ServiceTier != "" {
			a.speed = r.ServiceTier
		}
		if r.Usage != nil {
			a.usage = model.Usage{
				InputTokens:      r.Usage.InputTokens,
				OutputTokens:     r.Usage.OutputTokens,
				CacheReadTokens:  r.Usage.InputTokensDetails.CachedTokens,
				CacheWriteTokens: r.Usage.InputTokensDetails.CacheWriteTokens,
			}
		}
		if e.Type == "response.incomplete" {
			a.incomplete = "length"
			if r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter" {
				a.incomplete = "content_filter"
			}
		}
		a.finished = true
	}
	return nil
}

// item records an output item as it opens and as it closes.
func (a *accumulator) item(raw json.RawMessage, done bool) error {
	var it item
	if err := json.Unmarshal(raw, &it); err != nil {
		return fmt.Errorf("malformed stream event: item: %w", err)
	}
	switch it.Type {
	case "function_call":
		b := a.byItem[it.ID]
		if b == nil {
			b = &callBuilder{id: it.ID}
			a.byItem[it.ID] = b
			a.calls = append(a.calls, b)
		}
		if it.CallID != "" {
			b.callID = it.CallID
		}
		if it.Name != "" {
			b.name = it.Name
		}
		if done && it.Arguments != "" {
			b.args.Reset()
			b.args.WriteString(it.Arguments)
			b.done = true
		}
	case "reasoning":
		// Kept verbatim (encrypted_content included) for replay on the
		// openai.com lane; other lanes never see it again.
		if done && a.native {
			a.reasoning = append(a.reasoning, append(json.RawMessage(nil), raw...))
		}
	case "message":
		if it.Phase != "" {
			a.phase = it.Phase
		}
	}
	return nil
}

func (a *accumulator) response() model.Response {
	r := model.Response{Model: a.served, Text: a.text.String(), Usage: a.usage, FinishReason: "stop", Speed: a.speed}
	for i, b := range a.calls {
		r.ToolCalls = append(r.ToolCalls, model.StreamedCall(b.callID, "call_", i, b.name, b.args.String()))
	}
	if len(r.ToolCalls) > 0 {
		r.FinishReason = "tool_calls"
	}
	if a.incomplete != "" {
		r.FinishReason = a.incomplete
	}
	if a.native && (len(a.reasoning) > 0 || a.phase != "") {
		raw, _ := json.Marshal(map[string]extra{extraKey: {Items: a.reasoning, Phase: a.phase}})
		r.Extra = raw
	}
	return r
}
