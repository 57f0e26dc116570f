package snapshot

import (
	"math"
	"strings"
	"unicode"
)

// ConfidenceFloor is the least confidence Ask answers with. Below it the
// honest answer is "nothing": the agent takes a snapshot instead of acting on
// a guess.
const ConfidenceFloor = 0.6

// ambiguityMargin is how close two candidates may score before Ask refuses
// to choose between them.
const ambiguityMargin = 0.1

// Answer binds a description to one node of a retained snapshot.
type Answer struct {
	Target     Target  `json:"target"`
	Confidence float64 `json:"confidence"`
	Ref        string  `json:"ref"`
}

// Ask matches a description ("the checkout button", "email field") to the
// node of snap it names. It answers only when one node fits clearly: every
// word of the description that is not a role word must occur in the node's
// name (else the match is partial), the best candidate must reach
// ConfidenceFloor, and no other candidate may come within ambiguityMargin of
// it (two controls with the same name). Otherwise it returns false: nothing
// is a real answer, not an error.
func Ask(snap *Snapshot, question string) (Answer, bool) {
	if snap == nil {
		return Answer{}, false
	}
	q := tokens(question)
	if len(q) == 0 {
		return Answer{}, false
	}
	var best, second float64
	var bestNode Node
	for _, n := range snap.Nodes {
		if n.Ref == "" || n.Role == "document" || n.Name == "" {
			continue
		}
		c := score(q, n)
		switch {
		case c > best:
			second, best, bestNode = best, c, n
		case c > second:
			second = c
		}
	}
	if best < ConfidenceFloor || best-second < ambiguityMargin {
		return Answer{}, false
	}
	return Answer{Target: bestNode.Target(), Confidence: math.Round(best*100) / 100, Ref: bestNode.Ref}, true
}

// score rates how well the description tokens q describe node n, in 0..1.
//
// The name part is 0.6 plus 0.4 times the share of the name's words the
// description mentions: "email" for a field named "Email address" scores
// 0.8, for one named "Email" 1.0. The role part multiplies it: 1.0 when the
// description's role words fit the role, 0.9 when it has none, 0.7 when they
// fit another role ("button" for a link named the same).
func score(q []string, n Node) float64 {
	name := tokens(n.Name)
	if len(name) == 0 {
		return 0
	}
	inName := map[string]bool{}
	for _, w := range name {
		inName[w] = true
	}
	matched := map[string]bool{}
	var roleWords []string
	for _, w := range q {
		switch {
		case inName[w]:
			matched[w] = true
		case roleWordRoles[w] != nil:
			// A role word the name does not contain describes the role.
			roleWords = append(roleWords, w)
		default:
			return 0 // a content word the name lacks: a partial match
		}
	}
	if len(matched) == 0 {
		return 0
	}
	covered := 0
	for _, w := range name {
		if matched[w] {
			covered++
		}
	}
	s := 0.6 + 0.4*float64(covered)/float64(len(name))
	switch {
	case len(roleWords) == 0:
		s *= 0.9
	case roleFits(roleWords, n.Role):
		s *= 1.0
	default:
		s *= 0.7
	}
	return s
}

// roleFits reports whether any role word names the node's role.
func roleFits(words []string, role string) bool {
	for _, w := range words {
		for _, r := range roleWordRoles[w] {
			if r == role {
				return true
			}
		}
	}
	return false
}

// roleWordRoles maps the words people use for controls to the roles they
// mean.
var roleWordRoles = map[string][]string{
	"button":     {"button"},
	"link":       {"link"},
	"field":      {"textbox", "searchbox", "combobox", "spinbutton"},
	"input":      {"textbox", "searchbox", "combobox", "spinbutton", "checkbox", "radio", "slider"},
	"box":        {"textbox", "searchbox", "combobox", "checkbox"},
	"textbox":    {"textbox", "searchbox"},
	"textarea":   {"textbox"},
	"text":       {"textbox", "searchbox"},
	"area":       {"textbox"},
	"checkbox":   {"checkbox", "switch", "menuitemcheckbox"},
	"check":      {"checkbox", "menuitemcheckbox"},
	"tickbox":    {"checkbox"},
	"toggle":     {"switch", "checkbox", "button"},
	"switch":     {"switch", "checkbox"},
	"radio":      {"radio", "menuitemradio"},
	"option":     {"radio", "option", "menuitemradio"},
	"dropdown":   {"combobox", "listbox"},
	"select":     {"combobox", "listbox"},
	"combo":      {"combobox"},
	"combobox":   {"combobox"},
	"list":       {"listbox", "list"},
	"listbox":    {"listbox"},
	"menu":       {"menu", "menubar", "combobox"},
	"item":       {"menuitem", "listitem", "option", "treeitem"},
	"heading":    {"heading"},
	"header":     {"heading", "banner"},
	"title":      {"heading"},
	"tab":        {"tab"},
	"slider":     {"slider"},
	"spinner":    {"spinbutton"},
	"image":      {"img"},
	"picture":    {"img"},
	"icon":       {"img", "button"},
	"dialog":     {"dialog", "alertdialog"},
	"popup":      {"dialog", "alertdialog", "menu"},
	"frame":      {"iframe"},
	"iframe":     {"iframe"},
	"form":       {"form"},
	"section":    {"region", "group"},
	"group":      {"group", "radiogroup"},
	"nav":        {"navigation"},
	"navigation": {"navigation"},
}

// stopWords carry no meaning for matching.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "where": true, "is": true, "are": true,
	"what": true, "which": true, "find": true, "locate": true, "click": true,
	"press": true, "tap": true, "me": true, "my": true, "of": true, "for": true, "on": true,
	"in": true, "at": true, "with": true, "this": true, "that": true, "it": true,
	"please": true, "control": true, "element": true, "called": true, "named": true,
	"labeled": true, "labelled": true, "page": true, "i": true, "can": true,
	"should": true, "do": true, "does": true, "to": true, "and": true, "or": true,
	"your": true, "our": true, "there": true, "here": true, "s": true,
}

// tokens lower-cases, splits on anything not a letter or digit, drops stop
// words and a plural "s" so "emails" finds "Email".
func tokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopWords[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// stem drops a plural ending; enough for control names, which are short.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "es") && strings.HasSuffix(w[:len(w)-2], "ss"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}
