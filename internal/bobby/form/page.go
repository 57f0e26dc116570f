package form

import (
	"context"
	_ "embed"
	"errors"

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

// Page is what the form functions need from one browser tab, whatever the
// engine: Chromium (chromedp over CDP, [Chromium]) or Firefox (WebDriver
// BiDi, package firefox). Functions are page functions made by pageFunc:
// a declaration taking one argument, the JSON array of the call's
// arguments, with `this` bound to the object the call names.
type Page interface {
	// Engine names the browser ("chromium", "firefox") for errors.
	Engine() string
	// Ready reports [snapshot.ErrNoPage] when there is no page to work on.
	Ready(ctx context.Context) error
	// Resolve resolves a target to a live element of the page; a target
	// that names nothing gives snapshot's not-found or ambiguous errors.
	Resolve(ctx context.Context, t snapshot.Target) (Element, error)
	// Call runs fn with `this` bound to obj (nil: the document), awaits a
	// promise it returns, and decodes its JSON result into out (nil
	// ignores it). A thrown exception is an error with its message.
	Call(ctx context.Context, obj Object, fn string, out any, args ...any) error
	// Hold is Call keeping the result in the page, by reference, for later
	// calls; Release lets go of it.
	Hold(ctx context.Context, obj Object, fn string, args ...any) (Object, error)
	// Elements is Call for a function that returns {els: [elements], data:
	// "json text"}: it returns data and, per element, what the page's
	// accessibility tree says of it.
	Elements(ctx context.Context, obj Object, fn string, args ...any) ([]Found, string, error)
	// ScrollIntoView brings the element into view; best effort (a hidden
	// element cannot scroll, and the next step says so).
	ScrollIntoView(ctx context.Context, el Element)
	// Centre is the centre of the element's first visible box in the
	// coordinates of the top-level viewport; ErrNotClickable without one.
	Centre(ctx context.Context, el Element) (x, y float64, err error)
	// Click presses and releases the left mouse button at x, y with the
	// native pointer.
	Click(ctx context.Context, x, y float64) error
	// InsertText types text into the focused element through the input
	// pipeline (beforeinput and input fire natively).
	InsertText(ctx context.Context, text string) error
	// PressKey presses one key that types no character ("Backspace").
	PressKey(ctx context.Context, key string) error
	// SetFiles puts local files on a file input (input and change fire).
	SetFiles(ctx context.Context, el Element, paths []string) error
	// Watch reports, from before it returns until stop, the navigations of
	// the top-level document and the network requests of the page to sink,
	// which must not block. Events of different kinds may arrive out of
	// order (a response before its request).
	Watch(ctx context.Context, sink func(Event)) (stop func(), err error)
	// Release lets go of the objects the calls held in the page.
	Release(ctx context.Context)
}

// Object is an engine's handle on a value in the page (an element, or a
// result Hold kept); nil means the document.
type Object any

// Element is a resolved control: its ref and the engine's handle on it.
type Element struct {
	Ref    string
	Object Object
}

// Found is one element a page function returned: its ref, the node a
// snapshot shows for it (nil when the accessibility tree leaves it out: a
// hidden or inert element), and for an iframe the id of its frame ("" when
// unknown or not an iframe).
type Found struct {
	Ref   string
	Node  *snapshot.Node
	Frame string
}

// EventKind is what a watched page reported.
type EventKind int

// The events a submit watch follows.
const (
	// EventRequest: the page sent a request (a redirect repeats its id
	// with the new URL).
	EventRequest EventKind = iota + 1
	// EventResponse: a response arrived for a request (Status).
	EventResponse
	// EventFinished: a request ended with its body loaded.
	EventFinished
	// EventFailed: a request failed (Failed holds the network error, or
	// "canceled").
	EventFailed
	// EventNavRequested: the top-level document started a cross-document
	// navigation.
	EventNavRequested
	// EventNavigated: a cross-document navigation of the top-level
	// document committed.
	EventNavigated
	// EventSameDocument: the top-level document changed its URL without
	// leaving (a fragment, history.pushState).
	EventSameDocument
	// EventLoaded: the top-level document fired load.
	EventLoaded
)

// Event is one report of a watched page. Request events carry the request
// id, and Type in Chromium's resource type names (Document, XHR, Fetch,
// Ping, Other, Image, Script, Stylesheet, Font, EventSource, WebSocket, …)
// so both engines judge a submit by the same rules.
type Event struct {
	Kind    EventKind
	Request string
	Type    string
	Method  string
	URL     string
	Frame   string
	Status  int64
	Failed  string
}

// Tab runs the form functions on one page of any engine.
type Tab struct{ p Page }

// On binds the form functions to p.
func On(p Page) Tab { return Tab{p: p} }

// pageFunc wraps a body into a function declaration with the helpers. The
// arguments arrive as one JSON array and are unpacked into params: CDP
// drops an argument whose JSON is empty ("" or []), which would turn a
// clear into "undefined".
func pageFunc(params, body string) string {
	return "function(__args) {\nconst [" + params + "] = __args || [];\n" + helpersJS + "\n" + body + "\n}"
}

// settleJS resolves once the document has gone 50 ms without a DOM mutation
// (capped at one second): time for a revealed block to render.
const settleJS = `function() { return new Promise((resolve) => {
  let quiet;
  const done = () => { obs.disconnect(); clearTimeout(cap); resolve(true); };
  const obs = new MutationObserver(() => { clearTimeout(quiet); quiet = setTimeout(done, 50); });
  obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  quiet = setTimeout(done, 50);
  const cap = setTimeout(done, 1000);
}); }`

// settle waits for the page's DOM to stop changing. It is best effort: a
// page that never settles costs at most the cap.
func (t Tab) settle(ctx context.Context) {
	_ = t.p.Call(ctx, nil, settleJS, nil)
}

// errNoObject is a Hold whose function returned no object.
var errNoObject = errors.New("call into page: no object returned")
