package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	sdk "github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deltaharness/delta/internal/model"
)

// extraKey is this wire's key inside model.Message.Extra.
const extraKey = "responses"

// extra is what the openai.com lane keeps on an assistant message: its
// reasoning items exactly as the server sent them (encrypted_content
// included) and the message phase.
type extra struct {
	Items []json.RawMessage `json:"items,omitempty"`
	Phase string            `json:"phase,omitempty"`
}

// lane is what the host allows beyond the plain surface.
type lane struct {
	native    bool   // an api.openai.com host: reasoning carry, phase, verbosity, summaries
	verbosity string // text.verbosity, native only
	summary   string // reasoning.summary, native only
}

// buildParams maps a neutral request onto the Responses body. System
// blocks become instructions (joined by blank lines); the conversation is
// sent in full every call (store:false), never by previous_response_id.
func buildParams(req model.Request, ln lane) (sdk.ResponseNewParams, error) {
	if req.Model == "" {
		return sdk.ResponseNewParams{}, fmt.Errorf("build responses request: model is required")
	}
	p := sdk.ResponseNewParams{Model: shared.ResponsesModel(req.Model), Store: param.NewOpt(false)}
	var sys []string
	for _, s := range req.System {
		if s != "" {
			sys = append(sys, s)
		}
	}
	if len(sys) > 0 {
		p.Instructions = param.NewOpt(strings.Join(sys, "\n\n"))
	}
	var items sdk.ResponseInputParam
	for i, m := range req.Messages {
		switch m.Role {
		case model.RoleUser:
			if len(m.Images) > 0 {
				items = append(items, userWithImages(m))
				continue
			}
			items = append(items, sdk.ResponseInputItemParamOfMessage(m.Content, sdk.EasyInputMessageRoleUser))
		case model.RoleSystem:
			items = append(items, sdk.ResponseInputItemParamOfMessage(m.Content, sdk.EasyInputMessageRoleSystem))
		case model.RoleTool:
			if m.ToolCallID == "" {
				return sdk.ResponseNewParams{}, fmt.Errorf("build responses request: message %d: tool message without tool_call_id", i)
			}
			out := sdk.ResponseInputItemParamOfFunctionCallOutput(m.Content)
			out.OfFunctionCallOutput.CallID = param.NewOpt(m.ToolCallID)
			items = append(items, out)
		case model.RoleAssistant:
			var ex extra
			if ln.native {
				if raw := wireExtra(m.Extra); raw != nil {
					_ = json.Unmarshal(raw, &ex) // a damaged record only loses the replay
				}
				for _, it := range ex.Items {
					if json.Valid(it) {
						items = append(items, param.Override[sdk.ResponseInputItemUnionParam](it))
					}
				}
			}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				msg := sdk.ResponseInputItemParamOfMessage(m.Content, sdk.EasyInputMessageRoleAssistant)
				if ex.Phase != "" {
					msg.OfMessage.Phase = sdk.EasyInputMessagePhase(ex.Phase)
				}
				items = append(items, msg)
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return sdk.ResponseNewParams{}, fmt.Errorf("build responses request: message %d: tool call without id or name", i)
				}
				items = append(items, sdk.ResponseInputItemParamOfFunctionCall(argumentsText(tc.Arguments), tc.ID, tc.Name))
			}
		default:
			return sdk.ResponseNewParams{}, fmt.Errorf("build responses request: message %d: unknown role %q", i, m.Role)
		}
	}
	if len(items) == 0 {
		return sdk.ResponseNewParams{}, fmt.Errorf("build responses request: no messages")
	}
	p.Input = sdk.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range req.Tools {
		tool, err := buildTool(t)
		if err != nil {
			return sdk.ResponseNewParams{}, fmt.Errorf("build responses request: tool %q: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, tool)
	}
	effort := strings.ToLower(strings.TrimSpace(req.ReasoningEffort))
	if effort != "" {
		p.Reasoning.Effort = shared.ReasoningEffort(effort)
	}
	if ln.native {
		if ln.summary != "" {
			p.Reasoning.Summary = shared.ReasoningSummary(ln.summary)
		}
		if ln.verbosity != "" {
			p.Text.Verbosity = sdk.ResponseTextConfigVerbosity(ln.verbosity)
		}
		if effort != "" && effort != "none" || reasoningModel(req.Model) {
			p.Include = []sdk.ResponseIncludable{sdk.ResponseIncludableReasoningEncryptedContent}
		}
		if explicitCacheModel(req.Model) {
			placeCacheBreakpoints(&p, items)
		}
	}
	return p, nil
}

// userWithImages renders a user message that carries images as a content
// list: its text as input_text, then one input_image per image with the
// bytes in a data: URL and detail "auto" (the API requires a detail).
func userWithImages(m model.Message) sdk.ResponseInputItemUnionParam {
	parts := make(sdk.ResponseInputMessageContentListParam, 0, len(m.Images)+1)
	if m.Content != "" {
		parts = append(parts, sdk.ResponseInputContentUnionParam{OfInputText: &sdk.ResponseInputTextParam{Text: m.Content}})
	}
	for _, im := range m.Images {
		img := sdk.ResponseInputImageParam{Detail: sdk.ResponseInputImageDetailAuto, ImageURL: param.NewOpt(im.DataURL())}
		parts = append(parts, sdk.ResponseInputContentUnionParam{OfInputImage: &img})
	}
	return sdk.ResponseInputItemParamOfMessage(parts, sdk.EasyInputMessageRoleUser)
}

// reasoningModel: OpenAI models that return reasoning items (and refuse
// include=reasoning.encrypted_content when they do not).
func reasoningModel(id string) bool {
	id = strings.TrimPrefix(strings.ToLower(id), "openai/")
	for _, p := range []string{"gpt-5", "o1", "o3", "o4", "codex"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// wireExtra returns this wire's part of a message's Extra, or nil.
func wireExtra(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(raw, &all) != nil {
		return nil
	}
	return all[extraKey]
}

// argumentsText is the arguments string echoed back; blank becomes "{}".
func argumentsText(raw json.RawMessage) string {
	if strings.TrimSpace(string(raw)) == "" {
		return "{}"
	}
	return string(raw)
}

func buildTool(t model.ToolSpec) (sdk.ToolUnionParam, error) {
	if t.Name == "" {
		return sdk.ToolUnionParam{}, fmt.Errorf("tool name is required")
	}
	params := map[string]any{"type": json.RawMessage(`"object"`), "properties": json.RawMessage(`{}`)}
	if len(t.Parameters) > 0 {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(t.Parameters, &top); err != nil {
			return sdk.ToolUnionParam{}, fmt.Errorf("parameters must be a JSON object: %w", err)
		}
		if top == nil {
			return sdk.ToolUnionParam{}, fmt.Errorf("parameters must be a JSON object, not null")
		}
		params = make(map[string]any, len(top))
		for k, v := range top {
			params[k] = v
		}
	}
	// strict:false: Delta's schemas mark optional fields optional, which
	// strict mode forbids.
	fn := sdk.FunctionToolParam{Name: t.Name, Parameters: params, Strict: param.NewOpt(false)}
	if t.Description != "" {
		fn.Description = param.NewOpt(t.Description)
	}
	return sdk.ToolUnionParam{OfFunction: &fn}, nil
}
