package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/deltaharness/delta/internal/model"
)

// lookback is how many content blocks before a cache breakpoint Anthropic
// searches for an earlier cache entry.
const lookback = 20

// maxRolling is the number of rolling breakpoints: the API allows four
// cache_control markers per request and the system prefix takes one.
const maxRolling = 3

// extraKey is this wire's key inside model.Message.Extra.
const extraKey = "anthropic"

// extra is what this wire keeps on an assistant message: the thinking
// blocks, which Anthropic requires back verbatim (signature included) on
// the turn after a tool_use when thinking is on.
type extra struct {
	Thinking []json.RawMessage `json:"thinking,omitempty"`
}

// block is one content block being assembled, with what the cache
// placement needs to know about it.
type block struct {
	param    sdk.ContentBlockParamUnion
	eligible bool // a user text or tool_result block may carry a breakpoint
}

type turn struct {
	role   model.Role // user or assistant
	blocks []block
}

// buildParams maps a neutral request onto the Messages body.
func buildParams(req model.Request, maxTokens int64) (sdk.MessageNewParams, error) {
	if req.Model == "" {
		return sdk.MessageNewParams{}, fmt.Errorf("build messages request: model is required")
	}
	p := sdk.MessageNewParams{Model: sdk.Model(req.Model), MaxTokens: maxTokens}
	for _, s := range req.System {
		if s != "" {
			p.System = append(p.System, sdk.TextBlockParam{Text: s})
		}
	}
	turns, err := buildTurns(req.Messages)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	if len(turns) == 0 {
		return sdk.MessageNewParams{}, fmt.Errorf("build messages request: no messages")
	}
	if turns[0].role != model.RoleUser {
		return sdk.MessageNewParams{}, fmt.Errorf("build messages request: the first message must be the user's, not %s", turns[0].role)
	}
	placeBreakpoints(&p, turns)
	for _, t := range turns {
		blocks := make([]sdk.ContentBlockParamUnion, len(t.blocks))
		for i, b := range t.blocks {
			blocks[i] = b.param
		}
		if t.role == model.RoleAssistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		}
	}
	for _, t := range req.Tools {
		tool, err := buildTool(t)
		if err != nil {
			return sdk.MessageNewParams{}, fmt.Errorf("build messages request: tool %q: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, tool)
	}
	if !loopMissingThinking(turns) {
		applyEffort(&p, req.Model, req.ReasoningEffort)
	}
	return p, nil
}

// loopMissingThinking reports whether the request continues a tool loop
// whose assistant turn carries no thinking block: history written by
// another wire, or by this one with thinking off. With thinking on, the
// API refuses such a request ("a final assistant message must start with
// a thinking block"), so the effort is dropped for this one call rather
// than failing the turn; the next assistant turn brings its own blocks.
func loopMissingThinking(turns []turn) bool {
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].role != model.RoleAssistant {
			continue
		}
		hasTool := false
		for _, b := range turns[i].blocks {
			hasTool = hasTool || b.param.OfToolUse != nil
		}
		first := turns[i].blocks[0].param
		return hasTool && first.OfThinking == nil && first.OfRedactedThinking == nil
	}
	return false
}

// buildTurns folds the neutral messages into alternating user and
// assistant turns. Tool results become tool_result blocks of a user turn
// (placed first, as the API requires after a tool_use turn); consecutive
// user-side messages share one turn. A system message inside the history
// becomes a user text block: the Messages API has no system role there.
func buildTurns(msgs []model.Message) ([]turn, error) {
	var turns []turn
	add := func(role model.Role, b block) {
		if n := len(turns); n > 0 && turns[n-1].role == role {
			turns[n-1].blocks = append(turns[n-1].blocks, b)
			return
		}
		turns = append(turns, turn{role: role, blocks: []block{b}})
	}
	for i, m := range msgs {
		switch m.Role {
		case model.RoleUser, model.RoleSystem:
			if m.Content != "" { // the API refuses empty text blocks
				add(model.RoleUser, block{param: sdk.NewTextBlock(m.Content), eligible: true})
			}
			if m.Role == model.RoleUser {
				// Images follow their message's text. They never carry a
				// breakpoint: they ride at the tail, after the per-turn
				// blocks, where a cache write would never be read.
				for _, im := range m.Images {
					add(model.RoleUser, block{param: sdk.NewImageBlockBase64(im.MIME, base64.StdEncoding.EncodeToString(im.Data))})
				}
			}
		case model.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("build messages request: message %d: tool message without tool_call_id", i)
			}
			r := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
			}
			add(model.RoleUser, block{param: sdk.ContentBlockParamUnion{OfToolResult: &r}, eligible: true})
		case model.RoleAssistant:
			var ex extra
			if raw := wireExtra(m.Extra); raw != nil {
				_ = json.Unmarshal(raw, &ex) // a damaged record only loses the replay
			}
			for _, th := range ex.Thinking {
				if b, ok := thinkingBlock(th); ok {
					add(model.RoleAssistant, block{param: b})
				}
			}
			if m.Content != "" {
				add(model.RoleAssistant, block{param: sdk.NewTextBlock(m.Content)})
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("build messages request: message %d: tool call without id or name", i)
				}
				add(model.RoleAssistant, block{param: sdk.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name)})
			}
		default:
			return nil, fmt.Errorf("build messages request: message %d: unknown role %q", i, m.Role)
		}
	}
	return turns, nil
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

// thinkingBlock rebuilds a recorded thinking or redacted_thinking block.
func thinkingBlock(raw json.RawMessage) (sdk.ContentBlockParamUnion, bool) {
	var b struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return sdk.ContentBlockParamUnion{}, false
	}
	switch {
	case b.Type == "thinking" && b.Signature != "":
		return sdk.NewThinkingBlock(b.Signature, b.Thinking), true
	case b.Type == "redacted_thinking" && b.Data != "":
		return sdk.NewRedactedThinkingBlock(b.Data), true
	}
	return sdk.ContentBlockParamUnion{}, false
}

// toolInput is the tool_use input echoed back: the model's own JSON when
// it is an object, else {} (the API accepts only objects; a call whose
// arguments did not parse was already answered with an error result).
func toolInput(raw json.RawMessage) json.RawMessage {
	t := strings.TrimSpace(string(raw))
	if strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return json.RawMessage(`{}`)
}

// placeBreakpoints sets the cache_control markers (D-MOD-12).
//
// Blocks are numbered in wire order across all messages (system and tools
// not counted). Eligible blocks are user text and tool_result blocks.
//
//  1. The last system block carries one breakpoint: tools and the whole
//     system spine are the stable prefix.
//  2. Rolling breakpoint r1 is the last eligible block of the request.
//  3. Each next breakpoint chains back from the previous one, r: it is the
//     earliest eligible block in [r-20, r-1], so its 20-block lookback
//     window touches r's and the two cover contiguous blocks; when that
//     range holds no eligible block (a burst of tool_use blocks), it is the
//     latest eligible block before r-20, which is where the previous
//     request's cache write sits.
//  4. Chaining stops after three rolling breakpoints or once a window
//     reaches the first block.
//
// So a turn of N parallel calls (≈2N blocks) still reaches the previous
// turn's write: with 12 calls r1 is the tail and r2 the first tool_result.
func placeBreakpoints(p *sdk.MessageNewParams, turns []turn) {
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = sdk.CacheControlEphemeralParam{}
		p.System[n-1].CacheControl.Type = "ephemeral"
	}
	var flat []*block
	for ti := range turns {
		for bi := range turns[ti].blocks {
			flat = append(flat, &turns[ti].blocks[bi])
		}
	}
	r := -1
	for i := len(flat) - 1; i >= 0; i-- {
		if flat[i].eligible {
			r = i
			break
		}
	}
	for k := 0; k < maxRolling && r >= 0; k++ {
		markCache(flat[r])
		if r-lookback+1 <= 0 {
			return
		}
		next := -1
		for i := max(0, r-lookback); i < r; i++ {
			if flat[i].eligible {
				next = i
				break
			}
		}
		if next < 0 {
			for i := r - lookback - 1; i >= 0; i-- {
				if flat[i].eligible {
					next = i
					break
				}
			}
		}
		r = next
	}
}

func markCache(b *block) {
	cc := sdk.CacheControlEphemeralParam{Type: "ephemeral"}
	switch {
	case b.param.OfText != nil:
		b.param.OfText.CacheControl = cc
	case b.param.OfToolResult != nil:
		b.param.OfToolResult.CacheControl = cc
	}
}

func buildTool(t model.ToolSpec) (sdk.ToolUnionParam, error) {
	if t.Name == "" {
		return sdk.ToolUnionParam{}, fmt.Errorf("tool name is required")
	}
	schema := sdk.ToolInputSchemaParam{Properties: json.RawMessage(`{}`)}
	if len(t.Parameters) > 0 {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(t.Parameters, &top); err != nil {
			return sdk.ToolUnionParam{}, fmt.Errorf("parameters must be a JSON object: %w", err)
		}
		if top == nil {
			return sdk.ToolUnionParam{}, fmt.Errorf("parameters must be a JSON object, not null")
		}
		// Raw values keep the schema byte for byte below the top level;
		// "type" is always "object" on this wire.
		for k, v := range top {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				if err := json.Unmarshal(v, &schema.Required); err != nil {
					return sdk.ToolUnionParam{}, fmt.Errorf("required must be an array of names: %w", err)
				}
			default:
				if schema.ExtraFields == nil {
					schema.ExtraFields = map[string]any{}
				}
				schema.ExtraFields[k] = v
			}
		}
	}
	tool := sdk.ToolParam{Name: t.Name, InputSchema: schema}
	if t.Description != "" {
		tool.Description = sdk.String(t.Description)
	}
	return sdk.ToolUnionParam{OfTool: &tool}, nil
}

// Thinking budgets for Claude 4.5 and earlier (D-MOD-21).
var budgets = map[string]int64{
	"minimal": 1024,
	"low":     4096,
	"medium":  8192,
	"high":    16384,
	"xhigh":   32768,
}

// unknownBudget is the budget for an effort name the table lacks.
const unknownBudget = 16384

// adaptiveHeadroom is added to max_tokens on the adaptive wire so thinking
// does not starve the answer.
var adaptiveHeadroom = map[sdk.OutputConfigEffort]int64{
	sdk.OutputConfigEffortLow:    4096,
	sdk.OutputConfigEffortMedium: 8192,
	sdk.OutputConfigEffortHigh:   16384,
	sdk.OutputConfigEffortXhigh:  32768,
	sdk.OutputConfigEffortMax:    32768,
}

// applyEffort renders a reasoning effort (already trimmed and lowercased
// by config, normalised again here) per D-MOD-21.
//
// Claude 4.6+, every Claude 5 and any model whose version cannot be read
// (newer families) get thinking {type: adaptive} with output_config.effort:
// none and minimal become low (adaptive models cannot turn thinking off),
// an unknown name becomes high; max_tokens grows by the effort's headroom.
// Claude 4.5 and earlier get the budget wire: none disables thinking, the
// other names map to budget_tokens, and max_tokens grows by the budget so
// it stays above it.
func applyEffort(p *sdk.MessageNewParams, modelID, effort string) {
	effort = strings.ToLower(strings.TrimSpace(effort))
	if effort == "" {
		return
	}
	if adaptive(modelID) {
		e := sdk.OutputConfigEffort(effort)
		switch effort {
		case "none", "minimal":
			e = sdk.OutputConfigEffortLow
		}
		if _, ok := adaptiveHeadroom[e]; !ok {
			e = sdk.OutputConfigEffortHigh
		}
		p.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{Type: "adaptive"}}
		p.OutputConfig.Effort = e
		p.MaxTokens += adaptiveHeadroom[e]
		return
	}
	if effort == "none" {
		p.Thinking = sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{Type: "disabled"}}
		return
	}
	budget, ok := budgets[effort]
	if !ok {
		budget = unknownBudget
	}
	p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{Type: "enabled", BudgetTokens: budget}}
	p.MaxTokens += budget
}

// adaptive reports whether a model id names Claude 4.6 or later. It reads
// the first numeric segments after "claude-" (dots or dashes), ignoring
// 8-digit dates: claude-opus-4-6 → 4.6, claude-3-7-sonnet-20250219 → 3.7,
// anthropic/claude-sonnet-4.5 → 4.5, claude-sonnet-4-20250514 → 4.0.
func adaptive(modelID string) bool {
	id := strings.ToLower(modelID)
	i := strings.Index(id, "claude-")
	if i < 0 {
		return true
	}
	var nums []int
	for _, seg := range strings.FieldsFunc(id[i+len("claude-"):], func(r rune) bool { return r == '-' || r == '.' || r == '@' }) {
		n, err := strconv.Atoi(seg)
		if err != nil || len(seg) >= 8 {
			if len(nums) > 0 {
				break
			}
			continue
		}
		nums = append(nums, n)
		if len(nums) == 2 {
			break
		}
	}
	switch {
	case len(nums) == 0:
		return true
	case nums[0] != 4:
		return nums[0] > 4
	case len(nums) == 1:
		return false
	default:
		return nums[1] >= 6
	}
}
