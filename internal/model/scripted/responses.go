package scripted

// The OpenAI Responses wire (POST /v1/responses). Requests are decoded and
// translated to a ChatRequest (instructions → a system message, message
// items, function_call items as the assistant's tool calls,
// function_call_output items as tool messages; reasoning items are
// skipped). Replies stream as the API's events, each with its
// sequence_number: response.created, response.in_progress, a reasoning
// item with summary deltas (and encrypted_content when the request
// includes reasoning.encrypted_content), a message item with
// output_text deltas, function_call items with argument deltas, then
// response.completed carrying the whole response and usage.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

type respRequest struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Stream       bool            `json:"stream"`
	Include      []string        `json:"include"`
	Tools        []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
	Reasoning *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning"`
}

type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// DecodeResponsesRequest parses a Responses request body into the neutral
// ChatRequest. Reasoning holds the raw reasoning object, ReasoningEffort
// its effort.
func DecodeResponsesRequest(body []byte) (ChatRequest, error) {
	var w respRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return ChatRequest{}, fmt.Errorf("decode responses request: %w", err)
	}
	if w.Model == "" {
		return ChatRequest{}, wireError("Missing required parameter: 'model'.")
	}
	req := ChatRequest{Model: w.Model, Stream: w.Stream, IncludeUsage: true, Raw: json.RawMessage(append([]byte(nil), body...))}
	if raw := rawField(body, "reasoning"); raw != nil {
		req.Reasoning = raw
	}
	if w.Reasoning != nil {
		req.ReasoningEffort = w.Reasoning.Effort
	}
	if w.Instructions != "" {
		req.Messages = append(req.Messages, ChatMessage{Role: "system", Content: w.Instructions})
	}
	var s string
	var items []respItem
	switch {
	case len(w.Input) == 0 || string(w.Input) == "null":
		return ChatRequest{}, wireError("Missing required parameter: 'input'.")
	case json.Unmarshal(w.Input, &s) == nil:
		items = []respItem{{Type: "message", Role: "user", Content: w.Input}}
	case json.Unmarshal(w.Input, &items) != nil:
		return ChatRequest{}, wireError("Invalid type for 'input': expected a string or an array of input items.")
	}
	for i, it := range items {
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		switch it.Type {
		case "message":
			switch it.Role {
			case "user", "system", "developer", "assistant":
			default:
				return ChatRequest{}, wireErrorf("Invalid value for 'input[%d].role': %q.", i, it.Role)
			}
			text, images, err := contentParts(it.Content)
			if err != nil {
				return ChatRequest{}, fmt.Errorf("input[%d].content: %v", i, err)
			}
			if len(images) > 0 && it.Role != "user" {
				return ChatRequest{}, wireErrorf("Invalid 'input[%d].content': input_image is only valid in user messages.", i)
			}
			req.Messages = append(req.Messages, ChatMessage{Role: it.Role, Content: text, Images: images})
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return ChatRequest{}, wireErrorf("Missing required parameter: 'input[%d].call_id' or 'name'.", i)
			}
			tc := ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
				req.Messages[n-1].ToolCalls = append(req.Messages[n-1].ToolCalls, tc)
			} else {
				req.Messages = append(req.Messages, ChatMessage{Role: "assistant", ToolCalls: []ToolCall{tc}})
			}
		case "function_call_output":
			if it.CallID == "" {
				return ChatRequest{}, wireErrorf("Missing required parameter: 'input[%d].call_id'.", i)
			}
			text, err := contentText(it.Output)
			if err != nil {
				return ChatRequest{}, fmt.Errorf("input[%d].output: %v", i, err)
			}
			req.Messages = append(req.Messages, ChatMessage{Role: "tool", ToolCallID: it.CallID, Content: text})
		case "reasoning":
		default:
			return ChatRequest{}, wireErrorf("Invalid value for 'input[%d].type': %q.", i, it.Type)
		}
	}
	if len(req.Messages) == 0 {
		return ChatRequest{}, wireError("Invalid 'input': empty array.")
	}
	for i, t := range w.Tools {
		if t.Type != "function" || t.Name == "" {
			return ChatRequest{}, wireErrorf("Missing required parameter: 'tools[%d].name'.", i)
		}
		req.Tools = append(req.Tools, ChatTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return req, nil
}

var respWire = openAIWire(DecodeResponsesRequest)

// openAIWire is one of OpenAI's two wires, which share the bearer key,
// the error shape and the context-window refusal. Like OpenAI, the 401
// names the key that was refused, so clients are tested on keeping it out
// of their errors.
func openAIWire(decode func(body []byte) (ChatRequest, error)) wire {
	return wire{
		decode: decode,
		authOK: func(h http.Header, key string) bool { return h.Get("Authorization") == "Bearer "+key },
		authFail: func(h http.Header) string {
			return "Incorrect API key provided: " + strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
		},
		writeErr: writeError,
		overflow: writeOpenAIOverflow,
	}
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	req, rep, seq, ok := s.dispatch(w, r, respWire)
	if !ok {
		return
	}
	res := resolve(req, rep, "resp_modeltest_"+seq)
	var body respRequest
	_ = json.Unmarshal(req.Raw, &body) // decoded once already
	encrypted := slices.Contains(body.Include, "reasoning.encrypted_content")
	names, data := respEvents(res, encrypted, time.Now().Unix())
	if !req.Stream {
		var last map[string]json.RawMessage
		_ = json.Unmarshal(data[len(data)-1], &last)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(last["response"])
		return
	}
	startSSE(w, r).events(res, names, data)
}

// respEvents renders a reply as the Responses stream.
func respEvents(r reply, encrypted bool, created int64) (names []string, data [][]byte) {
	seq := 0
	add := func(v map[string]any) {
		v["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(v)
		names = append(names, v["type"].(string))
		data = append(data, b)
	}
	base := func(status string, output []any, usage any) map[string]any {
		return map[string]any{
			"id": r.id, "object": "response", "created_at": created, "status": status, "model": r.model,
			"output": output, "usage": usage, "error": nil, "incomplete_details": nil,
			"parallel_tool_calls": true, "store": false, "tool_choice": "auto", "tools": []any{},
		}
	}
	add(map[string]any{"type": "response.created", "response": base("in_progress", []any{}, nil)})
	add(map[string]any{"type": "response.in_progress", "response": base("in_progress", []any{}, nil)})
	var output []any
	idx := 0
	if r.Reasoning != "" {
		id := "rs_" + r.id
		item := map[string]any{"id": id, "type": "reasoning", "summary": []any{}}
		add(map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		part := map[string]any{"type": "summary_text", "text": ""}
		add(map[string]any{"type": "response.reasoning_summary_part.added", "item_id": id, "output_index": idx, "summary_index": 0, "part": part})
		for _, p := range splitWords(r.Reasoning) {
			add(map[string]any{"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": idx, "summary_index": 0, "delta": p})
		}
		add(map[string]any{"type": "response.reasoning_summary_text.done", "item_id": id, "output_index": idx, "summary_index": 0, "text": r.Reasoning})
		done := map[string]any{"id": id, "type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": r.Reasoning}}}
		if encrypted {
			done["encrypted_content"] = "gAAAAmodeltest-" + r.id
		}
		add(map[string]any{"type": "response.output_item.done", "output_index": idx, "item": done})
		output = append(output, done)
		idx++
	}
	if r.Text != "" {
		id := "msg_" + r.id
		item := map[string]any{"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}
		add(map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		add(map[string]any{"type": "response.content_part.added", "item_id": id, "output_index": idx, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, p := range splitWords(r.Text) {
			add(map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": idx, "content_index": 0, "delta": p, "logprobs": []any{}})
		}
		add(map[string]any{"type": "response.output_text.done", "item_id": id, "output_index": idx, "content_index": 0, "text": r.Text, "logprobs": []any{}})
		part := map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}
		add(map[string]any{"type": "response.content_part.done", "item_id": id, "output_index": idx, "content_index": 0, "part": part})
		done := map[string]any{"id": id, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
		if len(r.ToolCalls) > 0 {
			done["phase"] = "commentary"
		} else {
			done["phase"] = "final_answer"
		}
		add(map[string]any{"type": "response.output_item.done", "output_index": idx, "item": done})
		output = append(output, done)
		idx++
	}
	for i, tc := range r.ToolCalls {
		id := fmt.Sprintf("fc_%s_%d", r.id, i)
		callID := tc.ID
		if callID == "" {
			callID = fmt.Sprintf("call_modeltest_%s_%d", r.id, i)
		}
		item := map[string]any{"id": id, "type": "function_call", "status": "in_progress", "call_id": callID, "name": tc.Name, "arguments": ""}
		add(map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		for _, p := range splitArgs(tc.Arguments) {
			add(map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": idx, "delta": p})
		}
		add(map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": idx, "arguments": tc.Arguments})
		done := map[string]any{"id": id, "type": "function_call", "status": "completed", "call_id": callID, "name": tc.Name, "arguments": tc.Arguments}
		add(map[string]any{"type": "response.output_item.done", "output_index": idx, "item": done})
		output = append(output, done)
		idx++
	}
	if output == nil {
		output = []any{}
	}
	u := r.usage
	usage := map[string]any{
		"input_tokens":          u.PromptTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.PromptTokensDetails.CachedTokens},
		"output_tokens":         u.CompletionTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          u.PromptTokens + u.CompletionTokens,
	}
	add(map[string]any{"type": "response.completed", "response": base("completed", output, usage)})
	return names, data
}

// wireMessage is an error message worded exactly as the real endpoint
// words it (capitalised, with a full stop), which Go error style would not.
type wireMessage string

func (w wireMessage) Error() string { return string(w) }

func wireError(msg string) error { return wireMessage(msg) }

func wireErrorf(format string, a ...any) error { return wireMessage(fmt.Sprintf(format, a...)) }
