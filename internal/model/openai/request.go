package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deltaharness/delta/internal/model"
)

// emptySchema is sent for a tool that declares no parameters: some
// endpoints refuse a function without a parameters object.
var emptySchema = sdk.FunctionParameters{"type": json.RawMessage(`"object"`), "properties": json.RawMessage(`{}`)}

// buildParams maps a neutral request onto the Chat Completions body.
//
// System blocks become one system message each, in order: keeping them
// apart leaves each block's bytes untouched, which is what prefix caches
// key on. openRouter selects the reasoning wire (D-MOD-20).
func buildParams(req model.Request, openRouter bool) (sdk.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return sdk.ChatCompletionNewParams{}, fmt.Errorf("build chat request: model is required")
	}
	p := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	for _, block := range req.System {
		if block == "" {
			continue
		}
		p.Messages = append(p.Messages, sdk.SystemMessage(block))
	}
	for i, m := range req.Messages {
		msg, err := buildMessage(m)
		if err != nil {
			return sdk.ChatCompletionNewParams{}, fmt.Errorf("build chat request: message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, msg)
	}
	if len(p.Messages) == 0 {
		return sdk.ChatCompletionNewParams{}, fmt.Errorf("build chat request: no messages")
	}
	for _, t := range req.Tools {
		tool, err := buildTool(t)
		if err != nil {
			return sdk.ChatCompletionNewParams{}, fmt.Errorf("build chat request: tool %q: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, tool)
	}
	if effort := strings.ToLower(strings.TrimSpace(req.ReasoningEffort)); effort != "" {
		if openRouter {
			p.SetExtraFields(map[string]any{"reasoning": map[string]string{"effort": effort}})
		} else {
			p.ReasoningEffort = shared.ReasoningEffort(effort)
		}
	}
	return p, nil
}

func buildMessage(m model.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case model.RoleSystem:
		return sdk.SystemMessage(m.Content), nil
	case model.RoleUser:
		if len(m.Images) > 0 {
			return userWithImages(m), nil
		}
		return sdk.UserMessage(m.Content), nil
	case model.RoleTool:
		if m.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool message without tool_call_id")
		}
		return sdk.ToolMessage(m.Content, m.ToolCallID), nil
	case model.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: argumentsText(tc.Arguments),
					},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// userWithImages renders a user message that carries images as content
// parts: its text first, then one image_url part per image with the bytes
// in a data: URL (the endpoint never fetches anything).
func userWithImages(m model.Message) sdk.ChatCompletionMessageParamUnion {
	parts := make([]sdk.ChatCompletionContentPartUnionParam, 0, len(m.Images)+1)
	if m.Content != "" {
		parts = append(parts, sdk.TextContentPart(m.Content))
	}
	for _, im := range m.Images {
		parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: im.DataURL()}))
	}
	return sdk.UserMessage(parts)
}

// argumentsText is the arguments string echoed back to the model. Blank
// arguments become "{}" because strict endpoints reject an empty string.
func argumentsText(raw json.RawMessage) string {
	if strings.TrimSpace(string(raw)) == "" {
		return "{}"
	}
	return string(raw)
}

func buildTool(t model.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	if t.Name == "" {
		return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("tool name is required")
	}
	fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: emptySchema}
	if t.Description != "" {
		fn.Description = param.NewOpt(t.Description)
	}
	if len(t.Parameters) > 0 {
		// Keep each top-level value as raw JSON: the schema reaches the wire
		// byte for byte below the top level (numbers, nested key order), and
		// the top level is sorted, so a tool's bytes are stable across calls.
		var top map[string]json.RawMessage
		if err := json.Unmarshal(t.Parameters, &top); err != nil {
			return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("parameters must be a JSON object: %w", err)
		}
		if top == nil {
			return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("parameters must be a JSON object, not null")
		}
		params := make(sdk.FunctionParameters, len(top))
		for k, v := range top {
			params[k] = v
		}
		fn.Parameters = params
	}
	return sdk.ChatCompletionFunctionTool(fn), nil
}
