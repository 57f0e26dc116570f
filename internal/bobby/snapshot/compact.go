package snapshot

import (
	"strconv"
	"strings"

	"github.com/deltaharness/delta/internal/clip"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
)

// Caps on one line, so one huge label cannot eat the byte budget.
const (
	maxNameRunes  = 160
	maxValueRunes = 200
	maxTextRunes  = 300
)

// transparent roles are structure an agent does not act on: the node is not
// shown, its children move up to its depth.
var transparent = map[string]bool{
	"none": true, "presentation": true, "generic": true, "LabelText": true,
	"strong": true, "emphasis": true, "paragraph": true, "Section": true,
	"time": true, "mark": true, "code": true, "subscript": true, "superscript": true,
	"insertion": true, "deletion": true, "Abbr": true, "Ruby": true, "Pre": true,
	"blockquote": true, "Canvas": true, "rowgroup": true, "cell": true,
	"MenuListPopup": true, "Legend": true, "caption": true, "Unknown": true,
	"DescriptionList": true, "term": true, "definition": true, "Details": true,
	"sectionheader": true, "sectionfooter": true,
}

// dropped roles never show, nor does anything under them.
var dropped = map[string]bool{
	"InlineTextBox": true, "ListMarker": true, "LineBreak": true,
}

// namedOnly roles show only when they carry a name: an unnamed region or
// group is just a box.
var namedOnly = map[string]bool{
	"region": true, "group": true, "figure": true, "img": true, "image": true,
	"article": true, "Section": true, "search": true,
}

// inline roles do not start a new text block: "You have <strong>2</strong>
// items" collapses into one text line.
var inline = map[string]bool{
	"strong": true, "emphasis": true, "code": true, "mark": true, "subscript": true,
	"superscript": true, "time": true, "Abbr": true, "insertion": true, "deletion": true,
	"none": true, "presentation": true,
}

// valueRoles show their value after the line and hide their inner text.
var valueRoles = map[string]bool{
	"textbox": true, "searchbox": true, "combobox": true, "spinbutton": true,
	"slider": true, "progressbar": true, "meter": true, "scrollbar": true,
	"Date": true, "DateTime": true, "InputTime": true, "ColorWell": true,
}

// opaque roles hide their children: date and time inputs hold their parts
// (month, day, year, a picker button) in a user-agent shadow root, which are
// internals, not page content.
var opaque = map[string]bool{"Date": true, "DateTime": true, "InputTime": true, "ColorWell": true}

// interesting roles survive Options.Interesting.
var interesting = map[string]bool{
	"banner": true, "navigation": true, "main": true, "contentinfo": true,
	"complementary": true, "region": true, "search": true, "form": true,
	"heading": true, "link": true, "button": true, "textbox": true, "searchbox": true,
	"combobox": true, "listbox": true, "option": true, "checkbox": true, "radio": true,
	"radiogroup": true, "switch": true, "slider": true, "spinbutton": true,
	"menu": true, "menubar": true, "menuitem": true, "menuitemcheckbox": true,
	"menuitemradio": true, "tab": true, "tablist": true, "tree": true, "treeitem": true,
	"dialog": true, "alertdialog": true, "alert": true, "status": true, "iframe": true,
	"group": true, "grid": true, "gridcell": true, "date": true, "datetime": true,
	"time": true, "color": true,
}

// displayRole maps Chromium's internal role names to the names agents use.
func displayRole(role string) string {
	switch role {
	case "RootWebArea", "WebArea":
		return "document"
	case "Iframe", "IframePresentational":
		return "iframe"
	case "StaticText":
		return "text"
	case "image":
		return "img"
	case "Date":
		return "date"
	case "DateTime":
		return "datetime"
	case "InputTime":
		return "time"
	case "ColorWell":
		return "color"
	case "DisclosureTriangle":
		return "button"
	case "MenuListOption", "ListBoxOption":
		return "option"
	}
	return role
}

// flattener turns the tree into the shown nodes in document order.
type flattener struct {
	out         []Node
	interesting bool
	labels      map[cdp.BackendNodeID]bool // label elements that name a control
	lastBlock   *axNode                    // block of the last text node shown
	lastRaw     string                     // raw text of the last text node, spacing kept
}

type walkState struct {
	depth  int
	name   string // lower-cased name of the nearest shown ancestor
	noText bool   // inside a control that shows its value instead
	inLbl  bool   // inside a label that names a control
	block  *axNode
}

// flatten returns the nodes to show under root. A scoped root is shown
// itself; the page root (the document) is not.
func flatten(tree *axTree, root *axNode, scoped, interestingOnly bool) []Node {
	f := &flattener{interesting: interestingOnly, labels: map[cdp.BackendNodeID]bool{}}
	tree.root.walk(func(n *axNode) bool {
		for _, l := range n.labels {
			f.labels[l] = true
		}
		return true
	})
	st := walkState{block: root}
	if scoped {
		f.visit(root, st, true)
	} else {
		for _, c := range root.children {
			f.visit(c, st, false)
		}
	}
	return f.out
}

func (f *flattener) visit(n *axNode, st walkState, force bool) {
	if dropped[n.role] {
		return
	}
	if n.labels == nil && f.labels[n.backend] {
		st.inLbl = true
	}
	if n.role == "StaticText" {
		f.text(n, st)
		return
	}
	show := force || f.shows(n)
	if !n.ignored && !inline[n.role] {
		st.block = n
	}
	if show {
		f.out = append(f.out, f.node(n, st.depth))
		f.lastBlock = nil
		st.depth++
		st.name = strings.ToLower(normalize(n.name))
		if valueRoles[n.role] {
			st.noText = true
			// A collapsed <select> lists its options in a popup; they belong
			// to form_snapshot, not to every page snapshot.
			if n.role == "combobox" && n.prop(accessibility.PropertyNameExpanded) != "true" {
				return
			}
			if opaque[n.role] {
				return
			}
		}
	}
	for _, c := range n.children {
		f.visit(c, st, false)
	}
	if show || !inline[n.role] {
		f.lastBlock = nil // a block ended: the next text starts a new line
	}
}

// shows reports whether a node gets its own line.
func (f *flattener) shows(n *axNode) bool {
	if n.ignored || transparent[n.role] || n.role == "" {
		return false
	}
	if namedOnly[n.role] && strings.TrimSpace(n.name) == "" {
		return false
	}
	if f.interesting && !interesting[displayRole(n.role)] {
		return false
	}
	return true
}

// text shows a static text node unless it repeats what is already shown:
// the name of its control, the label of a control, or a field's value.
func (f *flattener) text(n *axNode, st walkState) {
	if f.interesting || st.noText || st.inLbl || n.ignored {
		return
	}
	t := normalize(n.name)
	if t == "" {
		return
	}
	if st.name != "" && strings.Contains(st.name, strings.ToLower(t)) {
		return
	}
	if last := len(f.out) - 1; last >= 0 && f.lastBlock == st.block && f.out[last].Role == "text" && f.out[last].Depth == st.depth {
		// The raw pieces carry the page's own spacing: "You have " +
		// "2 items" reads as written.
		if len(f.lastRaw) < 4*maxTextRunes {
			f.lastRaw += n.name
		}
		f.out[last].Name = clip.Runes(normalize(f.lastRaw), maxTextRunes)
		return
	}
	f.out = append(f.out, Node{Role: "text", Name: clip.Runes(t, maxTextRunes), Depth: st.depth, FrameID: string(n.frame)})
	f.lastBlock = st.block
	f.lastRaw = n.name
}

// node builds the shown node for n.
func (f *flattener) node(n *axNode, depth int) Node {
	out := Node{
		Role:    displayRole(n.role),
		Name:    clip.Runes(normalize(n.name), maxNameRunes),
		Depth:   depth,
		FrameID: string(n.frame),
	}
	if n.backend != 0 {
		out.Ref = RefOf(n.backend)
	}
	if valueRoles[n.role] || n.value != "" {
		v := n.value
		if isMasked(v) {
			out.HasValue = true
		} else if v != "" && v != n.name {
			out.Value = clip.Runes(v, maxValueRunes)
		}
	}
	out.States = states(n)
	if lv, err := strconv.Atoi(n.prop(accessibility.PropertyNameLevel)); err == nil && n.role == "heading" {
		out.Level = lv
	}
	if n.role == "link" {
		out.URL = n.prop(accessibility.PropertyNameURL)
	}
	return out
}

// isMasked reports a password field's value: Chromium exposes it as one
// bullet per character, so even its length must not leak.
func isMasked(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		if r != '•' && r != '●' {
			return false
		}
	}
	return true
}

// states lists the boolean states worth showing, in a fixed order.
func states(n *axNode) []string {
	var out []string
	add := func(s string) { out = append(out, s) }
	switch n.prop(accessibility.PropertyNameChecked) {
	case "true":
		add("checked")
	case "mixed":
		add("mixed")
	}
	switch n.prop(accessibility.PropertyNamePressed) {
	case "true":
		add("pressed")
	case "mixed":
		add("mixed")
	}
	if n.prop(accessibility.PropertyNameSelected) == "true" {
		add("selected")
	}
	switch n.prop(accessibility.PropertyNameExpanded) {
	case "true":
		add("expanded")
	case "false":
		add("collapsed")
	}
	if n.prop(accessibility.PropertyNameDisabled) == "true" {
		add("disabled")
	}
	if n.prop(accessibility.PropertyNameReadonly) == "true" {
		add("readonly")
	}
	if n.prop(accessibility.PropertyNameRequired) == "true" {
		add("required")
	}
	if v := n.prop(accessibility.PropertyNameInvalid); v != "" && v != "false" {
		add("invalid")
	}
	if n.prop(accessibility.PropertyNameFocused) == "true" && n.role != "RootWebArea" {
		add("focused")
	}
	return out
}

// normalize collapses runs of white space and trims.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// refRoles are the roles whose lines carry [ref=eN] in the text: what an
// agent clicks, types into, selects, or scopes into (iframes, dialogs).
// Landmarks, headings, regions, lists and text are scoped or named by role
// and name ({"role":"main"}, {"role":"region","name":"Products"}), so a ref
// there would only cost bytes. Every node keeps its ref in Nodes, and any
// ref, shown or not, resolves all the same.
var refRoles = map[string]bool{
	"button": true, "link": true, "textbox": true, "searchbox": true, "combobox": true,
	"listbox": true, "option": true, "checkbox": true, "radio": true, "switch": true,
	"slider": true, "spinbutton": true, "scrollbar": true, "menuitem": true,
	"menuitemcheckbox": true, "menuitemradio": true, "tab": true, "treeitem": true,
	"gridcell": true, "date": true, "datetime": true, "time": true, "color": true,
	"iframe": true, "dialog": true, "alertdialog": true,
}

// line renders one node as text: two spaces of indentation per depth carry
// the structure, then role "name" [states] [ref=eN]: "value".
func line(n Node) string {
	return lineWith(n, 0)
}

// lineWith renders n; headingLevel > 0 marks a link folded into the
// heading it was the only content of ([h3]).
func lineWith(n Node, headingLevel int) string {
	var b strings.Builder
	for range n.Depth {
		b.WriteString("  ")
	}
	if n.Role == "text" {
		b.WriteString("text: ")
		b.WriteString(n.Name)
		return b.String()
	}
	b.WriteString(n.Role)
	if n.Name != "" {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(n.Name))
	}
	if headingLevel > 0 {
		b.WriteString(" [h")
		b.WriteString(strconv.Itoa(headingLevel))
		b.WriteString("]")
	}
	for _, s := range n.States {
		b.WriteString(" [")
		b.WriteString(s)
		b.WriteString("]")
	}
	if n.Level > 0 {
		b.WriteString(" [level=")
		b.WriteString(strconv.Itoa(n.Level))
		b.WriteString("]")
	}
	if n.HasValue {
		b.WriteString(" [hasValue]")
	}
	if n.Ref != "" && refRoles[n.Role] {
		b.WriteString(" [ref=")
		b.WriteString(n.Ref)
		b.WriteString("]")
	}
	if n.Value != "" {
		b.WriteString(": ")
		b.WriteString(strconv.Quote(n.Value))
	}
	return b.String()
}

// foldsLink reports whether nodes[i] is a heading whose only content is a
// link of the same name (a card title): the two render as one link line
// marked [hN], since the heading adds nothing an agent acts on.
func foldsLink(nodes []Node, i int) bool {
	if i+1 >= len(nodes) {
		return false
	}
	h, l := nodes[i], nodes[i+1]
	if h.Role != "heading" || l.Role != "link" || l.Depth != h.Depth+1 || h.Name != l.Name || len(h.States) > 0 {
		return false
	}
	return i+2 >= len(nodes) || nodes[i+2].Depth <= h.Depth
}

// textLine is one rendered line and the number of nodes it shows; fold
// marks a heading+link pair, which the node bound may split.
type textLine struct {
	text  string
	nodes int
	fold  bool
}

// Repeated sibling structures (the cards of a grid, the items of a list,
// the rows of a table) render as one header line naming the shape and one
// line per item, its cells separated by " | ":
//
//	list "Products"
//	  120 × listitem (link [h3] | text | button):
//	  - "Alpine jacket" [ref=e12] | Waterproof shell. €189 | "Add to cart" [ref=e14]
//
// A run is at least minRepeat consecutive siblings (or groups of up to
// maxPeriod siblings, for cards whose box the tree flattens away) of the
// same shape: the same roles at the same depths. Each item holds two nodes
// or more and something to act on, so a plain run of links or paragraphs
// keeps its lines.
const (
	minRepeat = 3
	maxPeriod = 6
)

// textLines renders nodes, folding heading+link pairs and compacting runs
// of same-shaped siblings.
func textLines(nodes []Node) []textLine {
	r := &lineRenderer{nodes: nodes, out: make([]textLine, 0, len(nodes))}
	if len(nodes) > 0 {
		r.forest(0, len(nodes))
	}
	return r.out
}

type lineRenderer struct {
	nodes []Node
	out   []textLine
}

// forest renders nodes[lo:hi], whose roots sit at the depth of nodes[lo].
func (r *lineRenderer) forest(lo, hi int) {
	d := r.nodes[lo].Depth
	var starts []int
	for i := lo; i < hi; i++ {
		if r.nodes[i].Depth <= d {
			starts = append(starts, i)
		}
	}
	ends := make([]int, len(starts))
	sigs := make([]string, len(starts))
	for k, s := range starts {
		ends[k] = hi
		if k+1 < len(starts) {
			ends[k] = starts[k+1]
		}
		sigs[k] = r.shape(s, ends[k])
	}
	for k := 0; k < len(starts); {
		if p, reps := r.run(starts, ends, sigs, k); reps > 0 {
			r.group(starts, ends, k, p, reps)
			k += p * reps
			continue
		}
		i, end := starts[k], ends[k]
		k++
		if foldsLink(r.nodes, i) {
			r.out = append(r.out, textLine{text: r.folded(i), nodes: 2, fold: true})
			continue
		}
		r.out = append(r.out, textLine{text: line(r.nodes[i]), nodes: 1})
		if end > i+1 {
			r.forest(i+1, end)
		}
	}
}

// folded renders the heading at i and its link as one link line.
func (r *lineRenderer) folded(i int) string {
	l := r.nodes[i+1]
	l.Depth = r.nodes[i].Depth
	return lineWith(l, headingLevel(r.nodes[i]))
}

func headingLevel(h Node) int {
	if h.Level == 0 {
		return 2 // a heading without aria-level is an h2 to every reader
	}
	return h.Level
}

// cell is one shown part of an item: a node, or a folded heading+link.
type cell struct {
	i    int // the node (for a fold, the heading)
	fold bool
}

// cells lists the parts of the subtree nodes[lo:hi] that carry content:
// text, a name, a value, or something to act on. Unnamed boxes (a
// listitem, a row) only shape the item.
func (r *lineRenderer) cells(lo, hi int) []cell {
	var out []cell
	for i := lo; i < hi; i++ {
		n := r.nodes[i]
		if foldsLink(r.nodes, i) && i+1 < hi {
			out = append(out, cell{i: i, fold: true})
			i++
			continue
		}
		if isCell(n) {
			out = append(out, cell{i: i})
		}
	}
	return out
}

func isCell(n Node) bool {
	return n.Role == "text" || n.Name != "" || n.Value != "" || n.HasValue || refRoles[n.Role]
}

// shape is the signature of the subtree nodes[lo:hi]: each node's depth
// below the first, role, heading level and whether it is a cell.
func (r *lineRenderer) shape(lo, hi int) string {
	var b strings.Builder
	base := r.nodes[lo].Depth
	for i := lo; i < hi; i++ {
		n := r.nodes[i]
		b.WriteString(strconv.Itoa(n.Depth - base))
		b.WriteByte(':')
		b.WriteString(n.Role)
		if n.Level > 0 {
			b.WriteString(":" + strconv.Itoa(n.Level))
		}
		if isCell(n) {
			b.WriteString(":c")
		}
		b.WriteByte(';')
	}
	return b.String()
}

// run finds the longest run of repeated items starting at sibling k: the
// period p (siblings per item) and the repetitions, or 0 repetitions.
func (r *lineRenderer) run(starts, ends []int, sigs []string, k int) (period, reps int) {
	best := 0
	for p := 1; p <= maxPeriod && k+p*minRepeat <= len(sigs); p++ {
		n := 1
		for k+(n+1)*p <= len(sigs) && slicesEqual(sigs[k+n*p:k+(n+1)*p], sigs[k:k+p]) {
			n++
		}
		if n < minRepeat || p*n <= best {
			continue
		}
		lo, hi := starts[k], ends[k+p-1]
		if hi-lo < 2 || !r.actionable(lo, hi) {
			continue
		}
		best, period, reps = p*n, p, n
	}
	return period, reps
}

func slicesEqual(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// actionable reports whether nodes[lo:hi] hold something an agent acts on.
func (r *lineRenderer) actionable(lo, hi int) bool {
	for i := lo; i < hi; i++ {
		if refRoles[r.nodes[i].Role] {
			return true
		}
	}
	return false
}

// group renders reps items of p siblings from sibling k: the header, then
// one line per item.
func (r *lineRenderer) group(starts, ends []int, k, p, reps int) {
	first := r.nodes[starts[k]]
	indent := strings.Repeat("  ", first.Depth)
	var head strings.Builder
	head.WriteString(indent + strconv.Itoa(reps) + " × ")
	lo, hi := starts[k], ends[k+p-1]
	if p == 1 && !isCell(first) {
		head.WriteString(first.Role + " ")
	}
	var roles []string
	for _, c := range r.cells(lo, hi) {
		n := r.nodes[c.i]
		switch {
		case c.fold:
			roles = append(roles, r.nodes[c.i+1].Role+" [h"+strconv.Itoa(headingLevel(n))+"]")
		case n.Level > 0:
			roles = append(roles, n.Role+" [level="+strconv.Itoa(n.Level)+"]")
		default:
			roles = append(roles, n.Role)
		}
	}
	head.WriteString("(" + strings.Join(roles, " | ") + "):")
	r.out = append(r.out, textLine{text: head.String()})
	for it := range reps {
		lo, hi := starts[k+it*p], ends[k+it*p+p-1]
		parts := r.cells(lo, hi)
		texts := make([]string, len(parts))
		for j, c := range parts {
			if c.fold {
				texts[j] = cellText(r.nodes[c.i+1])
			} else {
				texts[j] = cellText(r.nodes[c.i])
			}
		}
		r.out = append(r.out, textLine{text: indent + "- " + strings.Join(texts, " | "), nodes: hi - lo})
	}
}

// cellText renders a node inside an item line: as its line would, without
// the indentation and the role the header names.
func cellText(n Node) string {
	if n.Role == "text" {
		return n.Name
	}
	n.Depth = 0
	l := line(n)
	l = strings.TrimPrefix(l, n.Role)
	l = strings.TrimPrefix(l, " ")
	if i := strings.Index(l, " [level="); i >= 0 {
		j := strings.Index(l[i+1:], "]")
		l = l[:i] + l[i+1+j+1:]
	}
	if l == "" {
		return `""`
	}
	return l
}

// repairTruncated is what a truncated snapshot tells the agent to do.
const repairTruncated = `scope the snapshot with target (e.g. {"role":"main"} or a ref from this snapshot), ` +
	`or raise maxNodes/maxBytes`

// render applies the bounds and builds the snapshot text.
func render(nodes []Node, opts Options) *Snapshot {
	s := &Snapshot{TotalNodes: len(nodes)}
	lines := textLines(nodes)
	total := 0
	for _, l := range lines {
		total += len(l.text) + 1
	}
	shown, nLines := len(nodes), len(lines)
	if shown > opts.MaxNodes || total > opts.MaxBytes {
		s.Truncated = true
		s.Repair = repairTruncated
		// Room for the trailer line that repeats the repair for agents that
		// read only the text.
		budget := opts.MaxBytes - 320
		size := 0
		shown, nLines = 0, 0
		for nLines < len(lines) {
			l := lines[nLines]
			if shown+l.nodes > opts.MaxNodes && l.fold {
				// Only the heading of a folded pair fits the node bound.
				l = textLine{text: line(nodes[shown]), nodes: 1}
				lines[nLines] = l
			}
			if shown+l.nodes > opts.MaxNodes || size+len(l.text)+1 > budget {
				break
			}
			size += len(l.text) + 1
			shown += l.nodes
			nLines++
		}
	}
	var b strings.Builder
	for _, l := range lines[:nLines] {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	if s.Truncated {
		b.WriteString("# truncated: showing ")
		b.WriteString(strconv.Itoa(shown))
		b.WriteString(" of ")
		b.WriteString(strconv.Itoa(len(nodes)))
		b.WriteString(" nodes; ")
		b.WriteString(repairTruncated)
		b.WriteByte('\n')
	}
	s.Nodes = nodes[:shown:shown]
	if s.Nodes == nil {
		s.Nodes = []Node{}
	}
	s.ShownNodes = shown
	s.Text = b.String()
	s.Bytes = len(s.Text)
	return s
}
