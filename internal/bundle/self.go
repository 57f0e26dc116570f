package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"
)

// SelfVersion names one exact content of DELTA.md: the first 12 hex digits
// of its SHA-256. The spine shows the version of the snapshot it carries,
// and a self-file write names the version it edited, so a write based on a
// file that changed since (another run, a child, an operator) is caught.
// An absent or empty file has the version of "".
func SelfVersion(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:6])
}

// ReadSelf reads the DELTA.md snapshot for one execution attempt:
//   - up to SelfMaxBytes: the file as is;
//   - above that but at most SelfMaxFileBytes: the head and tail, elided to
//     exactly fit SelfMaxBytes with a visible marker in the middle, so an
//     over-long file still loads (a recovery behaviour, not a way to work);
//   - above SelfMaxFileBytes, missing, or unreadable: "".
//
// The engine calls it once per attempt and keeps the result for every turn
// of that attempt, which keeps the prompt prefix stable.
func (b *Bundle) ReadSelf() string {
	if b.safeMode {
		return "" // a poisoned self-file must not reach a recovery boot
	}
	data, tooBig, err := readCapped(b.SelfPath(), SelfMaxFileBytes)
	if err != nil || tooBig {
		return ""
	}
	return elide(string(data), b.selfMaxBytes)
}

// elide returns s unchanged when it fits limit bytes, else its head and tail
// around a marker, limit bytes at most, cut on UTF-8 boundaries.
func elide(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	marker := func(omitted int) string {
		return fmt.Sprintf("\n\n[… %d bytes of DELTA.md elided: the file is %d bytes, over its %d-byte budget; rewrite it shorter …]\n\n",
			omitted, len(s), limit)
	}
	m := marker(len(s) - limit)
	if len(m)+2 > limit {
		// No room for a marker: keep the head only.
		return s[:runeStart(s, limit)]
	}
	// Settle the marker's width: its digit count depends on what is omitted.
	for range 4 {
		room := limit - len(m)
		head := runeStart(s, room/2+room%2)
		tail := runeStart(s, len(s)-(room-head))
		if tail < len(s)-(room-head) { // runeStart moved back: step forward to stay within room
			tail = nextRuneStart(s, tail)
		}
		next := marker(len(s) - head - (len(s) - tail))
		if len(next) <= len(m) {
			return s[:head] + next + s[tail:]
		}
		m = next
	}
	return s[:runeStart(s, limit)]
}

// runeStart returns the largest index ≤ i that starts a rune (or len(s)).
func runeStart(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// nextRuneStart returns the smallest index > i that starts a rune.
func nextRuneStart(s string, i int) int {
	for i++; i < len(s) && !utf8.RuneStart(s[i]); i++ {
	}
	return i
}
