package snapshot

// DefaultNeighbors and MaxNeighbors bound the siblings and children
// Neighbors returns on each side.
const (
	DefaultNeighbors = 3
	MaxNeighbors     = 20
	maxAncestors     = 3
)

// Neighborhood is what surrounds one node of a snapshot: the nearest
// heading before it (the section it sits in), its ancestors nearest first
// (the list item, form or region that holds it), the siblings next to it
// and its first children. It answers "which card is this button in" and
// "what is this field's section" without a second snapshot.
type Neighborhood struct {
	Node      Node   `json:"node"`
	Heading   *Node  `json:"heading"`
	Ancestors []Node `json:"ancestors"`
	Before    []Node `json:"before"` // nearest last
	After     []Node `json:"after"`  // nearest first
	Children  []Node `json:"children"`
}

// Neighbors returns the neighborhood of the node with ref in snap, with at
// most n siblings on each side and n children (0 means DefaultNeighbors,
// capped at MaxNeighbors). Parents are read from the depths of the shown
// nodes, so in a snapshot that skipped structure (Interesting) the nearest
// shown ancestor stands in. False when the ref is not in the snapshot.
func Neighbors(snap *Snapshot, ref string, n int) (Neighborhood, bool) {
	if snap == nil || ref == "" {
		return Neighborhood{}, false
	}
	switch {
	case n <= 0:
		n = DefaultNeighbors
	case n > MaxNeighbors:
		n = MaxNeighbors
	}
	nodes := snap.Nodes
	at := -1
	for i, nd := range nodes {
		if nd.Ref == ref {
			at = i
			break
		}
	}
	if at < 0 {
		return Neighborhood{}, false
	}
	self := nodes[at]
	h := Neighborhood{Node: self, Ancestors: []Node{}, Before: []Node{}, After: []Node{}, Children: []Node{}}
	parent := parentOf(nodes, at)
	for p := parent; p >= 0 && len(h.Ancestors) < maxAncestors; p = parentOf(nodes, p) {
		h.Ancestors = append(h.Ancestors, nodes[p])
	}
	for i := at - 1; i >= 0; i-- {
		if nodes[i].Role == "heading" {
			hd := nodes[i]
			h.Heading = &hd
			break
		}
	}
	// Siblings share the parent; walk outwards from the node.
	for i := at - 1; i > parent && len(h.Before) < n; i-- {
		if parentOf(nodes, i) == parent {
			h.Before = append([]Node{nodes[i]}, h.Before...)
		}
	}
	for i := at + 1; i < len(nodes) && nodes[i].Depth > depthOf(nodes, parent) && len(h.After) < n; i++ {
		if parentOf(nodes, i) == parent {
			h.After = append(h.After, nodes[i])
		}
	}
	for i := at + 1; i < len(nodes) && nodes[i].Depth > self.Depth && len(h.Children) < n; i++ {
		if parentOf(nodes, i) == at {
			h.Children = append(h.Children, nodes[i])
		}
	}
	return h, true
}

// parentOf is the index of the nearest earlier node of smaller depth, or -1.
func parentOf(nodes []Node, i int) int {
	for j := i - 1; j >= 0; j-- {
		if nodes[j].Depth < nodes[i].Depth {
			return j
		}
	}
	return -1
}

func depthOf(nodes []Node, i int) int {
	if i < 0 {
		return -1
	}
	return nodes[i].Depth
}

// Neighbors answers from the page's valid retained snapshot; see the
// package-level [Neighbors]. No valid snapshot means no answer.
func (r *Retained) Neighbors(pageID, ref string, n int) (Neighborhood, bool) {
	s, ok := r.Get(pageID)
	if !ok {
		return Neighborhood{}, false
	}
	return Neighbors(s, ref, n)
}
