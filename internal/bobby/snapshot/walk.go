package snapshot

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
)

// walkJS is the in-page accessibility walker for engines that have no
// accessibility-tree command (Firefox over WebDriver BiDi). It computes
// roles (explicit, else the implicit HTML mapping) and accessible names in
// the role vocabulary of Chromium's tree, so one renderer serves both.
//
//go:embed walk.js
var walkJS string

// WalkFunction is the walker as a JavaScript function declaration taking
// (op, arg):
//
//   - ("walk", base) returns {json, frames}: json is the tree as JSON text
//     (see [ParseWalk]); frames[i] is the contentWindow of the iframe node
//     with index i, which a protocol serializes as its browsing-context id.
//     base is the first ref number to hand out when the document has no
//     refs yet; pass the previous walk's Next so refs never repeat within a
//     page across navigations.
//   - ("locate", n) returns {json, el, root}: where the element behind ref
//     eN is (see [ParseLocation]), the element itself and the shadow root
//     holding it (null in a document); ("reveal", n) first scrolls it, and
//     every frame holding it, into view.
//   - ("describe", {base, els}) returns {json, frames}: the ref of each
//     element, and its role and name when a snapshot would show it (see
//     [ParseDescribe]); frames[i] is the contentWindow of element i when
//     it is an iframe. base is as for "walk".
//
// Refs are kept in the page (a WeakMap from element to number and back), so
// the same element keeps its ref across walks for as long as it lives.
// Run it in an isolated realm (a BiDi sandbox) so page scripts can neither
// see nor alter the map.
func WalkFunction() string { return walkJS }

// walkNode is one node of the walker's JSON: short keys keep a large page's
// tree small on the wire.
type walkNode struct {
	Role     string            `json:"r"`
	Name     string            `json:"n"`
	Value    string            `json:"v"`
	ID       int64             `json:"id"`
	Labels   []int64           `json:"l"`
	Props    map[string]string `json:"p"`
	Ignored  bool              `json:"ig"`
	Frame    *int              `json:"f"`
	Grafted  bool              `json:"g"`
	Children []walkNode        `json:"c"`
}

// Walk is one walker result, ready to render.
type Walk struct {
	tree *axTree
	// Next is the first ref number the page has not handed out: the base of
	// the next walk of this page.
	Next int64
}

// maxWalkNodes bounds the nodes a walk may carry: far above any page a
// snapshot can show, low enough that a hostile page cannot exhaust memory.
const maxWalkNodes = 200_000

// ParseWalk decodes the walker's JSON text. frames[i] is the browsing
// context id of iframe index i ("" when unknown); nodes inside an iframe
// carry it as their FrameID. Malformed input is an error, never a panic.
func ParseWalk(raw []byte, frames []string) (*Walk, error) {
	var doc struct {
		Root *walkNode `json:"root"`
		Next int64     `json:"next"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("parse walk: %w", err)
	}
	if doc.Root == nil {
		return nil, errors.New("parse walk: no root")
	}
	tree := &axTree{byBackend: map[cdp.BackendNodeID]*axNode{}}
	count := 0
	var build func(w *walkNode, frame cdp.FrameID, parent *axNode) (*axNode, error)
	build = func(w *walkNode, frame cdp.FrameID, parent *axNode) (*axNode, error) {
		count++
		if count > maxWalkNodes {
			return nil, fmt.Errorf("parse walk: more than %d nodes", maxWalkNodes)
		}
		if w.ID < 0 {
			return nil, fmt.Errorf("parse walk: negative id %d", w.ID)
		}
		n := &axNode{role: w.Role, name: w.Name, value: w.Value, ignored: w.Ignored,
			backend: cdp.BackendNodeID(w.ID), frame: frame, parent: parent, grafted: w.Grafted}
		if len(w.Props) > 0 {
			n.props = make(map[accessibility.PropertyName]string, len(w.Props))
			for k, v := range w.Props {
				n.props[accessibility.PropertyName(k)] = v
			}
		}
		for _, l := range w.Labels {
			if l > 0 {
				n.labels = append(n.labels, cdp.BackendNodeID(l))
			}
		}
		if n.backend != 0 {
			tree.byBackend[n.backend] = n
		}
		inner := frame
		if w.Frame != nil {
			if *w.Frame >= 0 && *w.Frame < len(frames) && frames[*w.Frame] != "" {
				inner = cdp.FrameID(frames[*w.Frame])
			}
			if !w.Grafted {
				tree.skippedFrames++
			}
		}
		for i := range w.Children {
			c, err := build(&w.Children[i], inner, n)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
		}
		return n, nil
	}
	root, err := build(doc.Root, "", nil)
	if err != nil {
		return nil, err
	}
	tree.root = root
	tree.title = root.name
	tree.url = root.prop(accessibility.PropertyNameURL)
	return &Walk{tree: tree, Next: doc.Next}, nil
}

// errSelectorScope is what a selector scope answers on a walked page: the
// walker resolves refs and role/name targets only.
var errSelectorScope = fmt.Errorf("%w: a selector target is not supported on this engine; "+
	"scope by ref or by role and name from a snapshot", ErrInvalidTarget)

// Snapshot renders the walk exactly as [Take] renders Chromium's tree: the
// same bounds, refs, text collapsing and repeated-item compaction. A scope
// target may be a ref or a role and name.
func (w *Walk) Snapshot(opts Options) (*Snapshot, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("take snapshot: %w", err)
	}
	root := w.tree.root
	if t := opts.Target; t != nil {
		switch {
		case t.Selector != "":
			return nil, fmt.Errorf("take snapshot: scope: %w", errSelectorScope)
		case t.Ref != "":
			id, err := ParseRef(t.Ref)
			if err != nil {
				return nil, fmt.Errorf("take snapshot: scope: %w", err)
			}
			n := w.tree.byBackend[id]
			if n == nil {
				return nil, fmt.Errorf("take snapshot: scope: %w", &NotFoundError{Target: *t, Reason: fmt.Sprintf("ref %s is not in the page (hidden or removed)", t.Ref)})
			}
			if t.Role != "" && !strings.EqualFold(displayRole(n.role), displayRole(t.Role)) {
				return nil, fmt.Errorf("take snapshot: scope: %w", &NotFoundError{Target: *t, Reason: fmt.Sprintf("ref %s now names a %s, not a %s: the page changed", t.Ref, displayRole(n.role), t.Role)})
			}
			root = n
		default:
			root, err = pickSemantic(w.tree, *t)
			if err != nil {
				return nil, fmt.Errorf("take snapshot: scope: %w", err)
			}
		}
	}
	nodes := flatten(w.tree, root, opts.Target != nil, opts.Interesting)
	s := render(nodes, opts)
	s.URL = w.tree.url
	s.Title = w.tree.title
	s.SkippedFrames = w.tree.skippedFrames
	if opts.Target != nil {
		scope := *opts.Target
		s.Scope = &scope
	}
	s.TakenAt = time.Now().UTC()
	return s, nil
}

// Pick resolves a role and name target against the walk, as [Resolve] does
// against Chromium's tree: exact names first, then folded; several matches
// without an index give an [*AmbiguousError] with the candidates.
func (w *Walk) Pick(t Target) (NodeRef, error) {
	if err := t.Validate(); err != nil {
		return NodeRef{}, fmt.Errorf("resolve target: %w", err)
	}
	if t.Ref != "" || t.Selector != "" {
		return NodeRef{}, fmt.Errorf("resolve target: %w: Pick takes a role and name target", ErrInvalidTarget)
	}
	n, err := pickSemantic(w.tree, t)
	if err != nil {
		return NodeRef{}, fmt.Errorf("resolve target: %w", err)
	}
	return NodeRef{BackendNodeID: n.backend, FrameID: n.frame}, nil
}

// Location is where the walker found the element behind a ref: its role
// and name now, and its center in the top-level viewport in CSS pixels
// (frame offsets added), where a pointer action clicks it.
type Location struct {
	Found     bool    `json:"found"`
	Connected bool    `json:"connected"`
	Role      string  `json:"role"`
	Name      string  `json:"name"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	Width     float64 `json:"width"`
	Height    float64 `json:"height"`
	Visible   bool    `json:"visible"`
	// Hit is true when the point at the center lands on the element or
	// inside it, not on something covering it.
	Hit     bool `json:"hit"`
	InFrame bool `json:"inFrame"`
}

// ParseLocation decodes the walker's "locate" answer.
func ParseLocation(raw []byte) (Location, error) {
	var l Location
	if err := json.Unmarshal(raw, &l); err != nil {
		return Location{}, fmt.Errorf("parse location: %w", err)
	}
	return l, nil
}

// Check turns a location into the error Resolve gives for the same ref: a
// ref the page never handed out or whose element died, a removed element,
// or one whose role changed (the target's role, when set, must still hold).
func (l Location) Check(t Target) error {
	switch {
	case !l.Found:
		return &NotFoundError{Target: t, Reason: fmt.Sprintf("ref %s names no element in this page (the element was removed, or the ref came from another page)", t.Ref)}
	case !l.Connected:
		return &NotFoundError{Target: t, Reason: fmt.Sprintf("ref %s was removed from the page", t.Ref)}
	case t.Role != "" && !strings.EqualFold(displayRole(l.Role), displayRole(t.Role)):
		return &NotFoundError{Target: t, Reason: fmt.Sprintf("ref %s now names a %s, not a %s: the page changed", t.Ref, displayRole(l.Role), t.Role)}
	}
	return nil
}

// Described is one element of the walker's "describe" answer: its ref
// ("" for an entry that was no element), the node a snapshot shows for it
// (nil when a snapshot leaves it out, as [Describe] does: hidden, inert,
// no role), and for an iframe its browsing context id.
type Described struct {
	Ref   string
	Node  *Node
	Frame string
}

// ParseDescribe decodes the walker's "describe" JSON text; frames[i] is the
// browsing context id of element i's iframe ("" when none). It also returns
// the first ref number the page has not handed out. Malformed input is an
// error, never a panic.
func ParseDescribe(raw []byte, frames []string) ([]Described, int64, error) {
	var doc struct {
		Nodes []*struct {
			ID   int64   `json:"id"`
			Role *string `json:"r"`
			Name string  `json:"n"`
		} `json:"nodes"`
		Next int64 `json:"next"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, 0, fmt.Errorf("parse describe: %w", err)
	}
	if len(doc.Nodes) > maxWalkNodes {
		return nil, 0, fmt.Errorf("parse describe: more than %d nodes", maxWalkNodes)
	}
	f := &flattener{}
	out := make([]Described, len(doc.Nodes))
	for i, d := range doc.Nodes {
		if d == nil || d.ID <= 0 {
			continue
		}
		id := cdp.BackendNodeID(d.ID)
		out[i].Ref = RefOf(id)
		if i < len(frames) {
			out[i].Frame = frames[i]
		}
		if d.Role != nil {
			n := f.node(&axNode{role: *d.Role, name: d.Name, backend: id}, 0)
			out[i].Node = &n
		}
	}
	return out, doc.Next, nil
}
