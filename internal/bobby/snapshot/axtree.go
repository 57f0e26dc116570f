package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// axNode is one node of the accessibility tree of a page, with the trees of
// its iframes grafted under their iframe nodes.
type axNode struct {
	role     string
	name     string
	value    string
	ignored  bool
	backend  cdp.BackendNodeID
	frame    cdp.FrameID // frame whose document holds the node; empty for the main frame
	props    map[accessibility.PropertyName]string
	labels   []cdp.BackendNodeID // DOM nodes that label this one (labelledby)
	children []*axNode
	parent   *axNode
	grafted  bool // an iframe node whose document was read and grafted
}

// prop returns a property value as text ("true", "mixed", "2", "https://…").
func (n *axNode) prop(name accessibility.PropertyName) string { return n.props[name] }

// axTree is the whole page: the main document with readable iframes grafted.
type axTree struct {
	root          *axNode
	byBackend     map[cdp.BackendNodeID]*axNode
	url, title    string
	skippedFrames int // frames whose tree could not be read (cross-site, detached)
}

// pageTarget makes sure ctx is a page context before any CDP call: a
// chromedp context without a target would otherwise open a new tab.
func pageTarget(ctx context.Context) error {
	c := chromedp.FromContext(ctx)
	if c == nil || c.Target == nil {
		return ErrNoPage
	}
	return nil
}

// fetchTree reads the accessibility tree of the main frame and of every
// iframe the page's process holds, and grafts each iframe's document under
// its iframe node.
func fetchTree(ctx context.Context) (*axTree, error) {
	if err := pageTarget(ctx); err != nil {
		return nil, err
	}
	ft, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return nil, fmt.Errorf("get frame tree: %w", err)
	}
	if ft.FrameTree == nil || ft.FrameTree.Frame == nil {
		return nil, fmt.Errorf("get frame tree: no main frame")
	}
	tree := &axTree{byBackend: map[cdp.BackendNodeID]*axNode{}}
	main, err := fetchFrame(ctx, "", tree)
	if err != nil {
		return nil, err
	}
	tree.root = main
	tree.title = main.name
	tree.url = main.prop(accessibility.PropertyNameURL)
	if tree.url == "" {
		tree.url = ft.FrameTree.Frame.URL
	}
	graftChildren(ctx, tree, ft.FrameTree.ChildFrames)
	// A cross-site iframe runs in another renderer process: it is neither in
	// this target's frame tree nor readable, so count the iframe nodes left
	// without a document.
	tree.root.walk(func(n *axNode) bool {
		if !n.ignored && (n.role == "Iframe" || n.role == "IframePresentational") && !n.grafted {
			tree.skippedFrames++
		}
		return true
	})
	return tree, nil
}

// graftChildren walks the frame tree depth first, so a nested iframe finds
// its owner already grafted.
func graftChildren(ctx context.Context, tree *axTree, frames []*page.FrameTree) {
	for _, f := range frames {
		if f == nil || f.Frame == nil {
			continue
		}
		if !graftFrame(ctx, tree, f.Frame.ID) {
			continue
		}
		graftChildren(ctx, tree, f.ChildFrames)
	}
}

// graftFrame reads one iframe's tree and hangs its document's children under
// the iframe node. It reports false when the frame cannot be read: a
// cross-site iframe lives in another process and is not part of this target.
func graftFrame(ctx context.Context, tree *axTree, id cdp.FrameID) bool {
	owner, err := chromedp.Call(ctx, dom.GetFrameOwner, dom.GetFrameOwnerParams{FrameID: id})
	if err != nil {
		return false
	}
	host := tree.byBackend[owner.BackendNodeID]
	if host == nil {
		return false // the iframe element is hidden or outside the tree
	}
	root, err := fetchFrame(ctx, id, tree)
	if err != nil || root == nil {
		return false
	}
	for _, c := range root.children {
		c.parent = host
	}
	host.children = append(host.children, root.children...)
	host.grafted = true
	return true
}

// fetchFrame reads the tree of one frame ("" = main) and returns its root.
func fetchFrame(ctx context.Context, frame cdp.FrameID, tree *axTree) (*axNode, error) {
	res, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{FrameID: frame})
	if err != nil {
		return nil, fmt.Errorf("get accessibility tree of frame %q: %w", frame, err)
	}
	byID := make(map[accessibility.NodeID]*axNode, len(res.Nodes))
	for _, raw := range res.Nodes {
		if raw == nil {
			continue
		}
		n := convert(raw, frame)
		byID[raw.NodeID] = n
		if n.backend != 0 && !n.ignored {
			tree.byBackend[n.backend] = n
		} else if n.backend != 0 && tree.byBackend[n.backend] == nil {
			tree.byBackend[n.backend] = n
		}
	}
	var root *axNode
	for _, raw := range res.Nodes {
		if raw == nil {
			continue
		}
		n := byID[raw.NodeID]
		for _, cid := range raw.ChildIDs {
			if c := byID[cid]; c != nil && c.parent == nil && c != n {
				c.parent = n
				n.children = append(n.children, c)
			}
		}
	}
	// The root is the node without a parent; Chromium sends it first.
	for _, raw := range res.Nodes {
		if raw == nil {
			continue
		}
		if n := byID[raw.NodeID]; n.parent == nil {
			root = n
			break
		}
	}
	if root == nil {
		return nil, fmt.Errorf("get accessibility tree of frame %q: empty tree", frame)
	}
	return root, nil
}

// convert turns a protocol node into an axNode with its values as text.
func convert(raw *accessibility.Node, frame cdp.FrameID) *axNode {
	n := &axNode{
		role:    valueText(raw.Role),
		name:    valueText(raw.Name),
		value:   valueText(raw.Value),
		ignored: raw.Ignored,
		backend: raw.BackendDOMNodeID,
		frame:   frame,
	}
	for _, p := range raw.Properties {
		if p == nil || p.Value == nil {
			continue
		}
		if n.props == nil {
			n.props = map[accessibility.PropertyName]string{}
		}
		n.props[p.Name] = valueText(p.Value)
		if p.Name == accessibility.PropertyNameLabelledby {
			for _, rel := range p.Value.RelatedNodes {
				if rel != nil && rel.BackendDOMNodeID != 0 {
					n.labels = append(n.labels, rel.BackendDOMNodeID)
				}
			}
		}
	}
	return n
}

// valueText decodes an AX value (a JSON string, bool or number) to text.
func valueText(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var x any
	if err := json.Unmarshal([]byte(v.Value), &x); err != nil {
		return strings.Trim(string(v.Value), `"`)
	}
	switch x := x.(type) {
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%f", x), "0"), ".")
	case nil:
		return ""
	}
	return string(v.Value)
}

// walk visits the tree in document order (pre-order); visit returns false
// to skip a node's children.
func (n *axNode) walk(visit func(*axNode) bool) {
	if !visit(n) {
		return
	}
	for _, c := range n.children {
		c.walk(visit)
	}
}
