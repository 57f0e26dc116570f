package workspace

import (
	"fmt"
	"hash/fnv"
	"path"
	"strings"
	"unicode/utf8"
)

// maxIDLen bounds each id in a spill file name.
const maxIDLen = 64

// Spill applies the central tool-result cap. A text of at most
// max characters (runes) comes back unchanged. A longer one is saved whole at
// .delta/spill/<runID>.<callID>.txt and what comes back is its head and tail
// around a note naming that file, max characters in all, so the model keeps
// the start and the end (where errors usually are) and knows where to read
// the rest. If the file cannot be written the capped text is still returned,
// its note saying the full result was lost, together with the error.
func (r *Root) Spill(runID, callID, text string, max int) (string, error) {
	total := utf8.RuneCountInString(text)
	if total <= max {
		return text, nil
	}
	rel := path.Join(SpillDir, FileID(runID, "run")+"."+FileID(callID, "call")+".txt")
	err := r.WriteFile(rel, []byte(text))
	note := func(omitted int) string {
		if err != nil {
			return fmt.Sprintf("\n…[%d characters omitted; the full result could not be saved]…\n", omitted)
		}
		return fmt.Sprintf("\n…[%d characters omitted; full result saved at %s — read it with read_file]…\n", omitted, rel)
	}
	inline := elide(text, total, max, note)
	if err != nil {
		return inline, fmt.Errorf("spill tool result: %w", err)
	}
	return inline, nil
}

// elide keeps the head and tail of text (total runes long) around the note
// for the omitted count, in at most max runes. The note is sized for the
// largest count it could state (total), so the real one never overflows.
func elide(text string, total, max int, note func(omitted int) string) string {
	keep := max - utf8.RuneCountInString(note(total))
	if keep < 0 {
		// max is too small to hold the note: the cap wins over the note.
		return headRunes(note(total), max)
	}
	head, tail := keep-keep/2, keep/2
	return headRunes(text, head) + note(total-keep) + tailRunes(text, tail)
}

func headRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for range n {
		if i >= len(s) {
			break
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

func tailRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := len(s)
	for range n {
		if i <= 0 {
			break
		}
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// FileID makes an id safe as part of a file name: only [A-Za-z0-9_-] is
// kept, the length is bounded, and if anything was changed a hash of the
// original is appended so two ids that clean to the same text stay apart.
// Every per-run artifact (spill, research findings) names its run with it,
// so one glob on the run id finds them all.
func FileID(id, fallback string) string {
	var b strings.Builder
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > maxIDLen {
		s = s[:maxIDLen]
	}
	if s == id && s != "" {
		return s
	}
	if id == "" {
		return fallback
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return fmt.Sprintf("%s-%08x", s, h.Sum32())
}
