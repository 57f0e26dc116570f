package firefox

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// State is what the page shows now: its URL and the document's readyState.
type State struct {
	URL        string `json:"url"`
	ReadyState string `json:"readyState"`
	// Status is the HTTP status of the document's response (0 when the
	// browser does not say, as for about:blank).
	Status int `json:"status"`
}

// stateJS reads the document's state in the sandbox (page scripts cannot
// fake it there).
const stateJS = `() => {
	const nav = performance.getEntriesByType('navigation')[0];
	return JSON.stringify({url: location.href, readyState: document.readyState,
		status: nav && typeof nav.responseStatus === 'number' ? nav.responseStatus : 0});
}`

// State reads the page's URL, readyState and response status.
func (p *Page) State(ctx context.Context) (State, error) {
	v, err := p.conn.CallFunctionIn(ctx, p.bc, sandbox, stateJS)
	if err != nil {
		return State{}, fmt.Errorf("read page state: %w", err)
	}
	d, err := v.Decode()
	if err != nil {
		return State{}, fmt.Errorf("read page state: %w", err)
	}
	text, _ := d.(string)
	var st State
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		return State{}, fmt.Errorf("read page state: %w", err)
	}
	p.lmu.Lock()
	p.last = &st
	p.lmu.Unlock()
	return st, nil
}

// LastState is the last State read, if any (a page with an open dialog
// answers no script).
func (p *Page) LastState() (State, bool) {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	if p.last == nil {
		return State{}, false
	}
	return *p.last, true
}

// EvaluateJSON evaluates expression in the page realm (promises awaited)
// and returns its value as JSON. A thrown exception is a *bidi.ScriptError.
func (p *Page) EvaluateJSON(ctx context.Context, expression string) (json.RawMessage, error) {
	v, err := p.conn.Evaluate(ctx, p.bc, expression)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	d, err := v.Decode()
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("evaluate: encode result: %w", err)
	}
	return b, nil
}

// contexts are the page's browsing context and those of its frames,
// depth first.
func (p *Page) contexts(ctx context.Context) ([]string, error) {
	tree, err := p.conn.Tree(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(infos []bidi.Info, in bool)
	walk = func(infos []bidi.Info, in bool) {
		for _, i := range infos {
			mine := in || i.Context == p.bc
			if mine {
				out = append(out, i.Context)
			}
			walk(i.Children, mine)
		}
	}
	walk(tree, false)
	return out, nil
}

// callOnElement calls fn (which must answer true once it ran) on the
// element of loc. A node's shared id resolves only in its own frame's
// browsing context, so an element inside an iframe is tried in each frame.
func (p *Page) callOnElement(ctx context.Context, loc Located, fn string) error {
	wrapped := `(el) => el ? (` + fn + `)(el) : false`
	bcs := []string{p.bc}
	if loc.Where.InFrame {
		var err error
		if bcs, err = p.contexts(ctx); err != nil {
			return err
		}
	}
	for _, bc := range bcs {
		v, err := p.callOnIn(ctx, bc, loc.SharedID, wrapped)
		if err != nil {
			var se *bidi.ScriptError
			if errors.As(err, &se) || bidi.IsCode(err, "no such node") {
				continue
			}
			return err
		}
		if d, _ := v.Decode(); d == true {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is in no frame of the page any more; take a new a11y_snapshot", snapshot.ErrTargetNotFound, loc.Ref)
}

// callOnIn calls fn in the sandbox of bc with the element of sharedID as
// its argument.
func (p *Page) callOnIn(ctx context.Context, bc, sharedID, fn string) (bidi.RemoteValue, error) {
	var out struct {
		Type             string           `json:"type"`
		Result           bidi.RemoteValue `json:"result"`
		ExceptionDetails struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	err := p.conn.Call(ctx, "script.callFunction", map[string]any{
		"functionDeclaration": fn, "arguments": []any{map[string]string{"sharedId": sharedID}},
		"target": map[string]string{"context": bc, "sandbox": sandbox}, "awaitPromise": true, "userActivation": true,
	}, &out)
	if err != nil {
		return bidi.RemoteValue{}, err
	}
	if out.Type == "exception" {
		return bidi.RemoteValue{}, &bidi.ScriptError{Text: out.ExceptionDetails.Text}
	}
	return out.Result, nil
}

// focusJS focuses an element and, with clear, selects its content so the
// next keys replace it.
const focusJS = `(el, clear) => {
	el.focus();
	if (!clear) return true;
	if (typeof el.select === 'function') { el.select(); return true; }
	if (el.isContentEditable) {
		const r = el.ownerDocument.createRange(); r.selectNodeContents(el);
		const s = el.ownerDocument.getSelection(); s.removeAllRanges(); s.addRange(r);
	}
	return true;
}`

// TypeInto focuses the target (scrolled into view) and types text with
// the keyboard; clear replaces what the field holds. It returns the ref. A
// failure before the target was focused is a [*NotSentError].
func (p *Page) TypeInto(ctx context.Context, t snapshot.Target, text string, clear bool) (string, error) {
	loc, err := p.Locate(ctx, t, true)
	if err != nil {
		return "", notSent(fmt.Errorf("type text: %w", err))
	}
	if !loc.Where.Visible {
		return loc.Ref, notSent(fmt.Errorf("type text into %s: %w (it has no box); scroll or take a new a11y_snapshot", loc.Ref, ErrNotInteractable))
	}
	fn := `(el) => (` + focusJS + `)(el, false)`
	if clear {
		fn = `(el) => (` + focusJS + `)(el, true)`
	}
	if err := p.callOnElement(ctx, loc, fn); err != nil {
		return loc.Ref, fmt.Errorf("type text into %s: focus: %w", loc.Ref, err)
	}
	if clear && text == "" {
		// Nothing to type over the selection: delete it.
		del := []any{map[string]any{"type": "keyDown", "value": "\uE003"}, map[string]any{"type": "keyUp", "value": "\uE003"}}
		if err := p.perform(ctx, "clear", []any{map[string]any{"type": "key", "id": "bobby-keys", "actions": del}}); err != nil {
			return loc.Ref, err
		}
	}
	return loc.Ref, p.TypeText(ctx, text)
}

// Shot is a PNG capture and its size in pixels.
type Shot struct {
	PNG           []byte
	Width, Height int
}

// Capture takes a PNG of the viewport, of the whole document (full), or of
// one element (target).
func (p *Page) Capture(ctx context.Context, target *snapshot.Target, full bool) (Shot, error) {
	params := map[string]any{"context": p.bc}
	switch {
	case target != nil && full:
		return Shot{}, fmt.Errorf("screenshot: %w: choose fullPage or a target, not both", snapshot.ErrInvalidTarget)
	case target != nil:
		loc, err := p.Locate(ctx, *target, true)
		if err != nil {
			return Shot{}, fmt.Errorf("screenshot: %w", err)
		}
		params["clip"] = map[string]any{"type": "element", "element": map[string]string{"sharedId": loc.SharedID}}
	case full:
		params["origin"] = "document"
	}
	var out struct {
		Data string `json:"data"`
	}
	if err := p.conn.Call(ctx, "browsingContext.captureScreenshot", params, &out); err != nil {
		return Shot{}, fmt.Errorf("screenshot: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(out.Data)
	if err != nil {
		return Shot{}, fmt.Errorf("screenshot: decode: %w", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return Shot{}, fmt.Errorf("screenshot: %w", err)
	}
	return Shot{PNG: b, Width: cfg.Width, Height: cfg.Height}, nil
}
