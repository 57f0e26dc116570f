// Package firefox is bobby's page operations on Firefox over WebDriver BiDi
// (package bidi): the accessibility snapshot from the in-page walker of
// package snapshot, targets resolved to elements, native pointer clicks
// with modifier keys at an element's center, typing, navigation, dialogs,
// waits, screenshots; Runtime holds the sessions (BiDi user contexts) and
// their pages (tabs). It is the Firefox side of the gateway's engine seam.
package firefox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// sandbox is the isolated realm the walker runs in: page scripts share the
// DOM with it but neither see nor replace its ref map.
const sandbox = "bobby"

// Page is one Firefox tab (a top-level browsing context). Safe for
// concurrent use; calls on one page are serialized so refs stay ordered.
type Page struct {
	conn *bidi.Conn
	bc   string

	mu   sync.Mutex
	next int64 // the ref number the next new document starts from

	dmu    sync.Mutex
	prompt *Prompt // the open dialog, while WatchDialogs runs

	session string // the user context of a page a Session opened
	smu     sync.Mutex
	stop    func() // removes the dialog watcher

	lmu  sync.Mutex
	last *State // the last State read
}

// ID is the page's id: its browsing context id.
func (p *Page) ID() string { return p.bc }

// SessionID is the session (user context) the page belongs to, "" for a
// page NewPage wrapped by itself.
func (p *Page) SessionID() string { return p.session }

func (p *Page) stopWatch() {
	p.smu.Lock()
	defer p.smu.Unlock()
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
}

type bidiEvent = bidi.Event

// NewPage wraps the browsing context bc of conn.
func NewPage(conn *bidi.Conn, bc string) *Page { return &Page{conn: conn, bc: bc, next: 1} }

// Context is the page's browsing context id.
func (p *Page) Context() string { return p.bc }

// Navigate loads url and waits for the load event.
func (p *Page) Navigate(ctx context.Context, url string) (bidi.Navigation, error) {
	nav, err := p.conn.Navigate(ctx, p.bc, url, bidi.WaitComplete)
	if err != nil {
		return nav, fmt.Errorf("navigate %s: %w", url, err)
	}
	return nav, nil
}

// walk runs the walker and parses its tree.
func (p *Page) walk(ctx context.Context) (*snapshot.Walk, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, err := p.conn.CallFunctionIn(ctx, p.bc, sandbox, snapshot.WalkFunction(), "walk", p.next)
	if err != nil {
		return nil, fmt.Errorf("walk page: %w", err)
	}
	text, err := jsonField(v)
	if err != nil {
		return nil, fmt.Errorf("walk page: %w", err)
	}
	fr, _ := v.Field("frames")
	items := fr.Items()
	frames := make([]string, len(items))
	for i, f := range items {
		frames[i] = f.WindowContext()
	}
	w, err := snapshot.ParseWalk([]byte(text), frames)
	if err != nil {
		return nil, err
	}
	if w.Next > p.next {
		p.next = w.Next
	}
	return w, nil
}

// jsonField reads the JSON text the walker answers in its "json" field.
func jsonField(v bidi.RemoteValue) (string, error) {
	js, ok := v.Field("json")
	if !ok {
		return "", fmt.Errorf("walker answered a %s without json", v.Type)
	}
	d, err := js.Decode()
	if err != nil {
		return "", err
	}
	s, ok := d.(string)
	if !ok {
		return "", errors.New("walker json is not a string")
	}
	return s, nil
}

// Snapshot takes the accessibility snapshot of the page, rendered by the
// same rules as Chromium's.
func (p *Page) Snapshot(ctx context.Context, opts snapshot.Options) (*snapshot.Snapshot, error) {
	w, err := p.walk(ctx)
	if err != nil {
		return nil, fmt.Errorf("take snapshot: %w", err)
	}
	return w.Snapshot(opts)
}

// Located is a resolved target: its ref, where it is, and the element's
// shared id (the protocol's handle on it).
type Located struct {
	Ref      string
	Where    snapshot.Location
	SharedID string
}

// Locate resolves a ref or a role and name target to the element, scrolled
// into view when reveal is set. A stale ref gives the snapshot package's
// not-found error naming the repair; a selector target is not supported.
func (p *Page) Locate(ctx context.Context, t snapshot.Target, reveal bool) (Located, error) {
	if err := t.Validate(); err != nil {
		return Located{}, fmt.Errorf("resolve target: %w", err)
	}
	ref := t.Ref
	switch {
	case t.Selector != "":
		return Located{}, fmt.Errorf("resolve target: %w: selector targets are not supported on Firefox yet; use a ref or role and name from a snapshot", snapshot.ErrInvalidTarget)
	case ref == "":
		w, err := p.walk(ctx)
		if err != nil {
			return Located{}, fmt.Errorf("resolve target: %w", err)
		}
		nr, err := w.Pick(t)
		if err != nil {
			return Located{}, err
		}
		ref = nr.Ref()
	}
	id, err := snapshot.ParseRef(ref)
	if err != nil {
		return Located{}, fmt.Errorf("resolve target: %w", err)
	}
	op := "locate"
	if reveal {
		op = "reveal"
	}
	p.mu.Lock()
	v, err := p.conn.CallFunctionIn(ctx, p.bc, sandbox, snapshot.WalkFunction(), op, int64(id))
	p.mu.Unlock()
	if err != nil {
		return Located{}, fmt.Errorf("resolve target: %w", err)
	}
	text, err := jsonField(v)
	if err != nil {
		return Located{}, fmt.Errorf("resolve target: %w", err)
	}
	loc, err := snapshot.ParseLocation([]byte(text))
	if err != nil {
		return Located{}, fmt.Errorf("resolve target: %w", err)
	}
	check := t
	check.Ref = ref
	if err := loc.Check(check); err != nil {
		return Located{}, fmt.Errorf("resolve target: %w", err)
	}
	el, _ := v.Field("el")
	return Located{Ref: ref, Where: loc, SharedID: el.SharedID}, nil
}

// ErrNotInteractable means the element has no box to click, or something
// covers the point a click would land on.
var ErrNotInteractable = errors.New("element is not interactable")

// NotSentError wraps a failure of an action (Click, TypeInto) that came
// before the action sent the page any input: checking its options,
// locating its target (script calls that read the page and scroll the
// target into view) or finding the target not interactable. No pointer or
// key event reached the page and nothing was focused, so the action did
// not happen and may be made again (a page whose script never yields
// answers no locating call, so an action on it ends here when its context
// does). Its text is the wrapped error's.
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return e.Err.Error() }
func (e *NotSentError) Unwrap() error { return e.Err }

// notSent marks err as a failure before any input reached the page.
func notSent(err error) error { return &NotSentError{Err: err} }

// Modifier key values of the WebDriver actions model.
var modifierKeys = map[string]string{
	"Alt": "\uE00A", "Control": "\uE009", "Meta": "\uE03D", "Shift": "\uE008",
}

// ClickOptions shape a click: Modifiers are held during it ("Alt",
// "Control", "Meta", "Shift"); Button is "left" (default), "middle" or
// "right"; Count 2 double-clicks.
type ClickOptions struct {
	Modifiers []string
	Button    string
	Count     int
}

// Click scrolls the target into view and clicks its center with the native
// pointer, holding the modifier keys, as a user would. A failure before the
// pointer moved is a [*NotSentError].
func (p *Page) Click(ctx context.Context, t snapshot.Target, o ClickOptions) (Located, error) {
	button := 0
	switch o.Button {
	case "", "left":
	case "middle":
		button = 1
	case "right":
		button = 2
	default:
		return Located{}, notSent(fmt.Errorf("click: unknown button %q (left, middle, right)", o.Button))
	}
	count := o.Count
	if count == 0 {
		count = 1
	}
	if count < 1 || count > 3 {
		return Located{}, notSent(fmt.Errorf("click: count %d out of range 1..3", o.Count))
	}
	var keys []string
	for _, m := range o.Modifiers {
		k, ok := modifierKeys[m]
		if !ok {
			return Located{}, notSent(fmt.Errorf("click: unknown modifier %q (Alt, Control, Meta, Shift)", m))
		}
		keys = append(keys, k)
	}
	loc, err := p.Locate(ctx, t, true)
	if err != nil {
		return Located{}, notSent(fmt.Errorf("click: %w", err))
	}
	if !loc.Where.Visible || !loc.Where.Hit {
		return loc, notSent(fmt.Errorf("click %s: %w (visible=%v, covered=%v); scroll, close what covers it, or take a new a11y_snapshot",
			loc.Ref, ErrNotInteractable, loc.Where.Visible, !loc.Where.Hit))
	}
	// Ticks run in step across the sources: the keys go down with the
	// move, stay down through the presses, and come up after.
	var ptr, key []any
	ptr = append(ptr, map[string]any{"type": "pointerMove", "x": int(loc.Where.X), "y": int(loc.Where.Y)})
	for _, k := range keys {
		key = append(key, map[string]any{"type": "keyDown", "value": k})
	}
	for len(key) < len(ptr) {
		key = append(key, map[string]any{"type": "pause"})
	}
	for range count {
		ptr = append(ptr, map[string]any{"type": "pointerDown", "button": button}, map[string]any{"type": "pointerUp", "button": button})
	}
	for len(key) < len(ptr) {
		key = append(key, map[string]any{"type": "pause"})
	}
	for _, k := range keys {
		key = append(key, map[string]any{"type": "keyUp", "value": k})
		ptr = append(ptr, map[string]any{"type": "pause"})
	}
	actions := []any{map[string]any{
		"type": "pointer", "id": "bobby-mouse", "parameters": map[string]string{"pointerType": "mouse"}, "actions": ptr,
	}}
	if len(keys) > 0 {
		actions = append(actions, map[string]any{"type": "key", "id": "bobby-keys", "actions": key})
	}
	return loc, p.perform(ctx, "click "+loc.Ref, actions)
}

// perform runs input actions. Firefox answers input.performActions only
// once the events were handled, and a handler that opens alert() or
// confirm() holds that answer until the dialog closes: when the page
// watches dialogs, a dialog opening ends the wait (the action did happen;
// the dialog is the caller's to handle).
func (p *Page) perform(ctx context.Context, what string, actions []any) error {
	done := make(chan error, 1)
	go func() { done <- p.conn.PerformActions(ctx, p.bc, actions) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		case <-tick.C:
			if _, open := p.Dialog(); open {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}

// TypeText types text into the focused element, one key press per
// character, as a keyboard would (input and key events fire).
func (p *Page) TypeText(ctx context.Context, text string) error {
	if text == "" {
		return nil
	}
	var key []any
	for _, r := range text {
		k := string(r)
		if r == '\n' {
			k = "\uE007" // Enter
		}
		if r >= '\uE000' && r <= '\uF8FF' {
			return fmt.Errorf("type text: character %U is a WebDriver key code, not text", r)
		}
		key = append(key, map[string]any{"type": "keyDown", "value": k}, map[string]any{"type": "keyUp", "value": k})
	}
	return p.perform(ctx, "type text", []any{map[string]any{"type": "key", "id": "bobby-keys", "actions": key}})
}
