package form

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/bobby/jsobject"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// The page-side code lives in js/: helpers.js is pasted at the top of every
// function so each call is self-contained and nothing lands in the page's
// globals.
var (
	//go:embed js/helpers.js
	helpersJS string
	//go:embed js/collect.js
	collectJS string
	//go:embed js/actions.js
	actionsJS string
)

// pageFunc wraps a body into a function declaration with the helpers. The
// arguments arrive as one JSON array and are unpacked into params: CDP
// drops an argument whose JSON is empty ("" or []), which would turn a
// clear into "undefined".
func pageFunc(params, body string) string {
	return "function(__args) {\nconst [" + params + "] = __args || [];\n" + helpersJS + "\n" + body + "\n}"
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

// objectGroup holds the remote objects of one call; released at its end.
const objectGroup = "bobby-form"

func releaseObjects(ctx context.Context) {
	_, _ = chromedp.Call(context.WithoutCancel(ctx), runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: objectGroup})
}

// checkPage refuses a context without a page target: chromedp would
// otherwise open a new tab for the call.
func checkPage(ctx context.Context) error {
	c := chromedp.FromContext(ctx)
	if c == nil || c.Target == nil {
		return snapshot.ErrNoPage
	}
	return nil
}

// element is a resolved control: where it is and a handle to call into it.
type element struct {
	ref    snapshot.NodeRef
	obj    runtime.RemoteObjectID
	target snapshot.Target
}

// resolveElement resolves a target to a live element with a JS handle.
func resolveElement(ctx context.Context, t snapshot.Target) (element, error) {
	ref, err := snapshot.Resolve(ctx, t)
	if err != nil {
		return element{}, err
	}
	res, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: ref.BackendNodeID, ObjectGroup: objectGroup})
	if err != nil || res.Object == nil || res.Object.ObjectID == "" {
		return element{}, &snapshot.NotFoundError{Target: t, Reason: fmt.Sprintf("ref %s is no longer in the page", ref.Ref())}
	}
	return element{ref: ref, obj: res.Object.ObjectID, target: t}, nil
}

// callOn runs fn on the object with JSON arguments and decodes the JSON
// result into out (nil to ignore it).
func callOn(ctx context.Context, obj runtime.RemoteObjectID, fn string, out any, args ...any) error {
	cargs, err := packArgs(args)
	if err != nil {
		return err
	}
	err = jsobject.Call{Object: obj, Fn: fn, Args: cargs, Await: true, Group: objectGroup}.Do(ctx, jsobject.InContext, out)
	var exc *jsobject.Exception
	if errors.As(err, &exc) {
		return fmt.Errorf("call into page: %s", exc.Text)
	}
	if err != nil {
		return fmt.Errorf("call into page: %w", err)
	}
	return nil
}

// deepValue is the shape of Runtime deep serialization.
type deepValue struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// decodeElsData reads a deep-serialized {els: [elements], data: "json"}:
// the backend node id of each element (0 where one is missing) and the data
// string.
func decodeElsData(raw []byte) ([]cdp.BackendNodeID, string, error) {
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, "", fmt.Errorf("decode page result: %w", err)
	}
	var ids []cdp.BackendNodeID
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
			ids = make([]cdp.BackendNodeID, len(items))
			for i, it := range items {
				var n struct {
					BackendNodeID cdp.BackendNodeID `json:"backendNodeId"`
				}
				if it.Type == "node" && json.Unmarshal(it.Value, &n) == nil {
					ids[i] = n.BackendNodeID
				}
			}
		}
	}
	return ids, data, nil
}

// callDeep runs fn on obj (or evaluates it on the document when obj is
// empty) and returns the elements and data of an {els, data} result.
func callDeep(ctx context.Context, obj runtime.RemoteObjectID, fn string, arg any) ([]cdp.BackendNodeID, string, error) {
	cargs, err := packArgs([]any{arg})
	if err != nil {
		return nil, "", err
	}
	ser := &runtime.SerializationOptions{Serialization: "deep", MaxDepth: new(int64(2))}
	var (
		result *runtime.RemoteObject
		exc    *runtime.ExceptionDetails
	)
	if obj == "" {
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
			ObjectID:             obj,
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
	return decodeElsData(result.DeepSerializedValue.Value)
}

// frameIDs maps iframe elements (by backend id) to their frame ids.
func frameIDs(ctx context.Context, ids []cdp.BackendNodeID) map[cdp.BackendNodeID]cdp.FrameID {
	out := map[cdp.BackendNodeID]cdp.FrameID{}
	for _, id := range ids {
		if id == 0 {
			continue
		}
		d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: id})
		if err == nil && d.Node != nil {
			out[id] = d.Node.FrameID
		}
	}
	return out
}

// settleJS resolves once the document has gone 50 ms without a DOM mutation
// (capped at one second): time for a revealed block to render.
const settleJS = `new Promise((resolve) => {
  let quiet;
  const done = () => { obs.disconnect(); clearTimeout(cap); resolve(true); };
  const obs = new MutationObserver(() => { clearTimeout(quiet); quiet = setTimeout(done, 50); });
  obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  quiet = setTimeout(done, 50);
  const cap = setTimeout(done, 1000);
})`

// settle waits for the page's DOM to stop changing. It is best effort: a
// page that never settles costs at most the cap.
func settle(ctx context.Context) {
	_, _ = chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: settleJS, AwaitPromise: new(true), ReturnByValue: new(true)})
}
