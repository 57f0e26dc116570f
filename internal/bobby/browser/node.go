package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/bobby/jsobject"
)

// NodeRef names one element of a page: a backend node ID (what the snapshot
// package resolves semantic targets to) or a raw CSS selector, optionally in
// a same-process iframe given by FrameID. BackendNodeID wins when both are set.
type NodeRef struct {
	BackendNodeID cdp.BackendNodeID `json:"backendNodeId,omitempty"`
	Selector      string            `json:"selector,omitempty"`
	FrameID       cdp.FrameID       `json:"frameId,omitempty"`
}

// IsZero reports whether the ref names nothing.
func (r NodeRef) IsZero() bool { return r.BackendNodeID == 0 && strings.TrimSpace(r.Selector) == "" }

// String describes the ref for errors and logs.
func (r NodeRef) String() string {
	if r.BackendNodeID != 0 {
		return "backend node " + strconv.FormatInt(int64(r.BackendNodeID), 10)
	}
	if r.FrameID != "" {
		return fmt.Sprintf("selector %q in frame %s", r.Selector, r.FrameID)
	}
	return fmt.Sprintf("selector %q", r.Selector)
}

// pageLevelCSS are the selectors that mean "the whole page" to wait_for.
var pageLevelCSS = map[string]bool{"body": true, "html": true, ":root": true}

// pageLevelRoles are the accessibility roles that mean "the whole page" to
// wait_for's text and value conditions.
var pageLevelRoles = map[string]bool{
	"main": true, "rootwebarea": true, "document": true,
	"application": true, "generic": true, "body": true,
}

// PageLevelRole reports whether a semantic target with this role stands for
// the whole page in text and value waits (main, RootWebArea, document,
// application, generic, body): such targets match against
// document.body.innerText, so the gateway passes a nil target for them.
func PageLevelRole(role string) bool { return pageLevelRoles[strings.ToLower(strings.TrimSpace(role))] }

// PageLevelCSS reports whether a CSS selector stands for the whole page
// (body, html, :root).
func PageLevelCSS(sel string) bool { return pageLevelCSS[strings.ToLower(strings.TrimSpace(sel))] }

// objectGroups makes a unique object group per action, so concurrent
// actions release only their own remote objects.
var objectGroups atomic.Uint64

func newObjectGroup() string { return "bobby-" + strconv.FormatUint(objectGroups.Add(1), 10) }

// onNode runs fn as one action on the page with the element ref names
// resolved in the action's object group, and releases the group after.
func (p *Page) onNode(ctx context.Context, ref NodeRef, fn func(ctx context.Context, t *chromedp.Target, n node) error) error {
	group := newObjectGroup()
	defer p.release(group)
	return p.Do(ctx, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		n, err := resolve(pctx, t, ref, group)
		if err != nil {
			return err
		}
		return fn(pctx, t, n)
	})
}

// node is a resolved NodeRef within one action.
type node struct {
	backend cdp.BackendNodeID
	object  runtime.RemoteObjectID
	group   string // the action's object group, which holds object
}

// resolve finds the element a ref names. It returns ErrNodeNotFound when it
// is gone or matches nothing, and ErrInvalidArgument for an empty ref or a
// selector that does not parse.
func resolve(ctx context.Context, t *chromedp.Target, ref NodeRef, group string) (node, error) {
	switch {
	case ref.BackendNodeID != 0:
		res, err := cdp.Call(ctx, t, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: ref.BackendNodeID, ObjectGroup: group})
		if err != nil {
			if isProtocolError(err) {
				return node{}, fmt.Errorf("%s: %w", ref, ErrNodeNotFound)
			}
			return node{}, err
		}
		if res.Object == nil || res.Object.ObjectID == "" {
			return node{}, fmt.Errorf("%s: %w", ref, ErrNodeNotFound)
		}
		n := node{backend: ref.BackendNodeID, object: res.Object.ObjectID, group: group}
		var connected bool
		if err := callOn(ctx, t, n.object, `function(){ return this.isConnected === true }`, &connected); err != nil {
			return node{}, err
		}
		if !connected {
			return node{}, fmt.Errorf("%s is no longer in the document: %w", ref, ErrNodeNotFound)
		}
		return n, nil
	case strings.TrimSpace(ref.Selector) != "":
		obj, err := querySelector(ctx, t, ref, group)
		if err != nil {
			return node{}, err
		}
		desc, err := cdp.Call(ctx, t, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj})
		if err != nil {
			return node{}, fmt.Errorf("describe %s: %w", ref, err)
		}
		if desc.Node == nil {
			return node{}, fmt.Errorf("%s: %w", ref, ErrNodeNotFound)
		}
		return node{backend: desc.Node.BackendNodeID, object: obj, group: group}, nil
	}
	return node{}, invalidf("empty node ref: give a target or a selector")
}

// querySelector runs document.querySelector in the page, or in an isolated
// world of the ref's frame.
func querySelector(ctx context.Context, t *chromedp.Target, ref NodeRef, group string) (runtime.RemoteObjectID, error) {
	sel, _ := json.Marshal(ref.Selector)
	params := runtime.EvaluateParams{
		Expression:  "document.querySelector(" + string(sel) + ")",
		ObjectGroup: group,
	}
	if ref.FrameID != "" {
		world, err := cdp.Call(ctx, t, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: ref.FrameID, WorldName: "bobby"})
		if err != nil {
			if isProtocolError(err) {
				return "", fmt.Errorf("frame %s: %w", ref.FrameID, ErrNodeNotFound)
			}
			return "", err
		}
		params.ContextID = world.ExecutionContextID
	}
	res, err := cdp.Call(ctx, t, runtime.Evaluate, params)
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", invalidf("selector %q: %s", ref.Selector, jsobject.ExceptionText(res.ExceptionDetails))
	}
	if res.Result == nil || res.Result.ObjectID == "" {
		return "", fmt.Errorf("%s matches no element: %w", ref, ErrNodeNotFound)
	}
	return res.Result.ObjectID, nil
}

// callOn calls a function with `this` bound to the object and decodes its
// JSON result into out (nil to ignore it). args are passed by value.
func callOn(ctx context.Context, t *chromedp.Target, obj runtime.RemoteObjectID, fn string, out any, args ...any) error {
	cargs, err := jsobject.Args(args...)
	if err != nil {
		return err
	}
	err = jsobject.Call{Object: obj, Fn: fn, Args: cargs, Await: true}.Do(ctx, jsobject.On(t), out)
	var exc *jsobject.Exception
	switch {
	case errors.As(err, &exc):
		return &EvalError{Text: exc.Text}
	case isProtocolError(err):
		return fmt.Errorf("call on node: %w: %w", ErrNodeNotFound, err)
	}
	return err
}

// evalValue evaluates an expression in the page's main world and decodes
// its JSON result into out.
func evalValue(ctx context.Context, t *chromedp.Target, expr string, out any) error {
	res, err := evaluate(ctx, t, expr, false)
	if err != nil || out == nil || res == nil {
		return err
	}
	return decodeValue(res.Value, out)
}

// evaluate evaluates an expression in the page's main world, awaiting a
// promise, and returns its result by value; gesture runs it as if a user
// had acted (so it may open popups, play media). An exception thrown is an
// *EvalError.
func evaluate(ctx context.Context, t *chromedp.Target, expr string, gesture bool) (*runtime.RemoteObject, error) {
	params := runtime.EvaluateParams{Expression: expr, ReturnByValue: new(true), AwaitPromise: new(true)}
	if gesture {
		params.UserGesture = new(true)
	}
	res, err := cdp.Call(ctx, t, runtime.Evaluate, params)
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, &EvalError{Text: jsobject.ExceptionText(res.ExceptionDetails)}
	}
	return res.Result, nil
}

// release frees the remote objects of an action, best effort. It is skipped
// while a dialog is open, because the renderer would not answer.
func (p *Page) release(group string) {
	if p.PendingDialog() != nil || p.Err() != nil {
		return
	}
	ctx, cancel := p.callCtx(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
}

// isProtocolError reports whether err is an error answer of the browser
// (as opposed to a transport or context error).
func isProtocolError(err error) bool {
	var pe *cdproto.Error
	return errors.As(err, &pe)
}

// decodeValue decodes a CDP RemoteObject value (raw JSON) into v.
func decodeValue(raw []byte, v any) error {
	if len(raw) == 0 {
		raw = []byte("null")
	}
	return json.Unmarshal(raw, v)
}
