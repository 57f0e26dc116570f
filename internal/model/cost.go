package model

import "strings"

// builtinPrices are dollars per million tokens for common models, keyed by
// the served model id prefix (OpenRouter ids first, then native ids).
// DELTA_MODEL_PRICES entries override them. Prices drift: an operator who
// relies on the dollar cap should pin their own.
var builtinPrices = map[string]Price{
	"anthropic/claude-opus-4":     {In: 15, Out: 75, CacheRead: 1.5, CacheWrite: 18.75},
	"anthropic/claude-sonnet-4":   {In: 3, Out: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"anthropic/claude-haiku-4":    {In: 1, Out: 5, CacheRead: 0.1, CacheWrite: 1.25},
	"anthropic/claude-3.5-haiku":  {In: 0.8, Out: 4, CacheRead: 0.08, CacheWrite: 1},
	"claude-opus-4":               {In: 15, Out: 75, CacheRead: 1.5, CacheWrite: 18.75},
	"claude-sonnet-4":             {In: 3, Out: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-haiku-4":              {In: 1, Out: 5, CacheRead: 0.1, CacheWrite: 1.25},
	"openai/gpt-5-mini":           {In: 0.25, Out: 2, CacheRead: 0.025},
	"openai/gpt-5":                {In: 1.25, Out: 10, CacheRead: 0.125},
	"openai/gpt-4.1-mini":         {In: 0.4, Out: 1.6, CacheRead: 0.1},
	"openai/gpt-4.1":              {In: 2, Out: 8, CacheRead: 0.5},
	"openai/gpt-4o-mini":          {In: 0.15, Out: 0.6, CacheRead: 0.075},
	"openai/gpt-4o":               {In: 2.5, Out: 10, CacheRead: 1.25},
	"gpt-5-mini":                  {In: 0.25, Out: 2, CacheRead: 0.025},
	"gpt-5":                       {In: 1.25, Out: 10, CacheRead: 0.125},
	"gpt-4.1":                     {In: 2, Out: 8, CacheRead: 0.5},
	"gpt-4o":                      {In: 2.5, Out: 10, CacheRead: 1.25},
	"google/gemini-2.5-pro":       {In: 1.25, Out: 10, CacheRead: 0.31},
	"google/gemini-2.5-flash":     {In: 0.3, Out: 2.5, CacheRead: 0.075},
	"deepseek/deepseek-chat":      {In: 0.27, Out: 1.1, CacheRead: 0.07},
	"meta-llama/llama-3.3-70b":    {In: 0.13, Out: 0.4},
	"mistralai/mistral-large":     {In: 2, Out: 6},
	"x-ai/grok-4":                 {In: 3, Out: 15, CacheRead: 0.75},
	"qwen/qwen3-coder":            {In: 0.4, Out: 1.6},
	"moonshotai/kimi-k2":          {In: 0.6, Out: 2.5, CacheRead: 0.15},
	"z-ai/glm-4.6":                {In: 0.6, Out: 2.2, CacheRead: 0.11},
	"openai/gpt-oss-120b":         {In: 0.1, Out: 0.5},
	"anthropic/claude-3.7-sonnet": {In: 3, Out: 15, CacheRead: 0.3, CacheWrite: 3.75},
}

// Prices returns the built-in table with overrides applied on top.
func Prices(overrides map[string]Price) map[string]Price {
	out := make(map[string]Price, len(builtinPrices)+len(overrides))
	for k, v := range builtinPrices {
		out[k] = v
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
