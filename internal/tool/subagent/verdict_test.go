package subagent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseVerdict(t *testing.T) {
	abc := []string{"A", "B", "C"}
	for _, tc := range []struct {
		name, answer string
		labels       []string
		winner       string // "" = an error
		reason       string
	}{
		{"bare object", `{"winner":"B","reason":"clearest"}`, abc, "B", "clearest"},
		{"code fence in prose", "I compared all three.\n```json\n{\n  \"winner\": \"C\",\n  \"reason\": \"covers every case\"\n}\n```\nHope that helps.", abc, "C", "covers every case"},
		{"lowercase and variant prefix", `{"winner":"variant a","reason":"ok"}`, abc, "A", "ok"},
		{"key case and spacing", `{"Winner": " B. ", "Reason": "  fine\n  indeed "}`, abc, "B", "fine indeed"},
		{"no reason", `{"winner":"A"}`, abc, "A", "(the judge gave no reason)"},
		{"first usable object wins", `{"note":"draft"} then {"winner":"C","reason":"r"} and {"winner":"A"}`, abc, "C", "r"},
		{"object nested in prose braces", `Scores {A: 3, B: 5} so {"winner":"B","reason":"top score"}`, abc, "B", "top score"},
		{"loose single quotes", `{'winner': 'B', 'reason': 'more precise'}`, abc, "B", "more precise"},
		{"loose yaml", "winner: C\nreason: tighter argument", abc, "C", "tighter argument"},
		{"label not shown", `{"winner":"B","reason":"x"}`, []string{"A", "C"}, "", ""},
		{"label out of range", `{"winner":"E"}`, abc, "", ""},
		{"winner not a string", `{"winner":2,"reason":"x"}`, abc, "", ""},
		{"prose only", "Both are good, honestly.", abc, "", ""},
		{"empty", "", abc, "", ""},
		{"truncated json", `{"winner":"B","reas`, abc, "B", "(the judge gave no reason)"},
		{"word winner in prose", "The winner is clearly variant B.", abc, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ParseVerdict(tc.answer, tc.labels)
			if tc.winner == "" {
				if err == nil {
					t.Fatalf("ParseVerdict = %+v, want an error", v)
				}
				return
			}
			if err != nil || v.Winner != tc.winner || v.Reason != tc.reason {
				t.Fatalf("ParseVerdict = %+v, %v; want winner %s, reason %q", v, err, tc.winner, tc.reason)
			}
		})
	}
}

func TestJudgeRequest(t *testing.T) {
	long := strings.Repeat("é", judgeVariantMax) // 2 bytes each: clipped
	req := judgeRequest("write the summary", "", []string{"A", "C"}, []string{"first answer", long})
	if len(req.System) != 1 || !strings.HasPrefix(req.System[0], judgeMarker) || len(req.Tools) != 0 {
		t.Fatalf("system = %q, tools = %d", req.System, len(req.Tools))
	}
	p := req.Messages[0].Content
	for _, want := range []string{"write the summary", defaultCriteria, "=== Variant A ===\nfirst answer\n=== end of Variant A ===",
		"=== Variant C ===", "[truncated:", "variants A, C"} {
		if !strings.Contains(p, want) {
			t.Errorf("judge prompt lacks %q", want)
		}
	}
	if len(p) > 2*judgeVariantMax || !utf8.ValidString(p) {
		t.Errorf("judge prompt is %d bytes (valid UTF-8 %v); each variant must be clipped on a rune boundary", len(p), utf8.ValidString(p))
	}
	if got := judgeRequest("t", "  prefer short  ", []string{"A", "B"}, []string{"x", "y"}).Messages[0].Content; !strings.Contains(got, "Criteria:\nprefer short\n") {
		t.Errorf("criteria not passed through:\n%s", got)
	}
}

func FuzzParseVerdict(f *testing.F) {
	f.Add(`{"winner":"B","reason":"clearest"}`, 3)
	f.Add("```json\n{\"winner\":\"variant c\"}\n```", 4)
	f.Add(`{'winner': 'A'}`, 2)
	f.Add("winner: D\nreason: x", 4)
	f.Add(strings.Repeat("{", 1000), 3)
	f.Add(`{"winner":{"winner":"A"}}`, 2)
	f.Fuzz(func(t *testing.T, answer string, n int) {
		n = 2 + (n&0x7fffffff)%3
		labels := []string{"A", "B", "C", "D"}[:n]
		v, err := ParseVerdict(answer, labels)
		if err != nil {
			if v != (Verdict{}) {
				t.Fatalf("error %v with a verdict %+v", err, v)
			}
			return
		}
		found := false
		for _, l := range labels {
			found = found || v.Winner == l
		}
		if !found {
			t.Fatalf("winner %q is not one of %v", v.Winner, labels)
		}
		if v.Reason == "" || len(v.Reason) > maxReason+64 || strings.ContainsAny(v.Reason, "\n\t") {
			t.Fatalf("reason %q: want non-empty, bounded, one line", v.Reason)
		}
	})
}

// BenchmarkParseVerdict: a typical fenced answer, and the worst case the
// scan bounds allow (hundreds of '{' opening long unterminated strings).
func BenchmarkParseVerdict(b *testing.B) {
	labels := []string{"A", "B", "C"}
	b.Run("typical", func(b *testing.B) {
		s := "Comparing the three drafts:\n```json\n{\"winner\":\"B\",\"reason\":\"it answers every part of the task\"}\n```"
		for b.Loop() {
			_, _ = ParseVerdict(s, labels)
		}
	})
	b.Run("worst", func(b *testing.B) {
		s := strings.Repeat(`{"a":"`+strings.Repeat("x", 200), 400)
		for b.Loop() {
			_, _ = ParseVerdict(s, labels)
		}
	})
}
