package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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

// request is the Messages body; encode.go writes it exactly as the SDK's
// MessageNewParams would be written.
type request struct {
	MaxTokens    int64
	Messages     []message
	Model        string
	OutputEffort string // output_config.effort; "" leaves output_config out
	System       []content
	Thinking     thinking
	ToolDefs     []byte // the tools, encoded (tool.appendJSON) and comma-separated
}

type message struct {
	Role    model.Role // user or assistant
	Content []content
}

// Content block kinds.
const (
	kindText             = "text"
	kindImage            = "image"
	kindToolUse          = "tool_use"
	kindToolResult       = "tool_result"
	kindThinking         = "thinking"
	kindRedactedThinking = "redacted_thinking"
)

// content is one content block; kind says which of the other fields it
// sends.
type content struct {
	kind      string
	text      string          // text and thinking; a tool_result's text content ("" = none)
	id        string          // tool_use id, tool_result tool_use_id
	name      string          // tool_use
	input     json.RawMessage // tool_use: a valid JSON object
	signature string          // thinking
	data      string          // redacted_thinking; an image's base64 bytes
	mediaType string          // image
	cache     bool            // cache_control: ephemeral (text and tool_result only)
}

// thinking is the thinking config; kind "" leaves it out.
type thinking struct {
	kind   string // enabled | adaptive | disabled
	budget int64  // enabled only
}

// tool is one tool definition. The schema's top level is split as the
// SDK's ToolInputSchemaParam splits it: properties and required are
// fields, type is always "object", every other key is an extra field.
type tool struct {
	name        string
	description string
	properties  json.RawMessage
	required    []string // nil leaves required out
	extras      []schemaField
}

type schemaField struct {
	key   string
	value json.RawMessage
}

// block is one content block being assembled, with what the cache
// placement needs to know about it.
type block struct {
	param    content
	eligible bool // a user text or tool_result block may carry a breakpoint
}

type turn struct {
	role   model.Role // user or assistant
	blocks []block
}

// build maps a neutral request onto the Messages body; defs is the
// client's memo of tool definitions (nil for none).
func build(req model.Request, maxTokens int64, defs *model.ToolDefs) (request, error) {
	if req.Model == "" {
		return request{}, fmt.Errorf("build messages request: model is required")
	}
	p := request{Model: req.Model, MaxTokens: maxTokens}
	for _, s := range req.System {
		if s != "" {
			p.System = append(p.System, content{kind: kindText, text: s})
		}
	}
	turns, err := buildTurns(req.Messages)
	if err != nil {
		return request{}, err
	}
	if len(turns) == 0 {
		return request{}, fmt.Errorf("build messages request: no messages")
	}
	if turns[0].role != model.RoleUser {
		return request{}, fmt.Errorf("build messages request: the first message must be the user's, not %s", turns[0].role)
	}
	placeBreakpoints(&p, turns)
	p.Messages = make([]message, len(turns))
	for i, t := range turns {
		blocks := make([]content, len(t.blocks))
		for j, b := range t.blocks {
			blocks[j] = b.param
		}
		p.Messages[i] = message{Role: t.role, Content: blocks}
	}
	if p.ToolDefs, err = defs.Join(req.Tools, 0, appendTool); err != nil {
		return request{}, fmt.Errorf("build messages request: %w", err)
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
			hasTool = hasTool || b.param.kind == kindToolUse
		}
		first := turns[i].blocks[0].param.kind
		return hasTool && first != kindThinking && first != kindRedactedThinking
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
				add(model.RoleUser, block{param: content{kind: kindText, text: m.Content}, eligible: true})
			}
			if m.Role == model.RoleUser {
				// Images follow their message's text. They never carry a
				// breakpoint: they ride at the tail, after the per-turn
				// blocks, where a cache write would never be read.
				for _, im := range m.Images {
					add(model.RoleUser, block{param: content{kind: kindImage, mediaType: im.MIME, data: base64.StdEncoding.EncodeToString(im.Data)}})
				}
			}
		case model.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("build messages request: message %d: tool message without tool_call_id", i)
			}
			add(model.RoleUser, block{param: content{kind: kindToolResult, id: m.ToolCallID, text: m.Content}, eligible: true})
		case model.RoleAssistant:
			for _, th := range model.StoredExtra[extra](m.Extra, extraKey).Thinking {
				if b, ok := thinkingBlock(th); ok {
					add(model.RoleAssistant, block{param: b})
				}
			}
			if m.Content != "" {
				add(model.RoleAssistant, block{param: content{kind: kindText, text: m.Content}})
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("build messages request: message %d: tool call without id or name", i)
				}
				add(model.RoleAssistant, block{param: content{kind: kindToolUse, id: tc.ID, name: tc.Name, input: toolInput(tc.Arguments)}})
			}
		default:
			return nil, fmt.Errorf("build messages request: message %d: unknown role %q", i, m.Role)
		}
	}
	return turns, nil
}

// thinkingBlock rebuilds a recorded thinking or redacted_thinking block.
func thinkingBlock(raw json.RawMessage) (content, bool) {
	var b struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return content{}, false
	}
	switch {
	case b.Type == kindThinking && b.Signature != "":
		return content{kind: kindThinking, signature: b.Signature, text: b.Thinking}, true
	case b.Type == kindRedactedThinking && b.Data != "":
		return content{kind: kindRedactedThinking, data: b.Data}, true
	}
	return content{}, false
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

// placeBreakpoints sets the cache_control markers.
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
func placeBreakpoints(p *request, turns []turn) {
	if n := len(p.System); n > 0 {
		p.System[n-1].cache = true
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
	if k := b.param.kind; k == kindText || k == kindToolResult {
		b.param.cache = true
	}
}

// appendTool appends t's definition as encode.go writes it.
func appendTool(dst []byte, t model.ToolSpec) ([]byte, error) {
	tl, err := buildTool(t)
	if err != nil {
		return dst, err
	}
	return tl.appendJSON(dst)
}

func buildTool(t model.ToolSpec) (tool, error) {
	members, err := model.ToolMembers(t)
	if err != nil {
		return tool{}, err
	}
	// Raw values keep the schema byte for byte below the top level;
	// "type" is always "object" on this wire. The SDK writes the extra
	// fields in map order, a new order every call; sorted (as members
	// come), a tool's bytes stay the same across calls, which is what the
	// prompt cache keys on.
	tl := tool{name: t.Name, description: t.Description, properties: json.RawMessage(`{}`)}
	for _, m := range members {
		switch m.Name {
		case "type":
		case "properties":
			tl.properties = m.Value
		case "required":
			if err := json.Unmarshal(m.Value, &tl.required); err != nil {
				return tool{}, fmt.Errorf("required must be an array of names: %w", err)
			}
		default:
			tl.extras = append(tl.extras, schemaField{key: m.Name, value: m.Value})
		}
	}
	return tl, nil
}

// Thinking budgets for Claude 4.5 and earlier.
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
var adaptiveHeadroom = map[string]int64{
	"low":    4096,
	"medium": 8192,
	"high":   16384,
	"xhigh":  32768,
	"max":    32768,
}

// applyEffort renders a reasoning effort (already trimmed and lowercased
// by config, normalised again here).
//
// Claude 4.6+, every Claude 5 and any model whose version cannot be read
// (newer families) get thinking {type: adaptive} with output_config.effort:
// none and minimal become low (adaptive models cannot turn thinking off),
// an unknown name becomes high; max_tokens grows by the effort's headroom.
// Claude 4.5 and earlier get the budget wire: none disables thinking, the
// other names map to budget_tokens, and max_tokens grows by the budget so
// it stays above it.
func applyEffort(p *request, modelID, effort string) {
	effort = strings.ToLower(strings.TrimSpace(effort))
	if effort == "" {
		return
	}
	if adaptive(modelID) {
		e := effort
		switch effort {
		case "none", "minimal":
			e = "low"
		}
		if _, ok := adaptiveHeadroom[e]; !ok {
			e = "high"
		}
		p.Thinking = thinking{kind: "adaptive"}
		p.OutputEffort = e
		p.MaxTokens += adaptiveHeadroom[e]
		return
	}
	if effort == "none" {
		p.Thinking = thinking{kind: "disabled"}
		return
	}
	budget, ok := budgets[effort]
	if !ok {
		budget = unknownBudget
	}
	p.Thinking = thinking{kind: "enabled", budget: budget}
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
