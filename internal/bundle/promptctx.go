package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Request context bounds.
const (
	MaxRequestKeys     = 24
	MaxRequestValueLen = 200 // characters
)

// placeholder matches {{name}}, tolerating blanks inside the braces.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}`)

// safeKey is what a metadata.context key must look like to be rendered.
var safeKey = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// loadPromptContext reads PROMPT_CONTEXT.md and returns its ## Stable and
// ## Turn templates. A missing file is silent; an unreadable or oversized
// one is ignored with a warning.
func loadPromptContext(path string) (stable, turn, warning string) {
	data, tooBig, err := readCapped(path, ContextMaxFileBytes)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", "", ""
	case err != nil:
		return "", "", fmt.Sprintf("%s unreadable, ignored: %v", ContextFile, err)
	case tooBig:
		return "", "", fmt.Sprintf("%s is over %d bytes, ignored", ContextFile, ContextMaxFileBytes)
	}
	stable, turn = SplitContext(string(data))
	return stable, turn, ""
}

// SplitContext splits PROMPT_CONTEXT.md into its ## Stable and ## Turn
// templates. HTML comments are removed first. A section runs from its
// heading line (exactly "## Stable" or "## Turn", any case) to the next such
// heading, so other headings are ordinary content; text before the first
// section is ignored. A repeated section is appended to the earlier one.
func SplitContext(doc string) (stable, turn string) {
	doc = stripComments(strings.ToValidUTF8(doc, "\uFFFD"))
	var st, tu strings.Builder
	var cur *strings.Builder
	for line := range strings.Lines(doc) {
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "## stable":
			cur = &st
			continue
		case "## turn":
			cur = &tu
			continue
		}
		if cur != nil {
			cur.WriteString(line)
		}
	}
	return strings.TrimSpace(st.String()), strings.TrimSpace(tu.String())
}

// render replaces each {{name}} whose name vars has; others stay literally.
// Replacement is single-pass, so a value that itself looks like a
// placeholder is not expanded again.
func render(tmpl string, vars func(name string) (string, bool)) string {
	return placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		if v, ok := vars(name); ok {
			return v
		}
		return m
	})
}

func renderStable(tmpl string, vars map[string]string) string {
	if tmpl == "" {
		return ""
	}
	return capChars(render(tmpl, func(n string) (string, bool) { v, ok := vars[n]; return v, ok }), StableMaxChars)
}

// Turn renders the ## Turn template for one model turn:
// {{model}}, {{now.iso}}, {{now.date}}, {{now.tz}} and {{request.<key>}}
// from the request's metadata.context. modelName is the configured primary
// on the first turn and the model that served the previous successful turn
// after that; the engine decides. The result is capped at
// TurnMaxChars and is "" when there is no ## Turn section.
func (b *Bundle) Turn(modelName string, now time.Time, reqContext map[string]any) string {
	return renderTurn(b.turn, modelName, now, reqContext)
}

func renderTurn(tmpl, modelName string, now time.Time, reqContext map[string]any) string {
	if tmpl == "" {
		return ""
	}
	var req map[string]string // built on first use: most turns need none
	out := render(tmpl, func(name string) (string, bool) {
		switch name {
		case "model":
			return modelName, true
		case "now.iso":
			return now.Format(time.RFC3339), true
		case "now.date":
			return now.Format(time.DateOnly), true
		case "now.tz":
			return zoneName(now), true
		}
		key, ok := strings.CutPrefix(name, "request.")
		if !ok {
			return "", false
		}
		if req == nil {
			req = BoundContext(reqContext)
		}
		v, ok := req[key]
		return v, ok
	})
	return capChars(out, TurnMaxChars)
}

// zoneName prefers the IANA location name ("Europe/Paris") and falls back to
// the abbreviation ("CET") for the process-local zone.
func zoneName(t time.Time) string {
	if loc := t.Location().String(); loc != "" && loc != "Local" {
		return loc
	}
	name, _ := t.Zone()
	return name
}

// BoundContext reduces request metadata.context to what a turn may render:
// at most MaxRequestKeys keys matching [A-Za-z0-9_.-]{1,64} (the first in
// sorted order, so the choice is deterministic), each value flattened to a
// single line of at most MaxRequestValueLen characters. Objects and arrays
// render as compact JSON; null renders as empty.
func BoundContext(ctx map[string]any) map[string]string {
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		if safeKey.MatchString(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > MaxRequestKeys {
		keys = keys[:MaxRequestKeys]
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = capChars(oneLine(flatten(ctx[k])), MaxRequestValueLen)
	}
	return out
}

func flatten(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case fmt.Stringer:
		return x.String()
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// oneLine folds every run of whitespace and control characters into one
// space, so a value cannot break the block's layout.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// capChars keeps at most n characters, ending a cut text with "…".
func capChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + "…"
}
