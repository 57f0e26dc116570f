package responses

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	sdk "github.com/openai/openai-go/v3/responses"
)

// explicitCacheModel reports whether a model takes explicit prompt-cache
// breakpoints (GPT-5.6 and later, D-MOD-14).
func explicitCacheModel(id string) bool {
	id = strings.TrimPrefix(strings.ToLower(id), "openai/")
	m := gptVersion.FindStringSubmatch(id)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor := 0
	if m[2] != "" {
		minor, _ = strconv.Atoi(m[2])
	}
	return major > 5 || major == 5 && minor >= 6
}

var gptVersion = regexp.MustCompile(`^gpt-(\d+)(?:\.(\d+))?`)

// placeCacheBreakpoints turns on explicit caching with one stable and two
// rolling breakpoints (D-MOD-14):
//
//   - stable: the end of the first user message, so instructions + tools +
//     the opening request are one reusable prefix across the whole run;
//   - rolling: the last two conversation items (user messages or tool
//     outputs) before the per-turn blocks at the tail. Those blocks
//     (opening "<delta:") change every turn, so a breakpoint on them would be
//     written and never read; the item just before them is where the next
//     call's prompt stops matching this one's.
//
// OpenAI writes at most four explicit breakpoints; this places three.
func placeCacheBreakpoints(p *sdk.ResponseNewParams, items sdk.ResponseInputParam) {
	var candidates []int
	first := -1
	for i, it := range items {
		switch {
		case it.OfMessage != nil && it.OfMessage.Role == sdk.EasyInputMessageRoleUser:
			if !it.OfMessage.Content.OfString.Valid() {
				// A content list is a message with images (userWithImages),
				// attached after the per-turn blocks: never a breakpoint.
				continue
			}
			text := it.OfMessage.Content.OfString.Value
			if strings.HasPrefix(strings.TrimSpace(text), "<delta:") {
				continue
			}
			if first < 0 {
				first = i
			}
			candidates = append(candidates, i)
		case it.OfFunctionCallOutput != nil:
			candidates = append(candidates, i)
		}
	}
	if first < 0 {
		return
	}
	marks := map[int]bool{first: true}
	for k := len(candidates) - 1; k >= 0 && len(marks) < 3; k-- {
		marks[candidates[k]] = true
	}
	for i := range marks {
		markBreakpoint(&items[i])
	}
	p.PromptCacheOptions.Mode = "explicit"
}

// explicitMark is a breakpoint with the request's TTL. It is written raw
// because the SDK drops a zero-valued breakpoint struct (omitzero).
var explicitMark = json.RawMessage(`{"mode":"explicit"}`)

// markBreakpoint rewrites a string item as one input_text part carrying a
// breakpoint (only text parts can carry one).
func markBreakpoint(it *sdk.ResponseInputItemUnionParam) {
	switch {
	case it.OfMessage != nil:
		text := it.OfMessage.Content.OfString.Value
		it.OfMessage.Content = sdk.EasyInputMessageContentUnionParam{OfInputItemContentList: sdk.ResponseInputMessageContentListParam{
			{OfInputText: &sdk.ResponseInputTextParam{Text: text, PromptCacheBreakpoint: param.Override[sdk.ResponseInputTextPromptCacheBreakpointParam](explicitMark)}},
		}}
	case it.OfFunctionCallOutput != nil:
		text := it.OfFunctionCallOutput.Output.OfString.Value
		it.OfFunctionCallOutput.Output = sdk.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: sdk.ResponseFunctionCallOutputItemListParam{
			{OfInputText: &sdk.ResponseInputTextContentParam{Text: text, PromptCacheBreakpoint: param.Override[sdk.ResponseInputTextContentPromptCacheBreakpointParam](explicitMark)}},
		}}
	}
}
