package form

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/bobby/jsobject"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// chromium is the Page of a chromedp page context: every call runs on the
// target of the ctx it is given (chromedp.FromContext(ctx).Target).
type chromium struct{}

// Chromium returns the Page that works on the chromedp page context each
// call is given. It holds nothing: the package functions (Snapshot,
// Control, …) use it.
func Chromium() Page { return chromium{} }

func (chromium) Engine() string { return "chromium" }

// objectGroup holds the remote objects of one call; released at its end.
const objectGroup = "bobby-form"

// ReleaseTimeout bounds a Release. It runs after the call's context may
// have ended, and a page that a JavaScript dialog blocks answers no
// Runtime command until the dialog is answered: unbounded, the release
// would hang the call that the dialog ended. An object group left behind
// goes with the next release (the group is the same) or the document.
const ReleaseTimeout = 2 * time.Second

func (chromium) Release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	_, _ = chromedp.Call(rctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: objectGroup})
}

// Ready refuses a context without a page target: chromedp would otherwise
// open a new tab for the call.
func (chromium) Ready(ctx context.Context) error {
	c := chromedp.FromContext(ctx)
	if c == nil || c.Target == nil {
		return snapshot.ErrNoPage
	}
	return nil
}

// Resolve resolves a target to a live element with a JS handle.
func (chromium) Resolve(ctx context.Context, t snapshot.Target) (Element, error) {
	ref, err := snapshot.Resolve(ctx, t)
	if err != nil {
		return Element{}, err
	}
	res, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: ref.BackendNodeID, ObjectGroup: objectGroup})
	if err != nil && ctx.Err() != nil {
		// No answer is not an answer that the node is gone.
		return Element{}, fmt.Errorf("resolve node: %w", err)
	}
	if err != nil || res.Object == nil || res.Object.ObjectID == "" {
		return Element{}, &snapshot.NotFoundError{Target: t, Reason: fmt.Sprintf("ref %s names no element in this page (the element was removed, or the ref came from another page)", ref.Ref())}
	}
	return Element{Ref: ref.Ref(), Object: res.Object.ObjectID}, nil
}

// objectID is the remote object behind a handle ("" for the document).
func objectID(obj Object) (runtime.RemoteObjectID, error) {
	switch o := obj.(type) {
	case nil:
		return "", nil
	case runtime.RemoteObjectID:
		return o, nil
	}
	return "", fmt.Errorf("call into page: %T is not a Chromium object", obj)
}

// backendID is the backend node id behind an element's ref.
func backendID(el Element) cdp.BackendNodeID {
	id, _ := snapshot.ParseRef(el.Ref)
	return id
}

// packArgs encodes the arguments of a pageFunc call.
func packArgs(args []any) ([]*runtime.CallArgument, error) {
	if args == nil {
		args = []any{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode arguments: %w", err)
	}
	return []*runtime.CallArgument{{Value: raw}}, nil
}

// Call runs fn on the object with JSON arguments and decodes the JSON
// result into out; on the document it evaluates fn called with document.
func (chromium) Call(ctx context.Context, obj Object, fn string, out any, args ...any) error {
	id, err := objectID(obj)
	if err != nil {
		return err
	}
	cargs, err := packArgs(args)
	if err != nil {
		return err
	}
	if id == "" {
		res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
			Expression:    "(" + fn + ").call(document, " + string(cargs[0].Value) + ")",
			AwaitPromise:  new(true),
			ReturnByValue: new(true),
			ObjectGroup:   objectGroup,
		})
		if err != nil {
			return fmt.Errorf("evaluate in page: %w", err)
		}
		if res.ExceptionDetails != nil {
			return fmt.Errorf("call into page: %s", jsobject.ExceptionText(res.ExceptionDetails))
		}
		if out == nil || res.Result == nil || len(res.Result.Value) == 0 {
			return nil
		}
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			return fmt.Errorf("call into page: decode result: %w", err)
		}
		return nil
	}
	err = jsobject.Call{Object: id, Fn: fn, Args: cargs, Await: true, Group: objectGroup}.Do(ctx, jsobject.InContext, out)
	var exc *jsobject.Exception
	if errors.As(err, &exc) {
		return fmt.Errorf("call into page: %s", exc.Text)
	}
	if err != nil {
		return fmt.Errorf("call into page: %w", err)
	}
	return nil
}

// Hold runs a function on an object and returns its result by reference.
func (chromium) Hold(ctx context.Context, obj Object, fn string, args ...any) (Object, error) {
	id, err := objectID(obj)
	if err != nil {
		return nil, err
	}
	cargs, err := packArgs(args)
	if err != nil {
		return nil, err
	}
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: fn,
		ObjectID:            id,
		Arguments:           cargs,
		ObjectGroup:         objectGroup,
	})
	if err != nil {
		return nil, fmt.Errorf("call into page: %w", err)
	}
	if res.ExceptionDetails != nil {
		return nil, fmt.Errorf("call into page: %s", jsobject.ExceptionText(res.ExceptionDetails))
	}
	if res.Result == nil || res.Result.ObjectID == "" {
		return nil, errNoObject
	}
	return res.Result.ObjectID, nil
}

// deepValue is the shape of Runtime deep serialization.
type deepValue struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// elsNode is an element of a deep-serialized {els, data}: its backend node
// id (0 where one is missing) and whether it is a frame element.
type elsNode struct {
	id    cdp.BackendNodeID
	frame bool
}

// decodeElsData reads a deep-serialized {els: [elements], data: "json"}:
// the nodes of the elements and the data string.
func decodeElsData(raw []byte) ([]elsNode, string, error) {
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, "", fmt.Errorf("decode page result: %w", err)
	}
	var nodes []elsNode
	var data string
	for _, p := range pairs {
		var key string
		var v deepValue
		if json.Unmarshal(p[0], &key) != nil || json.Unmarshal(p[1], &v) != nil {
			return nil, "", fmt.Errorf("decode page result: bad entry")
		}
		switch key {
		case "data":
			if err := json.Unmarshal(v.Value, &data); err != nil {
				return nil, "", fmt.Errorf("decode page data: %w", err)
			}
		case "els":
			var items []deepValue
			if err := json.Unmarshal(v.Value, &items); err != nil {
				return nil, "", fmt.Errorf("decode page elements: %w", err)
			}
			nodes = make([]elsNode, len(items))
			for i, it := range items {
				var n struct {
					BackendNodeID cdp.BackendNodeID `json:"backendNodeId"`
					LocalName     string            `json:"localName"`
				}
				if it.Type == "node" && json.Unmarshal(it.Value, &n) == nil {
					nodes[i] = elsNode{id: n.BackendNodeID, frame: n.LocalName == "iframe" || n.LocalName == "frame"}
				}
			}
		}
	}
	return nodes, data, nil
}

// Elements runs fn on obj (or evaluates it on the document) and describes
// the elements of its {els, data} result from the accessibility tree, read
// once for all of them.
func (chromium) Elements(ctx context.Context, obj Object, fn string, args ...any) ([]Found, string, error) {
	id, err := objectID(obj)
	if err != nil {
		return nil, "", err
	}
	cargs, err := packArgs(args)
	if err != nil {
		return nil, "", err
	}
	ser := &runtime.SerializationOptions{Serialization: "deep", MaxDepth: new(int64(2))}
	var (
		result *runtime.RemoteObject
		exc    *runtime.ExceptionDetails
	)
	if id == "" {
		res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
			Expression:           "(" + fn + ").call(document, " + string(cargs[0].Value) + ")",
			SerializationOptions: ser,
			ObjectGroup:          objectGroup,
		})
		if err != nil {
			return nil, "", fmt.Errorf("evaluate in page: %w", err)
		}
		result, exc = res.Result, res.ExceptionDetails
	} else {
		res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
			FunctionDeclaration:  fn,
			ObjectID:             id,
			Arguments:            cargs,
			SerializationOptions: ser,
			ObjectGroup:          objectGroup,
		})
		if err != nil {
			return nil, "", fmt.Errorf("call into page: %w", err)
		}
		result, exc = res.Result, res.ExceptionDetails
	}
	if exc != nil {
		return nil, "", fmt.Errorf("page function failed: %s", jsobject.ExceptionText(exc))
	}
	if result == nil || result.DeepSerializedValue == nil {
		return nil, "", fmt.Errorf("page function returned nothing")
	}
	nodes, data, err := decodeElsData(result.DeepSerializedValue.Value)
	if err != nil {
		return nil, "", err
	}
	var ids []cdp.BackendNodeID
	for _, n := range nodes {
		if n.id != 0 && !n.frame {
			ids = append(ids, n.id)
		}
	}
	ax, err := snapshot.Describe(ctx, ids)
	if err != nil {
		return nil, "", err
	}
	found := make([]Found, len(nodes))
	for i, n := range nodes {
		if n.id == 0 {
			continue
		}
		found[i].Ref = snapshot.RefOf(n.id)
		if n.frame {
			d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: n.id})
			if err == nil && d.Node != nil {
				found[i].Frame = string(d.Node.FrameID)
			}
			continue
		}
		if a, ok := ax[n.id]; ok {
			found[i].Node = &a
		}
	}
	return found, data, nil
}

func (chromium) ScrollIntoView(ctx context.Context, el Element) {
	_, _ = chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: backendID(el)})
}

// Centre reads the element's content quads (Chromium maps iframe content
// into the top-level viewport).
func (chromium) Centre(ctx context.Context, el Element) (float64, float64, error) {
	res, err := chromedp.Call(ctx, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: backendID(el)})
	if err != nil {
		return 0, 0, fmt.Errorf("%w: no layout box: %v", ErrNotClickable, err)
	}
	for _, q := range res.Quads {
		if len(q) < 8 {
			continue
		}
		x := (q[0] + q[2] + q[4] + q[6]) / 4
		y := (q[1] + q[3] + q[5] + q[7]) / 4
		w := max(q[0], q[2], q[4], q[6]) - min(q[0], q[2], q[4], q[6])
		h := max(q[1], q[3], q[5], q[7]) - min(q[1], q[3], q[5], q[7])
		if w >= 1 && h >= 1 {
			return x, y, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: the element has no visible box", ErrNotClickable)
}

// Click sends mouseMoved, mousePressed and mouseReleased through
// Input.dispatchMouseEvent.
func (chromium) Click(ctx context.Context, x, y float64) error {
	steps := []input.DispatchMouseEventParams{
		{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y},
		{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
		{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1},
	}
	for _, p := range steps {
		if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, p); err != nil {
			return fmt.Errorf("dispatch %s: %w", p.Type, err)
		}
	}
	return nil
}

// InsertText uses Input.insertText, as an input method commits text.
func (chromium) InsertText(ctx context.Context, text string) error {
	if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
		return fmt.Errorf("insert text: %w", err)
	}
	return nil
}

// keyCodes are the virtual key codes of the keys PressKey knows.
var keyCodes = map[string]int64{"Backspace": 8, "Delete": 46}

func (chromium) PressKey(ctx context.Context, key string) error {
	code, ok := keyCodes[key]
	if !ok {
		return fmt.Errorf("press %s: unknown key", key)
	}
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Key: key, Code: key, WindowsVirtualKeyCode: code, NativeVirtualKeyCode: code,
		}); err != nil {
			return fmt.Errorf("press %s: %w", key, err)
		}
	}
	return nil
}

func (chromium) SetFiles(ctx context.Context, el Element, paths []string) error {
	if _, err := chromedp.Call(ctx, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: paths, BackendNodeID: backendID(el)}); err != nil {
		return fmt.Errorf("set files: %w", err)
	}
	return nil
}

// Watch subscribes to the Network and Page events of the target. Each
// event type is read on its own goroutine, so events of different types
// may arrive out of order.
func (chromium) Watch(ctx context.Context, sink func(Event)) (func(), error) {
	ft, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil || ft.FrameTree == nil || ft.FrameTree.Frame == nil {
		return nil, fmt.Errorf("get main frame: %v", err)
	}
	main := ft.FrameTree.Frame.ID
	wctx, cancel := context.WithCancel(ctx)
	var stops []func()
	// Each Events call subscribes when it returns; the ranging happens on
	// goroutines that end when wctx is cancelled.
	stops = append(stops,
		forward(chromedp.Events(wctx, network.RequestWillBeSent), sink, func(e network.EventRequestWillBeSent) (Event, bool) {
			ev := Event{Kind: EventRequest, Request: string(e.RequestID), Type: string(e.Type), Frame: string(e.FrameID)}
			if e.Request != nil {
				ev.Method, ev.URL = e.Request.Method, e.Request.URL
			}
			return ev, true
		}),
		forward(chromedp.Events(wctx, network.ResponseReceived), sink, func(e network.EventResponseReceived) (Event, bool) {
			if e.Response == nil {
				return Event{}, false
			}
			return Event{Kind: EventResponse, Request: string(e.RequestID), Status: e.Response.Status}, true
		}),
		forward(chromedp.Events(wctx, network.LoadingFinished), sink, func(e network.EventLoadingFinished) (Event, bool) {
			return Event{Kind: EventFinished, Request: string(e.RequestID)}, true
		}),
		forward(chromedp.Events(wctx, network.LoadingFailed), sink, func(e network.EventLoadingFailed) (Event, bool) {
			failed := e.ErrorText
			if e.Canceled {
				failed = "canceled"
			}
			return Event{Kind: EventFailed, Request: string(e.RequestID), Failed: failed}, true
		}),
		forward(chromedp.Events(wctx, page.FrameRequestedNavigation), sink, func(e page.EventFrameRequestedNavigation) (Event, bool) {
			return Event{Kind: EventNavRequested}, e.FrameID == main
		}),
		forward(chromedp.Events(wctx, page.FrameStartedNavigating), sink, func(e page.EventFrameStartedNavigating) (Event, bool) {
			return Event{Kind: EventNavRequested}, e.FrameID == main && e.NavigationType != page.FrameStartedNavigatingNavigationTypeSameDocument
		}),
		forward(chromedp.Events(wctx, page.FrameNavigated), sink, func(e page.EventFrameNavigated) (Event, bool) {
			return Event{Kind: EventNavigated}, e.Frame != nil && (e.Frame.ID == main || e.Frame.ParentID == "")
		}),
		forward(chromedp.Events(wctx, page.NavigatedWithinDocument), sink, func(e page.EventNavigatedWithinDocument) (Event, bool) {
			return Event{Kind: EventSameDocument}, e.FrameID == main
		}),
		forward(chromedp.Events(wctx, page.LoadEventFired), sink, func(page.EventLoadEventFired) (Event, bool) {
			return Event{Kind: EventLoaded}, true
		}),
	)
	return func() {
		cancel()
		for _, wait := range stops {
			wait()
		}
	}, nil
}

// forward ranges over one event stream on its own goroutine, handing each
// event to sink as convert makes it (an event it drops goes as a zero
// Event: activity only); the returned function waits for the end.
func forward[E any](events func(func(E, error) bool), sink func(Event), convert func(E) (Event, bool)) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, err := range events {
			if err != nil {
				return
			}
			// An event convert drops still counts as page activity.
			ev, ok := convert(e)
			if !ok {
				ev = Event{}
			}
			sink(ev)
		}
	}()
	return func() { <-done }
}
