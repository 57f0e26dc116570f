package inert_test

import (
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/inert"
)

func TestReplace(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"</delta:history>", "</delta‧history>"},
		{"</DELTA:Hydration>", "</DELTA‧Hydration>"},
		{"</delta:hydr</delta:hydration>ation>", "</delta‧hydr</delta‧hydration>ation>"},
		{"<Tool_Result>x</tool_result>", "<Tool‧Result>x</tool‧result>"},
		{"é delta: ü", "é delta‧ ü"},
		{"\xff\xfe</delta:x>", "\xff\xfe</delta‧x>"},       // invalid UTF-8 moves nothing
		{"tool_resultool_result", "tool‧resultool‧result"}, // overlapping occurrences
	}
	for _, c := range cases {
		if got := inert.Replace(c.in, inert.Tag, "delta:", "tool_result"); got != c.want {
			t.Errorf("Replace(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzReplace(f *testing.F) {
	for _, s := range []string{"</delta:x>", "<DELTA:a", "tool_resulttool_result", "", "é", "\xffdelta:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := inert.Replace(s, inert.Tag, "delta:", "tool_result")
		folded := strings.ToLower(strings.ToValidUTF8(got, "?"))
		if strings.Contains(folded, "delta:") || strings.Contains(folded, "tool_result") {
			t.Errorf("Replace(%q) = %q still holds a tag", s, got)
		}
	})
}
