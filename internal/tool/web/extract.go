package web

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// page is the readable content of an HTML document.
type page struct {
	title string
	text  string
}

// maxLinkURL bounds a link target kept in the text; longer ones (tracking
// URLs, data: blobs) are dropped and the link text kept.
const maxLinkURL = 300

// skipped elements carry no readable text, or only boilerplate around it.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Canvas: true, atom.Iframe: true, atom.Object: true,
	atom.Embed: true, atom.Head: true, atom.Nav: true, atom.Footer: true, atom.Select: true,
	atom.Button: true, atom.Form: true, atom.Dialog: true,
}

// block elements start a new line of text.
var block = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Br: true,
	atom.Dd: true, atom.Details: true, atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true,
	atom.Figcaption: true, atom.Figure: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Header: true, atom.Hr: true, atom.Li: true, atom.Main: true,
	atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true, atom.Summary: true, atom.Table: true,
	atom.Tr: true, atom.Ul: true, atom.Caption: true, atom.Tbody: true, atom.Thead: true, atom.Tfoot: true,
}

// spaced blocks are followed by a blank line.
var spaced = map[atom.Atom]bool{
	atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Pre: true, atom.Blockquote: true,
}

// extract turns an HTML document into readable text: block structure kept
// as lines, headings as #, list items as -, table cells separated by |,
// links as [text](url) resolved against base, preformatted text verbatim.
// The HTML parser never fails: malformed markup is repaired as browsers do.
func extract(src string, base *url.URL) page {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		return page{text: collapse(src)}
	}
	w := &textWriter{base: base}
	w.title = collapse(findTitle(doc))
	w.walk(doc)
	return page{title: w.title, text: w.finish()}
}

func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		return textOf(n)
	}
	if n.Type == html.ElementNode && (n.DataAtom == atom.Svg || n.DataAtom == atom.Body) {
		return ""
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return b.String()
}

// textWriter accumulates lines, collapsing whitespace outside <pre>.
type textWriter struct {
	base    *url.URL
	title   string
	out     strings.Builder
	line    strings.Builder // the line being built
	pre     int             // depth inside <pre>
	depth   int             // nesting, to bound recursion on hostile input
	flushes int             // lines ended so far
}

const maxDepth = 512

func (w *textWriter) walk(n *html.Node) {
	w.depth++
	defer func() { w.depth-- }()
	if w.depth > maxDepth {
		return
	}
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.ElementNode:
		if skipped[n.DataAtom] || hidden(n) {
			return
		}
	case html.DocumentNode:
	default:
		return
	}
	a := n.DataAtom
	if block[a] {
		w.newline()
	}
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		w.line.WriteString(strings.Repeat("#", int(a.String()[1]-'0')) + " ")
	case atom.Li:
		w.line.WriteString("- ")
	case atom.Td, atom.Th:
		if w.line.Len() > 0 {
			w.line.WriteString(" | ")
		}
	case atom.Img:
		if alt := strings.TrimSpace(attr(n, "alt")); alt != "" {
			w.text("[image: " + alt + "]")
		}
		return
	case atom.Pre:
		w.pre++
		defer func() { w.pre--; w.newline() }()
	case atom.A:
		w.link(n)
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
	if block[a] {
		w.newline()
	}
	if spaced[a] {
		w.blank()
	}
}

// link writes an anchor as [text](url) when its target is a plain web link.
func (w *textWriter) link(n *html.Node) {
	start, flushes := w.line.Len(), w.flushes
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
	href := strings.TrimSpace(attr(n, "href"))
	if href == "" || strings.HasPrefix(href, "#") {
		return
	}
	u, err := url.Parse(href)
	if err != nil {
		return
	}
	if w.base != nil {
		u = w.base.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || len(u.String()) > maxLinkURL {
		return
	}
	cur := w.line.String()
	if w.flushes != flushes || start > len(cur) {
		return // a block inside the link ended the line; keep its text only
	}
	label := strings.TrimSpace(cur[start:])
	if label == "" {
		return
	}
	w.line.Reset()
	w.line.WriteString(cur[:start])
	if start < len(cur) && cur[start] == ' ' {
		w.line.WriteByte(' ')
	}
	w.line.WriteString("[" + label + "](" + u.String() + ")")
}

func (w *textWriter) text(s string) {
	if w.pre > 0 {
		for i, part := range strings.Split(s, "\n") {
			if i > 0 {
				w.flush()
			}
			w.line.WriteString(part)
		}
		return
	}
	if s == "" {
		return
	}
	lead := isSpace(s[0])
	trail := isSpace(s[len(s)-1])
	words := strings.Fields(s)
	if len(words) == 0 {
		if w.line.Len() > 0 && !strings.HasSuffix(w.line.String(), " ") {
			w.line.WriteByte(' ')
		}
		return
	}
	if lead && w.line.Len() > 0 && !strings.HasSuffix(w.line.String(), " ") {
		w.line.WriteByte(' ')
	}
	w.line.WriteString(strings.Join(words, " "))
	if trail {
		w.line.WriteByte(' ')
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// flush ends the current line, even an empty one (inside <pre>).
func (w *textWriter) flush() {
	w.out.WriteString(strings.TrimRight(w.line.String(), " \t"))
	w.out.WriteByte('\n')
	w.line.Reset()
	w.flushes++
}

// newline ends the current line if it holds anything.
func (w *textWriter) newline() {
	if strings.TrimSpace(w.line.String()) == "" && w.pre == 0 {
		w.line.Reset()
		return
	}
	w.flush()
}

// blank puts one empty line after a paragraph-like block.
func (w *textWriter) blank() {
	w.newline()
	if s := w.out.String(); s != "" && !strings.HasSuffix(s, "\n\n") {
		w.out.WriteByte('\n')
	}
}

func (w *textWriter) finish() string {
	w.newline()
	// At most one blank line in a row, no blank lines at the edges.
	lines := strings.Split(w.out.String(), "\n")
	var b strings.Builder
	blank := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			blank = b.Len() > 0
			continue
		}
		if blank {
			b.WriteByte('\n')
			blank = false
		}
		b.WriteString(l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// hidden reports elements the page hides from readers.
func hidden(n *html.Node) bool {
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if a.Val == "true" {
				return true
			}
		case "style":
			st := strings.ReplaceAll(strings.ToLower(a.Val), " ", "")
			if strings.Contains(st, "display:none") || strings.Contains(st, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
