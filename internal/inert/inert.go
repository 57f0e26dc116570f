// Package inert keeps untrusted text from acting as markup in the prompt
// blocks that quote it: a recalled lesson, a product's answer, a skill
// body or a compaction note must not close its block or open another.
package inert

import "strings"

// Replace returns s with every occurrence of each needle, matched without
// regard to ASCII case, replaced by repl(needle, spelled), spelled being
// the occurrence as s writes it. Needles are given in lower case and
// tried in order at each position. The result holds no needle, however
// occurrences overlap, as long as repl never returns one.
// Replacing a tag name rather than deleting it means no spelling, such as
// "</delta:hydr</delta:hydration>ation>", leaves a working tag behind.
func Replace(s string, repl func(needle, spelled string) string, needles ...string) string {
	lower := foldASCII(s)
	found := false
	for _, n := range needles {
		found = found || strings.Contains(lower, n)
	}
	if !found {
		return s
	}
	var b strings.Builder
	start := 0 // s[start:i] is copied as it is
outer:
	for i := 0; i < len(s); {
		for _, n := range needles {
			if strings.HasPrefix(lower[i:], n) {
				b.WriteString(s[start:i])
				b.WriteString(repl(n, s[i:i+len(n)]))
				i += len(n)
				start = i
				continue outer
			}
		}
		i++
	}
	b.WriteString(s[start:])
	// Occurrences that overlapped one replaced ("tool_resultool_result")
	// are whole again only around a replacement's kept letters: another
	// pass takes them, and each pass spends at least one needle, so it ends.
	return Replace(b.String(), repl, needles...)
}

// Tag defangs a tag name ending in ':' or holding '_' (delta:, tool_result)
// by writing its last ':' or first '_' as '‧', keeping the spelling's case.
func Tag(_, spelled string) string {
	if i := strings.LastIndexByte(spelled, ':'); i >= 0 {
		return spelled[:i] + "‧" + spelled[i+1:]
	}
	if i := strings.IndexByte(spelled, '_'); i >= 0 {
		return spelled[:i] + "‧" + spelled[i+1:]
	}
	return spelled
}

// foldASCII lower-cases the ASCII letters of s byte by byte, so every byte
// stays where it was and an index into the result is an index into s. (A
// rune-wise fold would write each invalid UTF-8 byte as a three-byte
// U+FFFD and move everything after it.)
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
