package scripted

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// ChatRequest is one decoded Chat Completions request as the fake received it.
type ChatRequest struct {
	Model    string
	Messages []ChatMessage
	Tools    []ChatTool
	Stream   bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// ReasoningEffort is the top-level reasoning_effort field (direct OpenAI style).
	ReasoningEffort string
	// Reasoning is the raw `reasoning` object (OpenRouter style), nil when absent.
	Reasoning json.RawMessage
	// Path is the URL path the request was sent to.
	Path string
	// Header holds the request headers, Authorization included.
	Header http.Header
	// Raw is the request body exactly as sent.
	Raw json.RawMessage
}

// ChatMessage is one entry of the request's messages array. Content arrays
// of text parts are joined into Content; image parts land in Images.
type ChatMessage struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
	// Images are the image parts of a user message (images.go), in order;
	// nil for a text-only message.
	Images []ChatImage
}

// ChatTool is one advertised function tool.
type ChatTool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is one function call, in a request's assistant message or in a Reply.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text, sent verbatim
}

// HasTool reports whether the request advertises a function tool named name.
func (r ChatRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// LastMessage returns the final message, or a zero message for an empty conversation.
func (r ChatRequest) LastMessage() ChatMessage {
	if len(r.Messages) == 0 {
		return ChatMessage{}
	}
	return r.Messages[len(r.Messages)-1]
}

// wireRequest mirrors the JSON body. Content is raw because it may be a
// string, an array of parts, or null.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		Name       string          `json:"name"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ReasoningEffort string          `json:"reasoning_effort"`
	Reasoning       json.RawMessage `json:"reasoning"`
}

// DecodeRequest parses a Chat Completions request body. It checks only what
// a real endpoint would refuse outright: malformed JSON, a missing model or
// messages, an unknown role.
func DecodeRequest(body []byte) (ChatRequest, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return ChatRequest{}, fmt.Errorf("decode chat request: %w", err)
	}
	if w.Model == "" {
		return ChatRequest{}, errors.New("decode chat request: model is required")
	}
	if len(w.Messages) == 0 {
		return ChatRequest{}, errors.New("decode chat request: messages must not be empty")
	}
	req := ChatRequest{
		Model:           w.Model,
		Stream:          w.Stream,
		IncludeUsage:    w.StreamOptions != nil && w.StreamOptions.IncludeUsage,
		ReasoningEffort: w.ReasoningEffort,
		Raw:             json.RawMessage(append([]byte(nil), body...)),
	}
	if len(w.Reasoning) > 0 && string(w.Reasoning) != "null" {
		req.Reasoning = w.Reasoning
	}
	for i, m := range w.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return ChatRequest{}, fmt.Errorf("decode chat request: messages[%d]: unknown role %q", i, m.Role)
		}
		text, images, err := contentParts(m.Content)
		if err != nil {
			return ChatRequest{}, fmt.Errorf("decode chat request: messages[%d]: %w", i, err)
		}
		if len(images) > 0 && m.Role != "user" {
			return ChatRequest{}, fmt.Errorf("decode chat request: messages[%d]: image parts are only valid in user messages", i)
		}
		cm := ChatMessage{Role: m.Role, Content: text, ToolCallID: m.ToolCallID, Name: m.Name, Images: images}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, cm)
	}
	for i, t := range w.Tools {
		if t.Function.Name == "" {
			return ChatRequest{}, fmt.Errorf("decode chat request: tools[%d]: function name is required", i)
		}
		req.Tools = append(req.Tools, ChatTool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return req, nil
}

// contentText flattens a message content to its text: a string, null, or
// an array of parts whose text fields are joined (image parts are checked
// by contentParts and dropped).
func contentText(raw json.RawMessage) (string, error) {
	text, _, err := contentParts(raw)
	return text, err
}
