package firefox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// FormPage is the form package's Page on a Firefox tab: form.On(p.Forms())
// runs form_snapshot, control_action, fill, complete_form and
// submit_and_verify here as on Chromium. Page functions run in the
// walker's sandbox, so the elements they return get the refs a snapshot
// of this page hands out, and page scripts cannot see or replace them.
type FormPage struct {
	p *Page

	mu      sync.Mutex
	handles []string // results Hold kept, until Release
}

// Forms returns the form package's view of the page.
func (p *Page) Forms() *FormPage { return &FormPage{p: p} }

// held is a value a Hold kept in the sandbox, by its BiDi handle.
type held string

// elementRef is an element by its ref number; the sandbox looks it up in
// the walker's ref map on every call, so a call never holds a node alive.
type elementRef int64

// Engine names Firefox in errors.
func (f *FormPage) Engine() string { return "firefox" }

// Ready reports snapshot.ErrNoPage once the connection to Firefox is gone.
func (f *FormPage) Ready(context.Context) error {
	select {
	case <-f.p.conn.Done():
		return snapshot.ErrNoPage
	default:
		return nil
	}
}

// Resolve resolves a ref, a role and name, or a CSS selector of the top
// document to the element and its ref.
func (f *FormPage) Resolve(ctx context.Context, t snapshot.Target) (form.Element, error) {
	if t.Selector != "" {
		return f.resolveSelector(ctx, t)
	}
	loc, err := f.p.Locate(ctx, t, false)
	if err != nil {
		return form.Element{}, err
	}
	n, err := snapshot.ParseRef(loc.Ref)
	if err != nil {
		return form.Element{}, fmt.Errorf("resolve target: %w", err)
	}
	return form.Element{Ref: loc.Ref, Object: elementRef(n)}, nil
}

// selectJS lists the elements a selector matches in the top document.
const selectJS = `function(sel) {
  let els;
  try { els = Array.from(document.querySelectorAll(sel)); } catch (e) { return {invalid: String(e.message || e)}; }
  return {els: els.slice(0, 20), total: els.length};
}`

// resolveSelector matches a CSS selector in the top document. A selector
// that reaches into frames ("iframe#pay >> input", snapshot.Target's frame
// syntax) is Chromium's alone.
func (f *FormPage) resolveSelector(ctx context.Context, t snapshot.Target) (form.Element, error) {
	if err := t.Validate(); err != nil {
		return form.Element{}, fmt.Errorf("resolve target: %w", err)
	}
	if strings.Contains(t.Selector, ">>") {
		return form.Element{}, fmt.Errorf("resolve target: %w: %w: a selector into a frame (iframe#id >> css) works on Chromium only; "+
			"use a ref or role and name from a snapshot, or engine = \"chromium\"", ErrUnsupportedOnEngine, snapshot.ErrInvalidTarget)
	}
	fn := `function(sel) { const r = (` + selectJS + `)(sel); if (r.invalid) return {els: [], data: JSON.stringify(r)};
  return {els: r.els, data: JSON.stringify({total: r.total})}; }`
	found, data, err := f.elements(ctx, 0, "", fn, false, t.Selector)
	if err != nil {
		return form.Element{}, fmt.Errorf("resolve target: %w", err)
	}
	var res struct {
		Invalid string `json:"invalid"`
		Total   int    `json:"total"`
	}
	if err := json.Unmarshal([]byte(data), &res); err != nil {
		return form.Element{}, fmt.Errorf("resolve target: decode: %w", err)
	}
	if res.Invalid != "" {
		return form.Element{}, fmt.Errorf("resolve target: %w: selector %q: %s", snapshot.ErrInvalidTarget, t.Selector, res.Invalid)
	}
	i := 0
	switch {
	case res.Total == 0:
		return form.Element{}, fmt.Errorf("resolve target: %w", &snapshot.NotFoundError{Target: t, Reason: fmt.Sprintf("no element matches selector %q", t.Selector)})
	case t.Index != nil:
		i = *t.Index
		if i >= res.Total {
			return form.Element{}, fmt.Errorf("resolve target: %w", &snapshot.NotFoundError{Target: t,
				Reason: fmt.Sprintf("index %d is past the %d elements selector %q matches", i, res.Total, t.Selector)})
		}
		if i >= len(found) {
			return form.Element{}, fmt.Errorf("resolve target: %w", &snapshot.NotFoundError{Target: t,
				Reason: fmt.Sprintf("index %d is past the first %d matches this resolver reads", i, len(found))})
		}
	case res.Total > 1:
		amb := &snapshot.AmbiguousError{Target: t, Matches: res.Total}
		for j, fd := range found {
			c := snapshot.Candidate{Index: j, Ref: fd.Ref}
			if fd.Node != nil {
				c.Role, c.Name = fd.Node.Role, fd.Node.Name
			}
			amb.Candidates = append(amb.Candidates, c)
		}
		return form.Element{}, fmt.Errorf("resolve target: %w", amb)
	}
	n, err := snapshot.ParseRef(found[i].Ref)
	if err != nil {
		return form.Element{}, fmt.Errorf("resolve target: %w", err)
	}
	return form.Element{Ref: found[i].Ref, Object: elementRef(n)}, nil
}

// wrapJS calls a form page function in the sandbox: `this` is the element
// behind ref __ref (looked up in the walker's ref map), the document
// (__ref 0) or the held value passed as this (__ref -1). The function's
// one argument arrives as JSON text. __mode picks the answer: "json" (the
// result as JSON text), "hold" (the result itself, kept by handle) or
// "els" (an {els, data} result with the walker's description of els).
// __base starts the page's ref numbers on a document that has none yet.
const wrapJS = `function(__ref, __json, __mode, __base) {
  const __walk = %s;
  __walk('describe', {base: __base, els: []});
  let __self = this;
  if (__ref > 0) {
    const l = __walk('locate', __ref);
    if (!l.el) throw new Error('ref e' + __ref + ' names no element in this page (the element was removed, or the ref came from another page)');
    __self = l.el;
  } else if (__ref === 0) {
    __self = document;
  }
  const __fn = %s;
  return Promise.resolve(__fn.call(__self, JSON.parse(__json))).then((r) => {
    if (__mode === 'hold') return r;
    if (__mode === 'els') {
      const d = __walk('describe', {base: __base, els: (r && r.els) || []});
      return {data: r && typeof r.data === 'string' ? r.data : '', json: d.json, frames: d.frames};
    }
    return r === undefined ? 'null' : JSON.stringify(r);
  });
}`

func wrap(fn string) string { return fmt.Sprintf(wrapJS, snapshot.WalkFunction(), fn) }

// callResult is what script.callFunction answers.
type callResult struct {
	Type             string           `json:"type"`
	Result           bidi.RemoteValue `json:"result"`
	ExceptionDetails struct {
		Text string `json:"text"`
	} `json:"exceptionDetails"`
}

// objectRef is how a page function is told its `this`: ref is an element's
// walker ref, -1 for a held object (its handle h), 0 for none.
func objectRef(obj form.Object) (ref int64, h string, err error) {
	switch o := obj.(type) {
	case nil:
	case elementRef:
		ref = int64(o)
	case held:
		ref, h = -1, string(o)
	default:
		err = fmt.Errorf("call into page: %T is not a Firefox object", obj)
	}
	return ref, h, err
}

// call runs a wrapped page function in the sandbox with `this` from obj.
func (f *FormPage) call(ctx context.Context, obj form.Object, fn, mode string, args []any) (bidi.RemoteValue, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return bidi.RemoteValue{}, fmt.Errorf("encode arguments: %w", err)
	}
	ref, h, err := objectRef(obj)
	if err != nil {
		return bidi.RemoteValue{}, err
	}
	var this any
	if ref < 0 {
		this = map[string]string{"handle": h}
	}
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	local := []any{
		map[string]any{"type": "number", "value": ref},
		map[string]any{"type": "string", "value": string(raw)},
		map[string]any{"type": "string", "value": mode},
		map[string]any{"type": "number", "value": f.p.next},
	}
	params := map[string]any{
		"functionDeclaration": wrap(fn), "arguments": local,
		"target":       map[string]string{"context": f.p.bc, "sandbox": sandbox},
		"awaitPromise": true, "userActivation": true,
	}
	if this != nil {
		params["this"] = this
	}
	if mode == "hold" {
		params["resultOwnership"] = "root"
	}
	var out callResult
	if err := f.p.conn.Call(ctx, "script.callFunction", params, &out); err != nil {
		if bidi.IsCode(err, "no such frame") {
			return bidi.RemoteValue{}, fmt.Errorf("call into page: %w: %w", snapshot.ErrNoPage, err)
		}
		return bidi.RemoteValue{}, fmt.Errorf("call into page: %w", err)
	}
	if out.Type == "exception" {
		return bidi.RemoteValue{}, fmt.Errorf("call into page: %s", strings.TrimPrefix(out.ExceptionDetails.Text, "Error: "))
	}
	return out.Result, nil
}

// Call runs fn and decodes its JSON result into out.
func (f *FormPage) Call(ctx context.Context, obj form.Object, fn string, out any, args ...any) error {
	v, err := f.call(ctx, obj, fn, "json", args)
	if err != nil {
		return err
	}
	d, err := v.Decode()
	if err != nil {
		return fmt.Errorf("call into page: %w", err)
	}
	text, ok := d.(string)
	if !ok {
		return errors.New("call into page: the result is not JSON text")
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		return fmt.Errorf("call into page: decode result: %w", err)
	}
	return nil
}

// CallOnRef runs fn, a page function whose `this` is the element of ref,
// in the walker's sandbox and decodes its JSON-encoded result into out: how
// a page script written for both engines (the upload's chooser probe, from
// package browser) runs on Firefox.
func (p *Page) CallOnRef(ctx context.Context, ref, fn string, out any) error {
	n, err := snapshot.ParseRef(ref)
	if err != nil {
		return fmt.Errorf("call on %s: %w", ref, err)
	}
	return p.Forms().Call(ctx, elementRef(n), fn, out)
}

// Hold runs fn and keeps its result in the sandbox by handle.
func (f *FormPage) Hold(ctx context.Context, obj form.Object, fn string, args ...any) (form.Object, error) {
	v, err := f.call(ctx, obj, fn, "hold", args)
	if err != nil {
		return nil, err
	}
	if v.Handle == "" {
		return nil, errors.New("call into page: no object returned")
	}
	f.mu.Lock()
	f.handles = append(f.handles, v.Handle)
	f.mu.Unlock()
	return held(v.Handle), nil
}

// Elements runs fn, whose result is {els, data}, and describes els as the
// walker sees them, handing out refs to those that have none.
func (f *FormPage) Elements(ctx context.Context, obj form.Object, fn string, args ...any) ([]form.Found, string, error) {
	ref, h, err := objectRef(obj)
	if err != nil {
		return nil, "", err
	}
	return f.elements(ctx, ref, h, fn, true, args...)
}

func (f *FormPage) elements(ctx context.Context, ref int64, h, fn string, packed bool, args ...any) ([]form.Found, string, error) {
	var obj form.Object
	switch {
	case ref > 0:
		obj = elementRef(ref)
	case ref < 0:
		obj = held(h)
	}
	if !packed {
		// fn takes its arguments one by one: adapt it to the one JSON array.
		fn = "function(__a) { return (" + fn + ").apply(this, __a); }"
	}
	v, err := f.call(ctx, obj, fn, "els", args)
	if err != nil {
		return nil, "", err
	}
	dv, _ := v.Field("data")
	dd, _ := dv.Decode()
	data, _ := dd.(string)
	text, err := jsonField(v)
	if err != nil {
		return nil, "", fmt.Errorf("describe elements: %w", err)
	}
	fr, _ := v.Field("frames")
	items := fr.Items()
	frames := make([]string, len(items))
	for i, it := range items {
		frames[i] = it.WindowContext()
	}
	ds, next, err := snapshot.ParseDescribe([]byte(text), frames)
	if err != nil {
		return nil, "", err
	}
	f.p.mu.Lock()
	if next > f.p.next {
		f.p.next = next
	}
	f.p.mu.Unlock()
	found := make([]form.Found, len(ds))
	for i, d := range ds {
		found[i] = form.Found{Ref: d.Ref, Node: d.Node, Frame: d.Frame}
	}
	return found, data, nil
}

func refTarget(el form.Element) snapshot.Target { return snapshot.Target{Ref: el.Ref} }

// ScrollIntoView centres the element, and each frame holding it, in view.
func (f *FormPage) ScrollIntoView(ctx context.Context, el form.Element) {
	_, _ = f.p.Locate(ctx, refTarget(el), true)
}

// Centre is the element's centre in the top-level viewport, frame offsets
// added, as the walker measures it.
func (f *FormPage) Centre(ctx context.Context, el form.Element) (float64, float64, error) {
	loc, err := f.p.Locate(ctx, refTarget(el), false)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", form.ErrNotClickable, err)
	}
	if !loc.Where.Visible {
		return 0, 0, fmt.Errorf("%w: the element has no visible box", form.ErrNotClickable)
	}
	return loc.Where.X, loc.Where.Y, nil
}

// Click moves the mouse to x, y and presses and releases the left button.
func (f *FormPage) Click(ctx context.Context, x, y float64) error {
	ptr := []any{
		map[string]any{"type": "pointerMove", "x": int(x), "y": int(y)},
		map[string]any{"type": "pointerDown", "button": 0},
		map[string]any{"type": "pointerUp", "button": 0},
	}
	return f.p.perform(ctx, "click", []any{map[string]any{
		"type": "pointer", "id": "bobby-mouse", "parameters": map[string]string{"pointerType": "mouse"}, "actions": ptr,
	}})
}

// multilineJS reports whether the focused element takes line breaks.
const multilineJS = `function() {
  let a = document.activeElement;
  for (;;) {
    if (a && a.shadowRoot && a.shadowRoot.activeElement) { a = a.shadowRoot.activeElement; continue; }
    if (a && (a.localName === 'iframe' || a.localName === 'frame')) {
      let d = null;
      try { d = a.contentDocument; } catch (e) { d = null; }
      if (d && d.activeElement) { a = d.activeElement; continue; }
    }
    break;
  }
  return !!a && (a.localName === 'textarea' || a.isContentEditable);
}`

// InsertText types text into the focused element, one key press per
// character. A line break is Enter only where the field takes one (a
// textarea, contenteditable); a single-line input drops it, as Chromium's
// text insertion does, rather than submitting the form. Private-use
// characters U+E000–U+F8FF are WebDriver key codes to Firefox: such text
// answers ErrUnsupportedOnEngine.
func (f *FormPage) InsertText(ctx context.Context, text string) error {
	for _, r := range text {
		if r >= '\uE000' && r <= '\uF8FF' {
			return fmt.Errorf("insert text: %w: Firefox's key input reads %U as a WebDriver key, not as text; "+
				"leave the private-use character out, or use engine = \"chromium\"", ErrUnsupportedOnEngine, r)
		}
	}
	if err := f.activate(ctx); err != nil {
		return fmt.Errorf("insert text: %w", err)
	}
	if strings.ContainsRune(text, '\r') {
		text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	}
	if strings.Contains(text, "\n") {
		var multi bool
		if err := f.Call(ctx, nil, multilineJS, &multi); err != nil {
			return fmt.Errorf("insert text: %w", err)
		}
		if !multi {
			text = strings.ReplaceAll(text, "\n", "")
		}
	}
	if err := f.p.TypeText(ctx, text); err != nil {
		return fmt.Errorf("insert text: %w", err)
	}
	return nil
}

// activate brings the tab to the front before typing, as a person types
// only into the tab they see: Firefox keeps a background tab's window
// unfocused, and there leaving a field fires no change event.
func (f *FormPage) activate(ctx context.Context) error {
	return f.p.conn.Call(ctx, "browsingContext.activate", map[string]string{"context": f.p.bc}, nil)
}

// keyValues are the WebDriver key values of the keys PressKey knows.
var keyValues = map[string]string{"Backspace": "\uE003", "Delete": "\uE017"}

// PressKey presses and releases one key that types no character.
func (f *FormPage) PressKey(ctx context.Context, key string) error {
	k, ok := keyValues[key]
	if !ok {
		return fmt.Errorf("press %s: unknown key", key)
	}
	if err := f.activate(ctx); err != nil {
		return fmt.Errorf("press %s: %w", key, err)
	}
	return f.p.perform(ctx, "press "+key, []any{map[string]any{"type": "key", "id": "bobby-keys", "actions": []any{
		map[string]any{"type": "keyDown", "value": k}, map[string]any{"type": "keyUp", "value": k},
	}}})
}

// SetFiles puts local files on a file input through input.setFiles, which
// fires input and change as a file picker does (see Page.SetInputFiles:
// an input inside an iframe too).
func (f *FormPage) SetFiles(ctx context.Context, el form.Element, paths []string) error {
	_, err := f.p.SetInputFiles(ctx, el.Ref, paths)
	return err
}

// Release disowns the values Hold kept.
func (f *FormPage) Release(ctx context.Context) {
	f.mu.Lock()
	hs := f.handles
	f.handles = nil
	f.mu.Unlock()
	if len(hs) == 0 {
		return
	}
	// Bounded as Chromium's release is: a page a dialog blocks answers no
	// script command until the dialog is answered.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), form.ReleaseTimeout)
	defer cancel()
	_ = f.p.conn.Call(rctx, "script.disown", map[string]any{
		"handles": hs, "target": map[string]string{"context": f.p.bc, "sandbox": sandbox},
	}, nil)
}
