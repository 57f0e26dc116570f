package subagent

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

// UsageMarker opens the last stdout line of `delta run`: the run's usage as
// JSON, so a parent can charge what its child spent.
const UsageMarker = "DELTA_USAGE "

// usageJSON is the marker's payload.
type usageJSON struct {
	InputTokens     *int64   `json:"input_tokens"`
	OutputTokens    *int64   `json:"output_tokens"`
	CacheReadTokens int64    `json:"cache_read_tokens"`
	CostUSD         *float64 `json:"cost_usd"`
}

// FormatUsage renders the marker line (without a newline) for u.
func FormatUsage(u model.Usage) string {
	b, _ := json.Marshal(map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_tokens": u.CacheReadTokens, "cost_usd": u.CostUSD,
	})
	return UsageMarker + string(b)
}

// ParseOutput splits a child's stdout into its final text and the usage on
// its last non-blank line. ok is false when that line is not a well-formed
// marker (missing, truncated, negative or non-finite numbers); the text is
// then the whole output.
func ParseOutput(out string) (text string, u model.Usage, ok bool) {
	trimmed := strings.TrimRight(out, "\r\n\t ")
	i := strings.LastIndexByte(trimmed, '\n')
	last, before := trimmed[i+1:], ""
	if i >= 0 {
		before = trimmed[:i]
	}
	rest, found := strings.CutPrefix(strings.TrimSpace(last), UsageMarker)
	if !found {
		return out, model.Usage{}, false
	}
	var j usageJSON
	dec := json.NewDecoder(strings.NewReader(rest))
	if err := dec.Decode(&j); err != nil || dec.More() || j.InputTokens == nil || j.OutputTokens == nil || j.CostUSD == nil {
		return before, model.Usage{}, false
	}
	if *j.InputTokens < 0 || *j.OutputTokens < 0 || j.CacheReadTokens < 0 || j.CacheReadTokens > *j.InputTokens ||
		*j.CostUSD < 0 || math.IsNaN(*j.CostUSD) || math.IsInf(*j.CostUSD, 0) {
		return before, model.Usage{}, false
	}
	return before, model.Usage{InputTokens: *j.InputTokens, OutputTokens: *j.OutputTokens,
		CacheReadTokens: j.CacheReadTokens, CostUSD: *j.CostUSD}, true
}

// Bound holds a child's usage to the parent's remaining budget: fresh tokens
// (output first, then fresh input) to tokens, dollars to costUSD.
func Bound(u model.Usage, tokens int64, costUSD float64) model.Usage {
	tokens = max(tokens, 0)
	if u.Fresh() > tokens {
		fresh := u.InputTokens - u.CacheReadTokens
		if fresh > tokens {
			u.InputTokens = u.CacheReadTokens + tokens
			u.OutputTokens = 0
		} else {
			u.OutputTokens = tokens - fresh
		}
	}
	u.CostUSD = min(u.CostUSD, max(costUSD, 0))
	return u
}
