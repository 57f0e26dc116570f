package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRunes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"ééééé", 3, "éé…"},
		{"日本語テキスト", 4, "日本語…"},
		{"abc", 0, "…"},
	} {
		if got := Runes(c.in, c.n); got != c.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"é", 1, "…"},       // a two-byte character is not split
		{"aé", 2, "a…"},     // nor after an ASCII one
		{"aéb", 3, "aé…"},   // a cut right after a whole character keeps it
		{"ab😀cd", 4, "ab…"}, // inside a four-byte character
		{"abc", -1, "…"},
	} {
		if got := Bytes(c.in, c.n); got != c.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func FuzzClip(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Add("\xff\xfe", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n % 4096
		r := Runes(s, n)
		if utf8.ValidString(s) && !utf8.ValidString(r) {
			t.Fatalf("Runes(%q, %d) = %q splits a character", s, n, r)
		}
		if utf8.RuneCountInString(r) > max(n, 1) {
			t.Fatalf("Runes(%q, %d) = %q has more than %d characters", s, n, r, n)
		}
		b := Bytes(s, n)
		if utf8.ValidString(s) && !utf8.ValidString(b) {
			t.Fatalf("Bytes(%q, %d) = %q splits a character", s, n, b)
		}
		if len(strings.TrimSuffix(b, Ellipsis)) > max(n, 0) && b != s {
			t.Fatalf("Bytes(%q, %d) = %q keeps more than %d bytes", s, n, b, n)
		}
	})
}
