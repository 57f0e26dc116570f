package snapshot

import (
	"context"
	"fmt"
	"time"
)

// Bounds of a snapshot. A snapshot is what an agent pays for in tokens, so
// every one is bounded; the defaults keep a busy page near 6k tokens. The
// byte bound is the one that binds: repeated items render one line each
// (see textLines), so the node default lets a page of a hundred-odd cards
// show whole (about 500 nodes) rather than cut it a third of the way.
const (
	DefaultMaxNodes = 1000
	MaxMaxNodes     = 2000
	DefaultMaxBytes = 24 << 10
	MinMaxBytes     = 1 << 10
	MaxMaxBytes     = 1 << 20
)

// Options shape one snapshot. The zero value takes the whole page with the
// default bounds.
type Options struct {
	// Target scopes the snapshot to one subtree, e.g. {Role: "main"}.
	Target *Target `json:"target,omitempty"`
	// MaxNodes bounds the nodes shown: 0 means DefaultMaxNodes, at most MaxMaxNodes.
	MaxNodes int `json:"maxNodes,omitempty"`
	// MaxBytes bounds the rendered text: 0 means DefaultMaxBytes.
	MaxBytes int `json:"maxBytes,omitempty"`
	// Interesting keeps only what an agent acts on or navigates by:
	// landmarks, headings, links, buttons, form controls, dialogs and frames.
	// Static text and structural containers (lists, tables, paragraphs) go.
	Interesting bool `json:"interesting,omitempty"`
}

// withDefaults fills zero bounds and rejects out-of-range ones.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.MaxNodes == 0:
		o.MaxNodes = DefaultMaxNodes
	case o.MaxNodes < 1 || o.MaxNodes > MaxMaxNodes:
		return o, fmt.Errorf("maxNodes %d out of range 1..%d", o.MaxNodes, MaxMaxNodes)
	}
	switch {
	case o.MaxBytes == 0:
		o.MaxBytes = DefaultMaxBytes
	case o.MaxBytes < MinMaxBytes || o.MaxBytes > MaxMaxBytes:
		return o, fmt.Errorf("maxBytes %d out of range %d..%d", o.MaxBytes, MinMaxBytes, MaxMaxBytes)
	}
	if o.Target != nil {
		if err := o.Target.Validate(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Snapshot is a compact accessibility view of a page at one moment.
type Snapshot struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	// Scope is the target the snapshot was scoped to, nil for the whole page.
	Scope *Target `json:"scope,omitempty"`
	// Text is the compact rendering: one `role "name" [state] [ref=eN]: "value"`
	// line per node (`text: …` for text), indented two spaces per depth.
	// Only lines an agent targets (controls, links, iframes, dialogs) show
	// their ref; a heading whose only content is a same-name link renders
	// as that link marked [hN]. Three or more same-shaped siblings (cards,
	// list items, table rows) render as a header line naming the shape,
	// `N × listitem (link [h3] | text | button):`, then one `- cell | cell`
	// line per item, each cell as its line would read without the role.
	Text string `json:"text"`
	// Nodes holds the same shown nodes, structured.
	Nodes []Node `json:"nodes"`
	// Truncated is true when the bounds cut the snapshot; Repair then says
	// how to get the rest.
	Truncated  bool   `json:"truncated"`
	TotalNodes int    `json:"totalNodes"`
	ShownNodes int    `json:"shownNodes"`
	Bytes      int    `json:"bytes"`
	Repair     string `json:"repair,omitempty"`
	// SkippedFrames counts iframes whose content could not be read: a
	// cross-site iframe runs in another process.
	SkippedFrames int       `json:"skippedFrames,omitempty"`
	TakenAt       time.Time `json:"takenAt"`
}

// Node is one line of a snapshot. Text nodes (Role "text") have no ref.
type Node struct {
	Ref   string `json:"ref,omitempty"`
	Role  string `json:"role"`
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
	// HasValue is set, and Value left empty, for a password field that holds
	// a value: password values are never reported.
	HasValue bool `json:"hasValue,omitempty"`
	// States holds the set boolean states: checked, mixed, pressed, selected,
	// expanded, collapsed, disabled, readonly, required, invalid, focused.
	States  []string `json:"states,omitempty"`
	Level   int      `json:"level,omitempty"` // heading level
	URL     string   `json:"url,omitempty"`   // link target
	Depth   int      `json:"depth"`
	FrameID string   `json:"frameId,omitempty"` // set inside iframes
}

// Target returns the semantic target of the node: the ref plus role and
// name, usable unchanged by Resolve and the tools. A text node has none.
func (n Node) Target() Target {
	if n.Ref == "" {
		return Target{}
	}
	return Target{Ref: n.Ref, Role: n.Role, Name: n.Name}
}

// Find returns the shown node with the ref.
func (s *Snapshot) Find(ref string) (Node, bool) {
	for _, n := range s.Nodes {
		if n.Ref == ref {
			return n, true
		}
	}
	return Node{}, false
}

// Take snapshots the accessibility tree of the page in ctx: the main frame,
// every iframe the page's process holds, and open shadow roots (which
// Chromium's tree already flattens in). ctx must be a chromedp page context;
// the caller owns timeouts and dialog handling.
func Take(ctx context.Context, opts Options) (*Snapshot, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("take snapshot: %w", err)
	}
	tree, err := fetchTree(ctx)
	if err != nil {
		return nil, fmt.Errorf("take snapshot: %w", err)
	}
	root := tree.root
	if opts.Target != nil {
		root, err = scopeNode(ctx, tree, *opts.Target)
		if err != nil {
			return nil, fmt.Errorf("take snapshot: scope: %w", err)
		}
	}
	nodes := flatten(tree, root, opts.Target != nil, opts.Interesting)
	s := render(nodes, opts)
	s.URL = tree.url
	s.Title = tree.title
	s.SkippedFrames = tree.skippedFrames
	if opts.Target != nil {
		scope := *opts.Target
		s.Scope = &scope
	}
	s.TakenAt = time.Now().UTC()
	return s, nil
}
