package scripted

// The Anthropic Messages wire (POST /v1/messages). Requests are decoded
// and checked as the real API checks them (x-api-key, anthropic-version,
// max_tokens, roles, non-empty text, at most four cache_control markers,
// thinking blocks replayed before a tool_use loop continues), then
// translated to a ChatRequest so every Script, DemoScript included, works
// unchanged. Replies stream as the API's named events, in its order:
// message_start, content blocks (thinking with its signature, text,
// tool_use with input_json_delta fragments), message_delta, message_stop.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

type anthRequest struct {
	Model     string          `json:"model"`
	MaxTokens int64           `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int64  `json:"budget_tokens"`
	} `json:"thinking"`
	OutputConfig *struct {
		Effort string `json:"effort"`
	} `json:"output_config"`
}

type anthBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	Signature    string          `json:"signature"`
	CacheControl json.RawMessage `json:"cache_control"`
	Source       json.RawMessage `json:"source"` // image blocks
}

// blocks reads a content field: a plain string or an array of blocks.
func anthBlocks(raw json.RawMessage) ([]anthBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthBlock{{Type: "text", Text: &s}}, nil
	}
	var bs []anthBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, errors.New("content must be a string or an array of content blocks")
	}
	return bs, nil
}

// DecodeAnthropicRequest parses a Messages request body into the neutral
// ChatRequest: system blocks become system messages, each user text block
// a user message, each tool_result a tool message, each assistant turn one
// assistant message with its tool_use blocks as tool calls. Thinking
// settings land in Reasoning (the raw thinking object) and
// ReasoningEffort (output_config.effort).
func DecodeAnthropicRequest(body []byte) (ChatRequest, error) {
	fail := func(format string, a ...any) (ChatRequest, error) {
		return ChatRequest{}, fmt.Errorf(format, a...)
	}
	var w anthRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fail("decode messages request: %w", err)
	}
	switch {
	case w.Model == "":
		return fail("model: Field required")
	case w.MaxTokens <= 0:
		return fail("max_tokens: Field required and must be positive")
	case len(w.Messages) == 0:
		return fail("messages: at least one message is required")
	}
	req := ChatRequest{Model: w.Model, Stream: w.Stream, IncludeUsage: true, Raw: json.RawMessage(append([]byte(nil), body...))}
	var th struct {
		Type string `json:"type"`
	}
	if raw := rawField(body, "thinking"); raw != nil {
		req.Reasoning = raw
		_ = json.Unmarshal(raw, &th)
	}
	if w.OutputConfig != nil {
		req.ReasoningEffort = w.OutputConfig.Effort
	}
	if th.Type == "enabled" && (w.Thinking.BudgetTokens < 1024 || w.Thinking.BudgetTokens >= w.MaxTokens) {
		return fail("thinking.budget_tokens: must be ≥ 1024 and less than max_tokens")
	}
	markers := 0
	sys, err := anthBlocks(w.System)
	if err != nil {
		return fail("system: %v", err)
	}
	for _, b := range sys {
		if b.Text == nil || *b.Text == "" {
			return fail("system: text content blocks must be non-empty")
		}
		if len(b.CacheControl) > 0 {
			markers++
		}
		req.Messages = append(req.Messages, ChatMessage{Role: "system", Content: *b.Text})
	}
	lastAssistant := -1
	for i, m := range w.Messages {
		bs, err := anthBlocks(m.Content)
		if err != nil {
			return fail("messages.%d.content: %v", i, err)
		}
		if len(bs) == 0 {
			return fail("messages.%d: all messages must have non-empty content", i)
		}
		var a ChatMessage
		lastUser := -1 // the user message an image block joins (images.go)
		for j, b := range bs {
			if len(b.CacheControl) > 0 {
				markers++
			}
			switch {
			case b.Type == "text" && (b.Text == nil || *b.Text == ""):
				return fail("messages.%d.content.%d.text: text content blocks must be non-empty", i, j)
			case m.Role == "user" && b.Type == "text":
				req.Messages = append(req.Messages, ChatMessage{Role: "user", Content: *b.Text})
				lastUser = len(req.Messages) - 1
			case m.Role == "user" && b.Type == "tool_result":
				text, err := contentText(b.Content)
				if err != nil {
					return fail("messages.%d.content.%d: %v", i, j, err)
				}
				req.Messages = append(req.Messages, ChatMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: text})
			case m.Role == "assistant" && b.Type == "text":
				a.Content += *b.Text
			case m.Role == "assistant" && b.Type == "tool_use":
				if !strings.HasPrefix(strings.TrimSpace(string(b.Input)), "{") {
					return fail("messages.%d.content.%d.input: Input should be a valid dictionary", i, j)
				}
				a.ToolCalls = append(a.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
			case m.Role == "assistant" && (b.Type == "thinking" || b.Type == "redacted_thinking"):
			case m.Role == "user" && b.Type == "image":
				im, err := anthImage(b.Source)
				if err != nil {
					return fail("messages.%d.content.%d.source: %v", i, j, err)
				}
				if lastUser < 0 {
					req.Messages = append(req.Messages, ChatMessage{Role: "user"})
					lastUser = len(req.Messages) - 1
				}
				req.Messages[lastUser].Images = append(req.Messages[lastUser].Images, im)
			default:
				return fail("messages.%d.content.%d: unexpected %q block in a %q message", i, j, b.Type, m.Role)
			}
		}
		switch m.Role {
		case "user":
		case "assistant":
			a.Role = "assistant"
			req.Messages = append(req.Messages, a)
			lastAssistant = i
		default:
			return fail("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
	}
	if markers > 4 {
		return fail("A maximum of 4 blocks with cache_control may be provided. Found %d.", markers)
	}
	// With thinking on, the assistant turn a tool loop continues from must
	// open with its thinking block, as the real API insists.
	if (th.Type == "enabled" || th.Type == "adaptive") && lastAssistant >= 0 && lastAssistant < len(w.Messages)-1 {
		bs, _ := anthBlocks(w.Messages[lastAssistant].Content)
		hasTool := false
		for _, b := range bs {
			hasTool = hasTool || b.Type == "tool_use"
		}
		if hasTool && bs[0].Type != "thinking" && bs[0].Type != "redacted_thinking" {
			return fail("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.", lastAssistant, bs[0].Type)
		}
	}
	for i, t := range w.Tools {
		if t.Name == "" {
			return fail("tools.%d.name: Field required", i)
		}
		if len(t.InputSchema) == 0 {
			return fail("tools.%d.input_schema: Field required", i)
		}
		req.Tools = append(req.Tools, ChatTool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return req, nil
}

// rawField returns a top-level field's raw JSON, nil when absent or null.
func rawField(body []byte, name string) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil
	}
	v := top[name]
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

var anthWire = wire{
	decode: DecodeAnthropicRequest,
	authOK: func(h http.Header, key string) bool { return h.Get("X-Api-Key") == key },
	authFail: func(h http.Header) string {
		if h.Get("Authorization") != "" && h.Get("X-Api-Key") == "" {
			return "invalid x-api-key (Authorization: Bearer is not how this API authenticates)"
		}
		return "invalid x-api-key"
	},
	writeErr: writeAnthError,
	overflow: func(w http.ResponseWriter) {
		writeAnthError(w, http.StatusBadRequest, "prompt is too long: 210000 tokens > 200000 maximum")
	},
}

func (s *Server) handleAnthropic(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Anthropic-Version") == "" {
		writeAnthError(w, http.StatusBadRequest, "anthropic-version: header is required")
		return
	}
	req, rep, seq, ok := s.dispatch(w, r, anthWire)
	if !ok {
		return
	}
	res := resolve(req, rep, "msg_modeltest_"+seq)
	thinking := req.Reasoning != nil && !strings.Contains(string(req.Reasoning), `"disabled"`)
	if !req.Stream {
		writeJSON(w, http.StatusOK, anthMessage(res, thinking))
		return
	}
	names, data := anthEvents(res, thinking)
	startSSE(w, r).events(res, names, data)
}

// anthErrorTypes are the error types the API sends for each status.
func anthErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func writeAnthError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("Request-Id", fmt.Sprintf("req_modeltest_%d", time.Now().UnixNano()))
	writeJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": anthErrorType(status), "message": msg},
	})
}

// anthUsage is the API's usage object: input_tokens excludes cache reads.
type anthUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

func (r reply) anthUsage() anthUsage {
	return anthUsage{
		InputTokens:          max(0, r.usage.PromptTokens-r.usage.PromptTokensDetails.CachedTokens),
		CacheReadInputTokens: r.usage.PromptTokensDetails.CachedTokens,
		OutputTokens:         r.usage.CompletionTokens,
	}
}

func (r reply) anthStop() string {
	switch r.finish {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "stop":
		return "end_turn"
	}
	return r.finish
}

func (r reply) signature() string {
	return "c2lnX21vZGVsdGVzdF8" + strings.TrimPrefix(r.id, "msg_modeltest_")
}

func (r reply) toolID(i int, tc ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("toolu_modeltest_%s_%d", strings.TrimPrefix(r.id, "msg_modeltest_"), i)
}

// anthMessage is the non-streamed answer.
func anthMessage(r reply, thinking bool) map[string]any {
	var content []any
	if thinking && r.Reasoning != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": r.Reasoning, "signature": r.signature()})
	}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, tc := range r.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": r.toolID(i, tc), "name": tc.Name, "input": json.RawMessage(tc.Arguments)})
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{
		"id": r.id, "type": "message", "role": "assistant", "model": r.model, "content": content,
		"stop_reason": r.anthStop(), "stop_sequence": nil, "usage": r.anthUsage(),
	}
}

// anthEvents renders a streamed reply as named events with their data.
func anthEvents(r reply, thinking bool) (names []string, data [][]byte) {
	add := func(name string, v any) {
		b, _ := json.Marshal(v) // plain maps and structs always marshal
		names = append(names, name)
		data = append(data, b)
	}
	u := r.anthUsage()
	start := u
	start.OutputTokens = 1
	add("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": r.id, "type": "message", "role": "assistant", "model": r.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	idx := 0
	if thinking && r.Reasoning != "" {
		add("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, p := range splitWords(r.Reasoning) {
			add("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "thinking_delta", "thinking": p}})
		}
		add("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
			"delta": map[string]any{"type": "signature_delta", "signature": r.signature()}})
		add("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	if r.Text != "" {
		add("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "text", "text": ""}})
		add("ping", map[string]any{"type": "ping"})
		for _, p := range splitWords(r.Text) {
			add("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "text_delta", "text": p}})
		}
		add("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for i, tc := range r.ToolCalls {
		add("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": r.toolID(i, tc), "name": tc.Name, "input": map[string]any{}}})
		for _, p := range splitArgs(tc.Arguments) {
			add("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		add("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	add("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": r.anthStop(), "stop_sequence": nil}, "usage": u})
	add("message_stop", map[string]any{"type": "message_stop"})
	return names, data
}
