package model

import "strings"

// builtinPrices are dollars per million tokens for common models, keyed by
// the served model id prefix as OpenRouter spells it. A vendor's own API
// serves the same models without the vendor prefix; nativePrices derives
// those rows, so a native id is never priced by a shorter, dearer prefix
// (gpt-4.1-mini as gpt-4.1).
// DELTA_MODEL_PRICES entries override them. Each row ends with the date its
// figures were taken from the vendor's public list price and whether they
// were checked against the live page (this table was written offline:
// "unverified"). Prices drift: an operator who relies on the dollar cap
// should pin their own.
var builtinPrices = map[string]Price{
	"anthropic/claude-opus-4":     {In: 15, Out: 75, CacheRead: 1.5, CacheWrite: 18.75}, // 2026-11-29, unverified
	"anthropic/claude-sonnet-4":   {In: 3, Out: 15, CacheRead: 0.3, CacheWrite: 3.75},   // 2026-11-29, unverified
	"anthropic/claude-haiku-4":    {In: 1, Out: 5, CacheRead: 0.1, CacheWrite: 1.25},    // 2026-11-29, unverified
	"anthropic/claude-3.5-haiku":  {In: 0.8, Out: 4, CacheRead: 0.08, CacheWrite: 1},    // 2026-11-29, unverified
	"openai/gpt-5-mini":           {In: 0.25, Out: 2, CacheRead: 0.025},                 // 2026-11-29, unverified
	"openai/gpt-5":                {In: 1.25, Out: 10, CacheRead: 0.125},                // 2026-11-29, unverified
	"openai/gpt-4.1-mini":         {In: 0.4, Out: 1.6, CacheRead: 0.1},                  // 2026-11-29, unverified
	"openai/gpt-4.1":              {In: 2, Out: 8, CacheRead: 0.5},                      // 2026-11-29, unverified
	"openai/gpt-4o-mini":          {In: 0.15, Out: 0.6, CacheRead: 0.075},               // 2026-11-29, unverified
	"openai/gpt-4o":               {In: 2.5, Out: 10, CacheRead: 1.25},                  // 2026-11-29, unverified
	"google/gemini-2.5-pro":       {In: 1.25, Out: 10, CacheRead: 0.31},                 // 2026-11-29, unverified
	"google/gemini-2.5-flash":     {In: 0.3, Out: 2.5, CacheRead: 0.075},                // 2026-11-29, unverified
	"deepseek/deepseek-chat":      {In: 0.27, Out: 1.1, CacheRead: 0.07},                // 2026-11-29, unverified
	"meta-llama/llama-3.3-70b":    {In: 0.13, Out: 0.4},                                 // 2026-11-29, unverified
	"mistralai/mistral-large":     {In: 2, Out: 6},                                      // 2026-11-29, unverified
	"x-ai/grok-4":                 {In: 3, Out: 15, CacheRead: 0.75},                    // 2026-11-29, unverified
	"qwen/qwen3-coder":            {In: 0.4, Out: 1.6},                                  // 2026-11-29, unverified
	"moonshotai/kimi-k2":          {In: 0.6, Out: 2.5, CacheRead: 0.15},                 // 2026-11-29, unverified
	"z-ai/glm-4.6":                {In: 0.6, Out: 2.2, CacheRead: 0.11},                 // 2026-11-29, unverified
	"openai/gpt-oss-120b":         {In: 0.1, Out: 0.5},                                  // 2026-11-29, unverified
	"anthropic/claude-3.7-sonnet": {In: 3, Out: 15, CacheRead: 0.3, CacheWrite: 3.75},   // 2026-11-29, unverified
}

// nativeVendors are the vendors whose own API delta speaks, so their
// models are also served under ids without the vendor prefix. Anthropic's
// own API writes a version with hyphens where OpenRouter writes dots
// (claude-3-5-haiku-20241022 for anthropic/claude-3.5-haiku), so its rows
// are derived under both spellings.
var nativeVendors = []struct {
	prefix  string
	hyphens bool
}{{"openai/", false}, {"anthropic/", true}}

// Prices returns the built-in table, with each native vendor's rows also
// under their native ids, and overrides applied on top.
func Prices(overrides map[string]Price) map[string]Price {
	out := make(map[string]Price, 3*len(builtinPrices)+len(overrides))
	for k, v := range builtinPrices {
		out[k] = v
		for _, vendor := range nativeVendors {
			if native, ok := strings.CutPrefix(k, vendor.prefix); ok {
				out[native] = v
				if vendor.hyphens {
					out[strings.ReplaceAll(native, ".", "-")] = v
				}
			}
		}
	}
	for k, v := range overrides {
		out[k] = v
	}
	return out
}

// Cost prices a call by the served model id: an exact entry wins, else the
// longest matching prefix. priced is false when no entry matches (the
// caller records $0 and warns). A missing CacheWrite price is 1.25 × In.
func Cost(table map[string]Price, servedModel string, u Usage) (usd float64, priced bool) {
	p, ok := table[servedModel]
	if !ok {
		best := -1
		for k, v := range table {
			if strings.HasPrefix(servedModel, k) && len(k) > best {
				p, best = v, len(k)
			}
		}
		ok = best >= 0
	}
	if !ok {
		return 0, false
	}
	cw := p.CacheWrite
	if cw == 0 {
		cw = 1.25 * p.In
	}
	fresh := u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens
	if fresh < 0 {
		fresh = 0
	}
	usd = (float64(fresh)*p.In + float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*cw + float64(u.OutputTokens)*p.Out) / 1e6
	return usd, true
}
