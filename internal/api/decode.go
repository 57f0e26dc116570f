package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

// createRequest is the body of POST /v1/responses and POST /v1/tasks.
// Unknown fields (model, temperature, tools… sent by OpenAI clients) are
// accepted and ignored; known fields must have the right type.
type createRequest struct {
	Input               json.RawMessage `json:"input"`
	Instructions        *string         `json:"instructions"`
	PreviousResponseID  *string         `json:"previous_response_id"`
	Metadata            *metadata       `json:"metadata"`
	Stream              *bool           `json:"stream"`
	Store               *bool           `json:"store"`
	IdempotencyKey      *string         `json:"idempotency_key"`
	IdempotencyTerminal *bool           `json:"idempotency_terminal"`
}

// metadata is the subset of request metadata Delta acts on.
type metadata struct {
	Context         map[string]any `json:"context"`
	Profile         *string        `json:"profile"`
	ReasoningEffort *string        `json:"reasoning_effort"`
	AuthToken       *string        `json:"authToken"` // per-run MCP credential; never stored
	UserID          any            `json:"user_id"`
	TaskID          any            `json:"task_id"`
	// The keys governed memory reads back from the stored request: a value
	// of another type would be dropped there without a word (reflection
	// off, the lesson filed without its task type), so it is refused here.
	TaskType        *string `json:"task_type"`
	Reflect         *bool   `json:"reflect"`
	ReviewKind      *string `json:"review_kind"`
	WidenAuthorized *bool   `json:"widen_authorized"`
}

// decodeBody reads a JSON object body into v with a clear error for every
// way it can be wrong.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("could not read the request body")
	}
	return decodeJSONObject(body, v)
}

func decodeJSONObject(body []byte, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return badRequest("request body is empty: send a JSON object")
	}
	if trimmed[0] != '{' {
		return badRequest("request body must be a JSON object")
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "body"
			}
			return badRequest(fmt.Sprintf("field %s must be %s, not %s", field, jsonKind(te.Type.Kind().String()), te.Value))
		}
		return badRequest("request body is not valid JSON: " + err.Error())
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "ptr":
		return "a valid value"
	default:
		return "a " + goKind
	}
}

// inputMessages turns the Responses `input` (a string, or an array of
// message items) into user messages plus extra instructions from
// system/developer items.
func inputMessages(raw json.RawMessage) (msgs []model.Message, instructions string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", badRequest("field input is required: a string or an array of messages")
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "", badRequest("field input is not a valid string")
		}
		if strings.TrimSpace(s) == "" {
			return nil, "", badRequest("field input is empty")
		}
		return []model.Message{{Role: model.RoleUser, Content: s}}, "", nil
	}
	if raw[0] != '[' {
		return nil, "", badRequest("field input must be a string or an array of messages")
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, "", badRequest("field input must be an array of message objects {role, content}")
	}
	var sys []string
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return nil, "", badRequest(fmt.Sprintf("input[%d]: item type %q is not supported; send messages", i, it.Type))
		}
		text, err := contentText(it.Content)
		if err != nil {
			return nil, "", badRequest(fmt.Sprintf("input[%d].content: %s", i, err.Error()))
		}
		if strings.TrimSpace(text) == "" && (it.Role == "user" || it.Role == "system" || it.Role == "developer") {
			// The same rule as "input": "": a message with nothing in it
			// would cost a model call to ask for nothing.
			return nil, "", badRequest(fmt.Sprintf("input[%d].content is empty; give the message's text", i))
		}
		switch it.Role {
		case "user":
			msgs = append(msgs, model.Message{Role: model.RoleUser, Content: text})
		case "system", "developer":
			sys = append(sys, text)
		case "assistant":
			return nil, "", badRequest(fmt.Sprintf("input[%d]: assistant messages are not accepted; continue a conversation with previous_response_id", i))
		default:
			return nil, "", badRequest(fmt.Sprintf("input[%d].role must be user, system or developer", i))
		}
	}
	if len(msgs) == 0 {
		return nil, "", badRequest("field input has no user message")
	}
	return msgs, strings.Join(sys, "\n\n"), nil
}

// contentText accepts a string or an array of {type: input_text|text, text}.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", errors.New("is required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errors.New("is not a valid string")
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "input_text", "text", "output_text":
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		default:
			return "", fmt.Errorf("part type %q is not supported (send input_text)", p.Type)
		}
	}
	return b.String(), nil
}
