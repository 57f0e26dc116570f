package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/deltaharness/delta/internal/bobby/jsobject"
)

// Resolve finds the DOM node a target names on the page in ctx. A target
// that resolves to nothing gives a [*NotFoundError] (errors.Is
// ErrTargetNotFound) naming the repair; several matches without an index
// give an [*AmbiguousError] listing the candidates with their indexes.
func Resolve(ctx context.Context, t Target) (NodeRef, error) {
	if err := t.Validate(); err != nil {
		return NodeRef{}, fmt.Errorf("resolve target: %w", err)
	}
	if err := pageTarget(ctx); err != nil {
		return NodeRef{}, fmt.Errorf("resolve target: %w", err)
	}
	var (
		ref NodeRef
		err error
	)
	switch {
	case t.Ref != "":
		ref, err = resolveRef(ctx, t)
	case t.Selector != "":
		ref, err = resolveSelector(ctx, t)
	default:
		ref, err = resolveSemantic(ctx, t)
	}
	if err != nil {
		return NodeRef{}, fmt.Errorf("resolve target: %w", err)
	}
	return ref, nil
}

// objectGroup holds the remote objects this package creates, released after
// each call so a long session does not pin dead nodes.
const objectGroup = "bobby-snapshot"

// releaseTimeout bounds releaseObjects. The release runs after the call's
// context may have ended, and a renderer whose main thread is busy (a
// script that never yields) or blocked by a JavaScript dialog answers no
// Runtime command: unbounded, the release would hold the call past its
// deadline for as long as the page stays busy. A group left behind goes
// with the next release (the group is the same) or with the document.
const releaseTimeout = 2 * time.Second

func releaseObjects(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	_, _ = chromedp.Call(rctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: objectGroup})
}

// resolveRef checks that the node behind a ref still lives in the page and,
// when the target carries a role, that it still has that role: backend ids
// restart in a new renderer process, so a ref that outlived its document
// could otherwise name an unrelated node.
func resolveRef(ctx context.Context, t Target) (NodeRef, error) {
	id, err := ParseRef(t.Ref)
	if err != nil {
		return NodeRef{}, err
	}
	defer releaseObjects(ctx)
	res, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ObjectGroup: objectGroup})
	if err != nil && ctx.Err() != nil {
		// No answer is not an answer that the node is gone.
		return NodeRef{}, fmt.Errorf("resolve node: %w", err)
	}
	if err != nil || res.Object == nil || res.Object.ObjectID == "" {
		return NodeRef{}, &NotFoundError{Target: t, Reason: fmt.Sprintf("ref %s names no element in this page (the element was removed, or the ref came from another page)", t.Ref)}
	}
	var place struct {
		Connected bool `json:"connected"`
	}
	if err := callOn(ctx, res.Object.ObjectID, `function() { return {connected: this.isConnected}; }`, &place); err != nil {
		return NodeRef{}, err
	}
	if !place.Connected {
		return NodeRef{}, &NotFoundError{Target: t, Reason: fmt.Sprintf("ref %s was removed from the page", t.Ref)}
	}
	if t.Role != "" {
		ax, err := chromedp.Call(ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{BackendNodeID: id, FetchRelatives: new(false)})
		if err == nil && len(ax.Nodes) > 0 && ax.Nodes[0] != nil && !ax.Nodes[0].Ignored {
			got := displayRole(valueText(ax.Nodes[0].Role))
			if !strings.EqualFold(got, displayRole(t.Role)) {
				return NodeRef{}, &NotFoundError{Target: t, Reason: fmt.Sprintf("ref %s now names a %s, not a %s: the page changed", t.Ref, got, t.Role)}
			}
		}
	}
	frame, err := frameOf(ctx, res.Object.ObjectID)
	if err != nil {
		return NodeRef{}, err
	}
	return NodeRef{BackendNodeID: id, FrameID: frame}, nil
}

// frameOf returns the frame whose document holds the object's node, empty
// for the main frame.
func frameOf(ctx context.Context, obj runtime.RemoteObjectID) (cdp.FrameID, error) {
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: `function() { const w = this.ownerDocument && this.ownerDocument.defaultView; return w ? w.frameElement : null; }`,
		ObjectID:            obj,
		ObjectGroup:         objectGroup,
	})
	if err != nil {
		return "", fmt.Errorf("find frame of node: %w", err)
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return "", nil
	}
	d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil || d.Node == nil {
		return "", nil
	}
	return d.Node.FrameID, nil
}

// callOn runs a function without arguments on a remote object and decodes
// its JSON result.
func callOn(ctx context.Context, obj runtime.RemoteObjectID, fn string, out any) error {
	err := jsobject.Call{Object: obj, Fn: fn, Group: objectGroup}.Do(ctx, jsobject.InContext, out)
	var exc *jsobject.Exception
	if errors.As(err, &exc) {
		return fmt.Errorf("call function on node: %s", exc.Text)
	}
	if err != nil {
		return fmt.Errorf("call function on node: %w", err)
	}
	return nil
}

// resolveSemantic matches role and name against the accessibility tree.
func resolveSemantic(ctx context.Context, t Target) (NodeRef, error) {
	tree, err := fetchTree(ctx)
	if err != nil {
		return NodeRef{}, err
	}
	n, err := pickSemantic(tree, t)
	if err != nil {
		return NodeRef{}, err
	}
	return NodeRef{BackendNodeID: n.backend, FrameID: n.frame}, nil
}

// pickSemantic returns the one node a role/name target names in the tree.
func pickSemantic(tree *axTree, t Target) (*axNode, error) {
	matches := matchSemantic(tree, t)
	i, err := pick(t, len(matches))
	if err != nil {
		var amb *AmbiguousError
		if errors.As(err, &amb) {
			for j, m := range matches {
				if j == maxCandidates {
					break
				}
				amb.Candidates = append(amb.Candidates, Candidate{Index: j, Ref: RefOf(m.backend), Role: displayRole(m.role), Name: m.name})
			}
		}
		return nil, err
	}
	return matches[i], nil
}

// matchSemantic lists, in document order, the nodes whose role and name fit
// the target: exact names first; only when none is exact, names equal after
// trimming, collapsing spaces and folding case.
func matchSemantic(tree *axTree, t Target) []*axNode {
	var byRole []*axNode
	tree.root.walk(func(n *axNode) bool {
		if n.ignored || n.backend == 0 || dropped[n.role] || n.role == "StaticText" {
			return true
		}
		if t.Role != "" && !strings.EqualFold(displayRole(n.role), displayRole(t.Role)) && !strings.EqualFold(n.role, t.Role) {
			return true
		}
		if t.Role == "" && transparent[n.role] {
			return true // a bare name means something a user sees and acts on
		}
		byRole = append(byRole, n)
		return true
	})
	if t.Name == "" {
		return byRole
	}
	var exact, folded []*axNode
	want := normalize(t.Name)
	for _, n := range byRole {
		switch {
		case n.name == t.Name:
			exact = append(exact, n)
		case strings.EqualFold(normalize(n.name), want):
			folded = append(folded, n)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return folded
}

// scopeNode finds the tree node a scope target names.
func scopeNode(ctx context.Context, tree *axTree, t Target) (*axNode, error) {
	switch {
	case t.Ref != "" || t.Selector != "":
		ref, err := Resolve(ctx, t)
		if err != nil {
			return nil, err
		}
		n := tree.byBackend[ref.BackendNodeID]
		if n == nil {
			return nil, &NotFoundError{Target: t, Reason: "the node is not in the accessibility tree (hidden or removed)"}
		}
		return n, nil
	default:
		return pickSemantic(tree, t)
	}
}

// selectorJS evaluates a frame-qualified selector. Each part before the last
// selects one same-origin iframe; the last part is matched in the document
// reached, piercing open shadow roots (light DOM matches first, then each
// shadow root's in tree order).
const selectorJS = `(() => {
  const parts = %s;
  const all = (root, sel) => {
    const out = [...root.querySelectorAll(sel)];
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) out.push(...all(el.shadowRoot, sel));
    }
    return out;
  };
  let doc = document, frame = null;
  try {
    for (let i = 0; i < parts.length - 1; i++) {
      const hits = all(doc, parts[i]).filter(e => e.localName === 'iframe' || e.localName === 'frame');
      if (hits.length !== 1) return {error: 'frame selector ' + JSON.stringify(parts[i]) + ' matches ' + hits.length + ' iframes, want 1'};
      frame = hits[0];
      let inner = null;
      try { inner = frame.contentDocument; } catch (e) {}
      if (!inner) return {error: 'iframe ' + JSON.stringify(parts[i]) + ' is cross-origin or not loaded'};
      doc = inner;
    }
    const els = all(doc, parts[parts.length - 1]);
    return {frame, total: els.length, els: els.slice(0, 50)};
  } catch (e) {
    return {invalid: String(e && e.message || e)};
  }
})()`

// resolveSelector evaluates a CSS target and reads the backend node ids of
// the matches in one round trip (deep serialization carries them).
func resolveSelector(ctx context.Context, t Target) (NodeRef, error) {
	parts, err := json.Marshal(splitFrameSelector(t.Selector))
	if err != nil {
		return NodeRef{}, fmt.Errorf("encode selector: %w", err)
	}
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression:           fmt.Sprintf(selectorJS, parts),
		SerializationOptions: &runtime.SerializationOptions{Serialization: "deep", MaxDepth: new(int64(2))},
		ObjectGroup:          objectGroup,
	})
	defer releaseObjects(ctx)
	if err != nil {
		return NodeRef{}, fmt.Errorf("evaluate selector: %w", err)
	}
	if res.ExceptionDetails != nil {
		return NodeRef{}, fmt.Errorf("evaluate selector: %s", jsobject.ExceptionText(res.ExceptionDetails))
	}
	if res.Result == nil || res.Result.DeepSerializedValue == nil {
		return NodeRef{}, fmt.Errorf("evaluate selector: empty result")
	}
	out, err := decodeSelectorResult(res.Result.DeepSerializedValue.Value)
	if err != nil {
		return NodeRef{}, fmt.Errorf("evaluate selector: %w", err)
	}
	switch {
	case out.invalid != "":
		return NodeRef{}, fmt.Errorf("%w: selector %q: %s", ErrInvalidTarget, t.Selector, out.invalid)
	case out.errText != "":
		return NodeRef{}, &NotFoundError{Target: t, Reason: out.errText}
	}
	i, err := pick(t, out.total)
	if err != nil {
		var amb *AmbiguousError
		if errors.As(err, &amb) {
			for j, id := range out.ids {
				if j == maxCandidates {
					break
				}
				role, name := describeAX(ctx, id)
				amb.Candidates = append(amb.Candidates, Candidate{Index: j, Ref: RefOf(id), Role: role, Name: name})
			}
		}
		return NodeRef{}, err
	}
	if i >= len(out.ids) {
		return NodeRef{}, &NotFoundError{Target: t, Reason: fmt.Sprintf("index %d is past the first %d matches this resolver reads", i, len(out.ids))}
	}
	ref := NodeRef{BackendNodeID: out.ids[i]}
	if out.frame != 0 {
		d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: out.frame})
		if err == nil && d.Node != nil {
			ref.FrameID = d.Node.FrameID
		}
	}
	return ref, nil
}

// describeAX returns the role and name of a node, for candidate lists.
func describeAX(ctx context.Context, id cdp.BackendNodeID) (role, name string) {
	ax, err := chromedp.Call(ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{BackendNodeID: id, FetchRelatives: new(false)})
	if err != nil || len(ax.Nodes) == 0 || ax.Nodes[0] == nil {
		return "", ""
	}
	return displayRole(valueText(ax.Nodes[0].Role)), valueText(ax.Nodes[0].Name)
}

type selectorResult struct {
	invalid, errText string
	total            int
	ids              []cdp.BackendNodeID
	frame            cdp.BackendNodeID
}

// deepValue is the shape of Runtime deep serialization.
type deepValue struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type deepNode struct {
	BackendNodeID cdp.BackendNodeID `json:"backendNodeId"`
}

// decodeSelectorResult reads the deep-serialized object of selectorJS: an
// object arrives as a list of [key, value] pairs.
func decodeSelectorResult(raw []byte) (selectorResult, error) {
	var out selectorResult
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return out, fmt.Errorf("decode selector result: %w", err)
	}
	for _, p := range pairs {
		var key string
		if err := json.Unmarshal(p[0], &key); err != nil {
			return out, fmt.Errorf("decode selector result key: %w", err)
		}
		var v deepValue
		if err := json.Unmarshal(p[1], &v); err != nil {
			return out, fmt.Errorf("decode selector result %s: %w", key, err)
		}
		switch key {
		case "invalid":
			_ = json.Unmarshal(v.Value, &out.invalid)
		case "error":
			_ = json.Unmarshal(v.Value, &out.errText)
		case "total":
			_ = json.Unmarshal(v.Value, &out.total)
		case "frame":
			if v.Type == "node" {
				var n deepNode
				_ = json.Unmarshal(v.Value, &n)
				out.frame = n.BackendNodeID
			}
		case "els":
			var items []deepValue
			if err := json.Unmarshal(v.Value, &items); err != nil {
				return out, fmt.Errorf("decode selector matches: %w", err)
			}
			for _, it := range items {
				var n deepNode
				if it.Type != "node" || json.Unmarshal(it.Value, &n) != nil || n.BackendNodeID == 0 {
					continue
				}
				out.ids = append(out.ids, n.BackendNodeID)
			}
		}
	}
	return out, nil
}
