package snapshot

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
)

// Describe returns, for each node of ids the accessibility tree exposes,
// the node as a snapshot would show it (ref, role, name, value masked for
// passwords, states). Nodes the tree ignores (hidden, inert) are absent from
// the map. It reads the tree once, for all frames, so callers that need
// semantic targets for many DOM nodes (a form snapshot) pay one round trip
// per frame.
func Describe(ctx context.Context, ids []cdp.BackendNodeID) (map[cdp.BackendNodeID]Node, error) {
	tree, err := fetchTree(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe nodes: %w", err)
	}
	f := &flattener{}
	out := make(map[cdp.BackendNodeID]Node, len(ids))
	for _, id := range ids {
		n := tree.byBackend[id]
		if n == nil || n.ignored {
			continue
		}
		out[id] = f.node(n, 0)
	}
	return out, nil
}
