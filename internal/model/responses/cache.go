package responses

import (
	"regexp"
	"strconv"
	"strings"
)

// explicitCacheModel reports whether a model takes explicit prompt-cache
// breakpoints (GPT-5.6 and later).
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
// rolling breakpoints:
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
func placeCacheBreakpoints(p *request) {
	var candidates []int
	first := -1
	for i, it := range p.Input {
		switch {
		case it.kind == kindMessage && it.role == "user":
			if len(it.images) > 0 {
				// A message with images (a content list), attached after
				// the per-turn blocks: never a breakpoint.
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(it.text), "<delta:") {
				continue
			}
			if first < 0 {
				first = i
			}
			candidates = append(candidates, i)
		case it.kind == kindCallOutput:
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
	// A marked item's text goes as one input_text part carrying the
	// breakpoint (only text parts can carry one); see encode.go.
	for i := range marks {
		p.Input[i].breakpoint = true
	}
	p.ExplicitCache = true
}
