package skills

import (
	"errors"
	"strconv"
	"strings"
)

// FrontMatter is what a SKILL.md declares about itself.
type FrontMatter struct {
	Name        string
	Description string
}

// ErrNoFrontMatter: the file does not open with a "---" line, or the block
// is never closed.
var ErrNoFrontMatter = errors.New("no front matter (a block between two --- lines at the top of the file)")

// ParseFrontMatter reads the YAML front matter of a SKILL.md: the top-level
// name and description keys of the block between the opening "---" line and
// the next "---" (or "...") line, and returns the body after it. Values may
// be plain (continued on more-indented lines, folded with spaces), single-
// or double-quoted, or block scalars: literal "|" and folded ">", with the
// chomping indicators "-" and "+" and an explicit indentation digit. Other
// keys, nested mappings, lists and comments are skipped. It is a small
// subset of YAML, enough for front matter; it never fails on a value, only
// on a missing block.
func ParseFrontMatter(text string) (FrontMatter, string, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || strings.TrimRight(first, " \t") != "---" {
		return FrontMatter{}, text, ErrNoFrontMatter
	}
	lines := strings.Split(rest, "\n")
	end := -1
	for i, l := range lines {
		if t := strings.TrimRight(l, " \t"); t == "---" || t == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return FrontMatter{}, text, ErrNoFrontMatter
	}
	body := strings.Join(lines[end+1:], "\n")
	lines = lines[:end]
	var fm FrontMatter
	for i := 0; i < len(lines); {
		l := lines[i]
		if l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '#' {
			i++ // blank, nested or comment: not a top-level key
			continue
		}
		key, val, ok := cutKey(l)
		if !ok {
			i++
			continue
		}
		v, next := scalar(val, lines, i+1)
		switch key {
		case "name":
			fm.Name = v
		case "description":
			fm.Description = v
		}
		i = next
	}
	return fm, body, nil
}

// cutKey splits "key: value" at the first ": " (or a trailing ":"),
// unquoting a quoted key.
func cutKey(l string) (key, val string, ok bool) {
	i := strings.Index(l, ": ")
	if i < 0 {
		if strings.HasSuffix(strings.TrimRight(l, " \t"), ":") {
			i = len(strings.TrimRight(l, " \t")) - 1
		} else {
			return "", "", false
		}
	}
	key = strings.TrimSpace(l[:i])
	if len(key) >= 2 && (key[0] == '"' || key[0] == '\'') && key[len(key)-1] == key[0] {
		key = key[1 : len(key)-1]
	}
	if i+1 < len(l) {
		val = l[i+1:]
	}
	return key, strings.TrimSpace(val), true
}

// scalar reads the value that starts as head on its key's line and may
// continue on lines[from:]; it returns the value and the index of the
// first line after it.
func scalar(head string, lines []string, from int) (string, int) {
	switch {
	case strings.HasPrefix(head, "|") || strings.HasPrefix(head, ">"):
		return block(head, lines, from)
	case strings.HasPrefix(head, `"`):
		return doubleQuoted(head, lines, from)
	case strings.HasPrefix(head, "'"):
		return singleQuoted(head, lines, from)
	}
	// Plain: a comment ends it; more-indented lines continue it, folded.
	parts := []string{stripComment(head)}
	i := from
	for ; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			// A blank line inside a plain scalar is a line break.
			if i+1 < len(lines) && indent(lines[i+1]) > 0 && strings.TrimSpace(lines[i+1]) != "" {
				parts = append(parts, "\n")
				continue
			}
			break
		}
		if indent(l) == 0 {
			break
		}
		parts = append(parts, stripComment(strings.TrimSpace(l)))
	}
	return joinFolded(parts), i
}

func joinFolded(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if p == "\n" {
			b.WriteString("\n")
			continue
		}
		if i > 0 && parts[i-1] != "\n" && b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return strings.TrimSpace(b.String())
}

func stripComment(s string) string {
	if strings.HasPrefix(s, "#") {
		return ""
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func indent(l string) int {
	n := 0
	for n < len(l) && (l[n] == ' ' || l[n] == '\t') {
		n++
	}
	return n
}

// block reads a literal (|) or folded (>) block scalar.
func block(head string, lines []string, from int) (string, int) {
	style := head[0]
	chomp, explicit := byte(0), 0
	for _, c := range []byte(stripComment(head[1:])) {
		switch {
		case c == '-' || c == '+':
			chomp = c
		case c >= '1' && c <= '9':
			explicit = int(c - '0')
		}
	}
	// The block is every following line that is blank or indented more
	// than the key (the key is at column 0).
	i := from
	for i < len(lines) && (strings.TrimSpace(lines[i]) == "" || indent(lines[i]) > 0) {
		i++
	}
	raw := lines[from:i]
	n := explicit
	if n == 0 {
		for _, l := range raw {
			if strings.TrimSpace(l) != "" {
				n = indent(l)
				break
			}
		}
	}
	content := make([]string, 0, len(raw))
	for _, l := range raw {
		if len(l) >= n && indent(l) >= n {
			content = append(content, l[n:])
		} else {
			content = append(content, strings.TrimLeft(l, " \t"))
		}
	}
	// Trailing blank lines belong to chomping, not to the text.
	last := len(content)
	for last > 0 && strings.TrimSpace(content[last-1]) == "" {
		last--
	}
	trailing := len(content) - last
	content = content[:last]
	var text string
	if style == '|' {
		text = strings.Join(content, "\n")
	} else {
		text = fold(content)
	}
	switch {
	case len(content) == 0:
		text = ""
	case chomp == '-':
	case chomp == '+':
		text += "\n" + strings.Repeat("\n", trailing)
	default:
		text += "\n"
	}
	return text, i
}

// fold joins the lines of a folded block: a single line break becomes a
// space, each blank line a newline, and more-indented lines keep theirs.
func fold(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		switch {
		case l == "":
			b.WriteByte('\n')
			continue
		case i == 0 || lines[i-1] == "":
			// The blank lines before it already wrote its line breaks.
		case indent(l) > 0 || indent(lines[i-1]) > 0:
			b.WriteByte('\n')
		default:
			b.WriteByte(' ')
		}
		b.WriteString(l)
	}
	return b.String()
}

// doubleQuoted reads a "…" scalar with its escapes, possibly over several
// lines (folded).
func doubleQuoted(head string, lines []string, from int) (string, int) {
	s, i := gatherQuoted(head, lines, from, '"')
	// Undo escapes through Go's unquoting where it agrees with YAML; on a
	// sequence it does not know, keep the text as written.
	if u, err := strconv.Unquote(`"` + strings.ReplaceAll(s, "\\/", "/") + `"`); err == nil {
		return u, i
	}
	return s, i
}

func singleQuoted(head string, lines []string, from int) (string, int) {
	s, i := gatherQuoted(head, lines, from, '\'')
	return strings.ReplaceAll(s, "''", "'"), i
}

// gatherQuoted collects the inside of a quoted scalar starting at head,
// folding line breaks into spaces, and returns it with the next line index.
func gatherQuoted(head string, lines []string, from int, q byte) (string, int) {
	text := head[1:]
	i := from
	for {
		if end := closingQuote(text, q); end >= 0 {
			return text[:end], i
		}
		if i >= len(lines) || (indent(lines[i]) == 0 && strings.TrimSpace(lines[i]) != "" && !strings.ContainsRune(lines[i], rune(q))) {
			return strings.TrimSpace(text), i // unclosed: take what there is
		}
		next := strings.TrimSpace(lines[i])
		if next == "" {
			text += "\n"
		} else if strings.HasSuffix(text, "\n") {
			text += next
		} else {
			text += " " + next
		}
		i++
	}
}

// closingQuote finds the closing quote in s, honouring \" in double quotes
// and ” in single quotes; -1 when there is none.
func closingQuote(s string, q byte) int {
	for i := 0; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q:
			if q == '\'' && i+1 < len(s) && s[i+1] == '\'' {
				i++
				continue
			}
			return i
		}
	}
	return -1
}
