// Package jsobject calls JavaScript functions on remote objects of a page
// over the Chrome DevTools Protocol (Runtime.callFunctionOn): it builds the
// call, renders a thrown exception, and decodes the by-value result. The
// browser, snapshot and form packages each run calls through their own
// executor (a page target, or the chromedp context) and wrap the errors in
// their own terms.
package jsobject

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Exec runs one Runtime.callFunctionOn.
type Exec func(ctx context.Context, p runtime.CallFunctionOnParams) (runtime.CallFunctionOnResult, error)

// Call is one function call with `this` bound to Object.
type Call struct {
	Object runtime.RemoteObjectID
	// Fn is the function declaration, e.g. "function(a) { return this.value }".
	Fn   string
	Args []*runtime.CallArgument
	// Await waits for a returned promise.
	Await bool
	// Group is the object group of remote objects the call creates.
	Group string
}

// Exception is a JavaScript exception the called function threw.
type Exception struct {
	// Text is the first line of the exception's description.
	Text string
}

func (e *Exception) Error() string { return e.Text }

// Do runs c through exec and decodes its JSON result into out (nil ignores
// it; an undefined result leaves out as it is). An error of exec is
// returned as it is; a thrown exception is an *Exception.
func (c Call) Do(ctx context.Context, exec Exec, out any) error {
	p := runtime.CallFunctionOnParams{
		FunctionDeclaration: c.Fn,
		ObjectID:            c.Object,
		Arguments:           c.Args,
		ReturnByValue:       new(true),
		ObjectGroup:         c.Group,
	}
	if c.Await {
		p.AwaitPromise = new(true)
	}
	res, err := exec(ctx, p)
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return &Exception{Text: ExceptionText(res.ExceptionDetails)}
	}
	if out == nil || res.Result == nil || len(res.Result.Value) == 0 {
		return nil
	}
	if err := json.Unmarshal(res.Result.Value, out); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	return nil
}

// Args passes each value as one argument: a RemoteObjectID by reference,
// anything else as its JSON.
func Args(vals ...any) ([]*runtime.CallArgument, error) {
	out := make([]*runtime.CallArgument, 0, len(vals))
	for _, v := range vals {
		if id, ok := v.(runtime.RemoteObjectID); ok {
			out = append(out, &runtime.CallArgument{ObjectID: id})
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode argument: %w", err)
		}
		out = append(out, &runtime.CallArgument{Value: b})
	}
	return out, nil
}

// ExceptionText renders a JavaScript exception: the first line of its
// description (the message, without the stack), else the CDP text.
func ExceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		first, _, _ := strings.Cut(d.Exception.Description, "\n")
		return first
	}
	return d.Text
}

// InContext runs calls on the target of the chromedp context.
func InContext(ctx context.Context, p runtime.CallFunctionOnParams) (runtime.CallFunctionOnResult, error) {
	return chromedp.Call(ctx, runtime.CallFunctionOn, p)
}

// On runs calls on the target s.
func On(s cdp.Session) Exec {
	return func(ctx context.Context, p runtime.CallFunctionOnParams) (runtime.CallFunctionOnResult, error) {
		return cdp.Call(ctx, s, runtime.CallFunctionOn, p)
	}
}
