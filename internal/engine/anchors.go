package engine

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/model"
)

// The anchor audit. Before the summarizer runs, the identifiers a task
// turns on are harvested from the history it will replace, by class, each
// class with its own budget: URLs, email addresses, slugs and paths,
// recurring proper names from the agent's own text, years, and numbers —
// plus every anchor the previous summary carried, first. After the summary
// is written, each anchor it does not contain rides a machine-built
// appendix inside the summary's byte budget, so compression cannot
// silently lose the values the work depends on.

// Anchor classes, in the order the appendix lists them.
const (
	anchorURL    = "url"
	anchorEmail  = "email"
	anchorSlug   = "id"
	anchorName   = "name"
	anchorYear   = "year"
	anchorNumber = "number"
)

// anchorBudgets is how many anchors each class may contribute; together
// anchorTotal.
var anchorBudgets = map[string]int{
	anchorURL: 12, anchorEmail: 6, anchorSlug: 12, anchorName: 10, anchorYear: 6, anchorNumber: 14,
}

var anchorClasses = []string{anchorURL, anchorEmail, anchorSlug, anchorName, anchorYear, anchorNumber}

const (
	anchorTotal = 60
	anchorMax   = 120 // bytes: a longer value is not an identifier worth carrying whole
)

var (
	reURL   = regexp.MustCompile(`https?://[^\s<>"'` + "`" + `)\]}]+`)
	reEmail = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	reSlug  = regexp.MustCompile(`(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b|\b[\pL\d]+(?:[-_][\pL\d]+)+\b`)
	reName  = regexp.MustCompile(`\b\p{Lu}[\p{Ll}'’]+(?:[ -]\p{Lu}[\p{Ll}'’]+){0,2}\b`)
)

// nameStop are capitalised words that open sentences rather than name
// anything; a name made only of them is not an anchor, and one that starts
// with one loses it.
var nameStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`The A An I I'm I've I'll We We'll Let Now Next Then This That These Those It Its
		There Here Done Found Checked Searching Reading Looking Calling Running Writing Okay OK Yes No Not
		First Second Third Finally Also And But Or So If When While After Before Since Because With Without For From
		To In On At By Of As All Some Any Each Every None Nothing Everything Please Note Summary Result Results
		Error Task Plan Step Steps Tool Tools User Assistant My Our Your Their His Her What Which Who How Why
		Monday Tuesday Wednesday Thursday Friday Saturday Sunday Today Tomorrow Yesterday`) {
		nameStop[w] = true
	}
}

// anchor is one harvested identifier.
type anchor struct {
	class string
	value string
	score int // weighted occurrences: the agent's and user's words count triple
	last  int // position of the newest occurrence, for ties
	prior bool
}

// harvestAnchors returns the anchors of msgs with prior (the previous
// summary's anchors) first, each class within its budget and at most
// anchorTotal in all.
func harvestAnchors(msgs []model.Message, prior []string) []anchor {
	found := map[string]*anchor{}
	add := func(class, v string, weight, pos int) {
		v = strings.TrimRight(v, ".,;:!?")
		if v == "" || len(v) > anchorMax {
			return
		}
		key := class + "\x00" + v
		if class == anchorName {
			key = class + "\x00" + strings.ToLower(v)
		}
		a := found[key]
		if a == nil {
			a = &anchor{class: class, value: v}
			found[key] = a
		}
		a.score += weight
		a.last = pos
	}
	names := map[string]int{} // proper names in the agent's own text → occurrences
	for pos, m := range msgs {
		weight, content := 3, m.Content
		if m.Role == model.RoleTool {
			// A tool result is harvested as far as the summarizer reads it
			// (transcript clips it), so the audit asks for what it saw.
			weight, content = 1, clipMiddle(content, transcriptToolChars)
		}
		texts := []string{content}
		for _, c := range m.ToolCalls {
			texts = append(texts, string(c.Arguments))
		}
		for _, text := range texts {
			harvestText(text, weight, pos, add)
		}
		if m.Role == model.RoleAssistant {
			for _, n := range reName.FindAllString(m.Content, -1) {
				if n = trimNameStops(n); n != "" {
					names[n]++
				}
			}
		}
	}
	for n, count := range names {
		if count >= 2 { // recurring: said once is often just a capitalised word
			for i := 0; i < count; i++ {
				add(anchorName, n, 3, len(msgs))
			}
		}
	}
	out := make([]anchor, 0, anchorTotal)
	used := map[string]int{}
	seen := map[string]bool{}
	for _, p := range prior {
		if len(out) == anchorTotal {
			break
		}
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		c := classify(p)
		used[c]++
		out = append(out, anchor{class: c, value: p, prior: true})
	}
	var fresh []*anchor
	for _, a := range found {
		if !seen[a.value] {
			fresh = append(fresh, a)
		}
	}
	sort.Slice(fresh, func(i, j int) bool {
		if fresh[i].score != fresh[j].score {
			return fresh[i].score > fresh[j].score
		}
		if fresh[i].last != fresh[j].last {
			return fresh[i].last > fresh[j].last
		}
		return fresh[i].value < fresh[j].value
	})
	for _, a := range fresh {
		if len(out) == anchorTotal {
			break
		}
		if used[a.class] >= anchorBudgets[a.class] || seen[a.value] {
			continue
		}
		used[a.class]++
		seen[a.value] = true
		out = append(out, *a)
	}
	return out
}

// harvestText adds the URLs, emails, slugs, years and numbers of text. A
// matched URL or email is blanked before the narrower classes run, so its
// parts are not harvested again as slugs or numbers.
func harvestText(text string, weight, pos int, add func(class, v string, weight, pos int)) {
	if text == "" {
		return
	}
	rest := text
	for _, c := range []struct {
		class string
		re    *regexp.Regexp
		hint  string // a text without any of these bytes cannot match
	}{{anchorURL, reURL, "h"}, {anchorEmail, reEmail, "@"}, {anchorSlug, reSlug, "-_/"}} {
		if !strings.ContainsAny(rest, c.hint) {
			continue
		}
		locs := c.re.FindAllStringIndex(rest, -1)
		if len(locs) == 0 {
			continue
		}
		b := []byte(rest)
		for _, l := range locs {
			if v := rest[l[0]:l[1]]; c.class != anchorSlug || slugLike(v) {
				add(c.class, v, weight, pos)
			}
			for i := l[0]; i < l[1]; i++ {
				b[i] = ' '
			}
		}
		rest = string(b)
	}
	scanNumbers(rest, func(n string) {
		if isYear(n) {
			add(anchorYear, n, weight, pos)
		} else {
			add(anchorNumber, n, weight, pos)
		}
	})
}

// scanNumbers calls fn with each number of text of two or more digits
// (inner commas and dots included: 1,234 and 3.50), standing alone as a
// word. It is a linear scan: a regular expression with word boundaries
// costs most of a compaction's time over a long history.
func scanNumbers(text string, fn func(string)) {
	word := func(b byte) bool {
		return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
	}
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) || (i > 0 && word(text[i-1])) {
			continue
		}
		j := i
		for j < len(text) && (isDigit(text[j]) || (text[j] == ',' || text[j] == '.') && j+1 < len(text) && isDigit(text[j+1])) {
			j++
		}
		if j-i >= 2 && (j == len(text) || !word(text[j])) {
			fn(text[i:j])
		}
		i = j
	}
}

// isNumber reports whether v is exactly one number scanNumbers finds.
func isNumber(v string) bool {
	found := ""
	scanNumbers(v, func(n string) { found = n })
	return found == v
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// isYear reports whether n is a year from 1800 to 2099.
func isYear(n string) bool {
	return len(n) == 4 && (n[:2] == "18" || n[:2] == "19" || n[:2] == "20") && isDigit(n[2]) && isDigit(n[3])
}

// slugLike keeps identifiers and paths (order-8812, run_42, docs/a.md,
// INV-Q3) and drops hyphenated words (follow-up, well-known).
func slugLike(v string) bool {
	if strings.ContainsAny(v, "0123456789_/") || strings.Count(v, "-") >= 2 {
		return true
	}
	return strings.ToLower(v) != v
}

func trimNameStops(n string) string {
	words := strings.FieldsFunc(n, func(r rune) bool { return r == ' ' || r == '-' })
	for len(words) > 0 && nameStop[words[0]] {
		words = words[1:]
	}
	if len(words) == 0 || (len(words) == 1 && utf8.RuneCountInString(words[0]) < 3) {
		return ""
	}
	return strings.Join(words, " ")
}

// classify names the class of a carried anchor.
func classify(v string) string {
	switch {
	case reURL.MatchString(v):
		return anchorURL
	case reEmail.MatchString(v):
		return anchorEmail
	case isYear(v):
		return anchorYear
	case isNumber(v):
		return anchorNumber
	case reSlug.FindString(v) == v:
		return anchorSlug
	}
	return anchorName
}

// keptIn reports whether the summary text carries the anchor: verbatim, or
// for a name in any letter case.
func keptIn(a anchor, text, lower string) bool {
	if a.class == anchorName {
		return strings.Contains(lower, strings.ToLower(a.value))
	}
	return strings.Contains(text, a.value)
}

// defang makes an anchor inert inside the appendix: a link cannot be
// followed (hxxp, [.] for the dots of its host), an address cannot be
// mailed ([@]), and no markup, quoting or line break survives, so an
// identifier harvested from untrusted text cannot close the envelope or
// pass for an instruction.
func defang(a anchor) string {
	v := strings.Map(func(r rune) rune {
		switch r {
		case '<', '>', '`', '\n', '\r', '\t':
			return -1
		}
		return r
	}, a.value)
	switch a.class {
	case anchorURL:
		v = strings.Replace(v, "http", "hxxp", 1)
		if i := strings.Index(v, "://"); i >= 0 {
			host, path, _ := strings.Cut(v[i+3:], "/")
			v = v[:i+3] + strings.ReplaceAll(host, ".", "[.]")
			if path != "" {
				v += "/" + path
			}
		}
	case anchorEmail:
		user, host, _ := strings.Cut(v, "@")
		v = user + "[@]" + strings.ReplaceAll(host, ".", "[.]")
	}
	return v
}

// auditResult is what the audit of one summary found.
type auditResult struct {
	anchors  []string // every anchor the summary now carries (note or appendix)
	kept     int      // carried by the summarizer's own note
	dropped  int      // missing from the note
	restored int      // of those, carried back by the appendix
	appendix string
}

// audit checks note against anchors and builds the appendix of the ones it
// dropped, in at most room bytes (class order, then harvest priority).
func audit(anchors []anchor, note string, room int) auditResult {
	var r auditResult
	lower := strings.ToLower(note)
	var missing []anchor
	for _, a := range anchors {
		if keptIn(a, note, lower) {
			r.kept++
			r.anchors = append(r.anchors, a.value)
			continue
		}
		missing = append(missing, a)
	}
	r.dropped = len(missing)
	if len(missing) == 0 {
		return r
	}
	const head = "\n\nIdentifiers the note left out (machine appendix, defanged: hxxp is http, [.] a dot, [@] an at sign):"
	var b strings.Builder
	b.WriteString(head)
	for _, class := range anchorClasses {
		var vals []string
		for _, a := range missing {
			if a.class == class {
				vals = append(vals, a.value)
			}
		}
		if len(vals) == 0 {
			continue
		}
		line := "\n- " + class + ":"
		if b.Len()+len(line) > room {
			break
		}
		b.WriteString(line)
		for _, a := range missing {
			if a.class != class {
				continue
			}
			item := " " + defang(a) + ";"
			if b.Len()+len(item) > room {
				continue
			}
			b.WriteString(item)
			r.restored++
			r.anchors = append(r.anchors, a.value)
		}
	}
	if r.restored == 0 {
		return r
	}
	r.appendix = b.String()
	return r
}

// anchorValues lists the values of anchors, for the summarizer's prompt.
func anchorValues(anchors []anchor) []string {
	out := make([]string, 0, len(anchors))
	for _, a := range anchors {
		out = append(out, a.value)
	}
	return slices.Clip(out)
}
