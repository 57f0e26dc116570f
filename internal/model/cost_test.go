package model_test

import (
	"math"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

func TestCost(t *testing.T) {
	table := model.Prices(map[string]model.Price{"my-model": {In: 2, Out: 10, CacheRead: 0.2}})
	for _, tt := range []struct {
		name   string
		model  string
		u      model.Usage
		want   float64
		priced bool
	}{
		{"override exact", "my-model", model.Usage{InputTokens: 1_000_000, OutputTokens: 100_000}, 2 + 1, true},
		{"cache reads at their price", "my-model", model.Usage{InputTokens: 1_000_000, CacheReadTokens: 500_000}, 1 + 0.1, true},
		{"missing cacheWrite is 1.25x input", "my-model", model.Usage{InputTokens: 1_000_000, CacheWriteTokens: 1_000_000}, 2.5, true},
		{"longest prefix wins", "openai/gpt-5-mini-2026", model.Usage{OutputTokens: 1_000_000}, 2, true},
		{"native id of a smaller model", "gpt-4.1-mini-2025-04-14", model.Usage{InputTokens: 1_000_000}, 0.4, true},
		{"native id as the vendor-prefixed row", "gpt-4o-mini", model.Usage{OutputTokens: 1_000_000}, 0.6, true},
		{"native anthropic id", "claude-sonnet-4-5-20250929", model.Usage{InputTokens: 1_000_000}, 3, true},
		{"native anthropic id with a hyphenated version", "claude-3-5-haiku-20241022", model.Usage{InputTokens: 1_000_000}, 0.8, true},
		{"hyphenated version is not a shorter dearer row", "claude-3-7-sonnet-20250219", model.Usage{OutputTokens: 1_000_000}, 15, true},
		{"unpriced", "nobody/knows", model.Usage{InputTokens: 5}, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := model.Cost(table, tt.model, tt.u)
			if ok != tt.priced || math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("Cost = %v, %v; want %v, %v", got, ok, tt.want, tt.priced)
			}
		})
	}
}
