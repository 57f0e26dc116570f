// Package clip shortens text for previews, log lines and model-facing
// summaries without ever splitting a UTF-8 character. It has two contracts,
// one function each: a bound in characters (what a person or a model reads)
// and a bound in bytes (what a field or a wire limit counts).
package clip

import "unicode/utf8"

// Ellipsis marks where text was cut.
const Ellipsis = "…"

// Runes returns s when it has at most n characters, and otherwise its first
// n-1 characters followed by Ellipsis, so the result never has more than n
// characters. n below 1 is taken as 1.
func Runes(s string, n int) string {
	n = max(n, 1)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for i < len(s) && k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + Ellipsis
}

// Bytes returns s when it has at most n bytes, and otherwise the longest
// prefix of at most n bytes that ends on a character boundary, followed by
// Ellipsis. n below 0 is taken as 0.
func Bytes(s string, n int) string {
	n = max(n, 0)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Ellipsis
}
