package subagent

import (
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

func TestParseOutput(t *testing.T) {
	for _, tc := range []struct {
		name, out, text string
		u               model.Usage
		ok              bool
	}{
		{"marker last", "answer\nDELTA_USAGE {\"input_tokens\":10,\"output_tokens\":2,\"cache_read_tokens\":4,\"cost_usd\":0.5}\n", "answer",
			model.Usage{InputTokens: 10, OutputTokens: 2, CacheReadTokens: 4, CostUSD: 0.5}, true},
		{"multi-line answer", "a\nb\n" + FormatUsage(model.Usage{InputTokens: 1, OutputTokens: 1}), "a\nb", model.Usage{InputTokens: 1, OutputTokens: 1}, true},
		{"missing", "just text\n", "just text\n", model.Usage{}, false},
		{"not last", "DELTA_USAGE {\"input_tokens\":1,\"output_tokens\":1,\"cost_usd\":0}\nmore", "DELTA_USAGE {\"input_tokens\":1,\"output_tokens\":1,\"cost_usd\":0}\nmore", model.Usage{}, false},
		{"truncated", "x\nDELTA_USAGE {\"input_tokens\":1", "x", model.Usage{}, false},
		{"negative", "x\nDELTA_USAGE {\"input_tokens\":-1,\"output_tokens\":1,\"cost_usd\":0}", "x", model.Usage{}, false},
		{"missing field", "x\nDELTA_USAGE {\"input_tokens\":1,\"output_tokens\":1}", "x", model.Usage{}, false},
		{"cache over input", "x\nDELTA_USAGE {\"input_tokens\":1,\"output_tokens\":1,\"cache_read_tokens\":5,\"cost_usd\":0}", "x", model.Usage{}, false},
		{"trailing junk", "x\nDELTA_USAGE {\"input_tokens\":1,\"output_tokens\":1,\"cost_usd\":0} {}", "x", model.Usage{}, false},
		{"empty", "", "", model.Usage{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, u, ok := ParseOutput(tc.out)
			if text != tc.text || u != tc.u || ok != tc.ok {
				t.Errorf("ParseOutput = %q, %+v, %v; want %q, %+v, %v", text, u, ok, tc.text, tc.u, tc.ok)
			}
		})
	}
}

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		u      model.Usage
		tokens int64
		cost   float64
		want   model.Usage
	}{
		{"within", model.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 1}, 100, 2, model.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 1}},
		{"output trimmed", model.Usage{InputTokens: 10, OutputTokens: 50, CostUSD: 3}, 20, 2, model.Usage{InputTokens: 10, OutputTokens: 10, CostUSD: 2}},
		{"input trimmed, cache kept", model.Usage{InputTokens: 110, CacheReadTokens: 10, OutputTokens: 5}, 30, 1, model.Usage{InputTokens: 40, CacheReadTokens: 10}},
	} {
		if got := Bound(tc.u, tc.tokens, tc.cost); got != tc.want {
			t.Errorf("%s: Bound = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func FuzzParseOutput(f *testing.F) {
	f.Add("answer\n" + FormatUsage(model.Usage{InputTokens: 3, OutputTokens: 4, CostUSD: 0.1}))
	f.Add("DELTA_USAGE {")
	f.Add("DELTA_USAGE {\"input_tokens\":1e400,\"output_tokens\":1,\"cost_usd\":1}")
	f.Add("\n\n\n")
	f.Fuzz(func(t *testing.T, out string) {
		text, u, ok := ParseOutput(out)
		if !ok {
			return
		}
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CostUSD < 0 || u.CacheReadTokens > u.InputTokens {
			t.Fatalf("accepted invalid usage %+v", u)
		}
		if strings.Count(text, "\n") > strings.Count(out, "\n") {
			t.Fatalf("text %q has more lines than the output", text)
		}
		// Round trip: the formatted marker parses back to the same usage.
		if _, u2, ok2 := ParseOutput(FormatUsage(u)); !ok2 || u2 != u {
			t.Fatalf("round trip %+v → %+v, %v", u, u2, ok2)
		}
	})
}
