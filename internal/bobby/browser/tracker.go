package browser

import (
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
)

// tracker keeps the state of one page from its CDP events: URL, ready state,
// the document loads, in-flight requests and the open dialog. It is fed by a
// chromedp listener that runs on the target's read loop, so handle must be
// fast and must never send a CDP command. Everything a caller reads from it
// (Page.State, PendingDialog, WaitNetworkQuiet) is answered from memory, which
// is why those calls keep working while a dialog blocks the renderer.
type tracker struct {
	mainFrame cdp.FrameID

	// onDialog is called (under no lock) when a dialog opens, so the page can
	// cancel the work that the dialog blocks.
	onDialog func(Dialog)
	// onCrash is called (under no lock) when the renderer crashes.
	onCrash func()
	// onCommit is called (under no lock) with the URL of each main-frame
	// document commit.
	onCommit func(url string)

	mu         sync.Mutex
	url        string
	urlKnown   bool // false until the page navigates away from its initial about:blank
	readyState string
	loader     cdp.LoaderID // loader of the committed main document
	commits    uint64       // main-frame document commits seen
	docs       map[cdp.LoaderID]*docLoad
	requests   map[network.RequestID]cdp.LoaderID
	lastNet    time.Time // last change of the request set
	dialog     *Dialog
	crashed    bool
	changed    chan struct{} // closed and replaced on every change
}

// docLoad is what the tracker learned about one main-document load.
type docLoad struct {
	status    int64  // HTTP status of the document response, 0 when none
	url       string // URL of the document response
	failed    string // network error text of the document request
	requestID network.RequestID
}

func newTracker(mainFrame cdp.FrameID) *tracker {
	return &tracker{
		mainFrame:  mainFrame,
		url:        "about:blank",
		readyState: "complete",
		docs:       make(map[cdp.LoaderID]*docLoad),
		requests:   make(map[network.RequestID]cdp.LoaderID),
		lastNet:    time.Now(),
		changed:    make(chan struct{}),
	}
}

// notify wakes every waiter. The caller holds t.mu.
func (t *tracker) notify() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// isMain reports whether id is the page's main frame. Before the first event
// names it, the main frame is the target ID (chromedp's convention).
func (t *tracker) isMain(id cdp.FrameID) bool { return id == t.mainFrame }

// handle is the chromedp listener.
func (t *tracker) handle(ev any) {
	var opened *Dialog
	crashed := false
	committed := ""
	t.mu.Lock()
	switch ev := ev.(type) {
	case *page.EventFrameNavigated:
		if ev.Frame == nil || ev.Frame.ParentID != "" {
			break
		}
		t.mainFrame = ev.Frame.ID
		t.url = ev.Frame.URL + ev.Frame.URLFragment
		if t.url != "about:blank" {
			t.urlKnown = true
		}
		t.loader = ev.Frame.LoaderID
		t.commits++
		t.readyState = "loading"
		// Requests of the previous document never report their end once
		// it is gone; drop them so pending_requests does not leak.
		for id, l := range t.requests {
			if l != t.loader {
				delete(t.requests, id)
			}
		}
		t.lastNet = time.Now()
		t.pruneDocs()
		committed = t.url
	case *page.EventNavigatedWithinDocument:
		if t.isMain(ev.FrameID) {
			t.url = ev.URL
			if ev.URL != "about:blank" {
				t.urlKnown = true
			}
		}
	case *page.EventLifecycleEvent:
		if !t.isMain(ev.FrameID) || ev.LoaderID != t.loader {
			break
		}
		switch ev.Name {
		case "init":
			t.readyState = "loading"
		case "DOMContentLoaded":
			if t.readyState == "loading" {
				t.readyState = "interactive"
			}
		case "load":
			t.readyState = "complete"
		}
	case *page.EventJavascriptDialogOpening:
		d := Dialog{
			Type:          string(ev.Type),
			Message:       ev.Message,
			DefaultPrompt: ev.DefaultPrompt,
			URL:           ev.URL,
			OpenedAt:      time.Now().UTC(),
		}
		t.dialog = &d
		opened = &d
	case *page.EventJavascriptDialogClosed:
		t.dialog = nil
	case *network.EventRequestWillBeSent:
		if ev.Type == network.ResourceTypeDocument && t.isMain(ev.FrameID) && ev.LoaderID != "" {
			d := t.doc(ev.LoaderID)
			d.requestID = ev.RequestID
		}
		// Streams that stay open by design would keep the page from ever
		// being network-quiet, so they are not counted.
		if ev.Type == network.ResourceTypeEventSource || ev.Type == network.ResourceTypeWebSocket {
			break
		}
		t.requests[ev.RequestID] = ev.LoaderID
		t.lastNet = time.Now()
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument && t.isMain(ev.FrameID) && ev.LoaderID != "" && ev.Response != nil {
			d := t.doc(ev.LoaderID)
			d.status = ev.Response.Status
			d.url = ev.Response.URL
		}
	case *network.EventLoadingFinished:
		if _, ok := t.requests[ev.RequestID]; ok {
			delete(t.requests, ev.RequestID)
			t.lastNet = time.Now()
		}
	case *network.EventLoadingFailed:
		for _, d := range t.docs {
			if d.requestID == ev.RequestID {
				d.failed = ev.ErrorText
			}
		}
		if _, ok := t.requests[ev.RequestID]; ok {
			delete(t.requests, ev.RequestID)
			t.lastNet = time.Now()
		}
	case *inspector.EventTargetCrashed:
		t.crashed = true
		crashed = true
	default:
		t.mu.Unlock()
		return
	}
	t.notify()
	t.mu.Unlock()

	if opened != nil && t.onDialog != nil {
		t.onDialog(*opened)
	}
	if crashed && t.onCrash != nil {
		t.onCrash()
	}
	if committed != "" && t.onCommit != nil {
		t.onCommit(committed)
	}
}

// doc returns the record of a document load, creating it. The caller holds t.mu.
func (t *tracker) doc(l cdp.LoaderID) *docLoad {
	d, ok := t.docs[l]
	if !ok {
		d = &docLoad{}
		t.docs[l] = d
	}
	return d
}

// pruneDocs bounds the document records; only recent loads matter to a
// navigation waiting for its outcome. The caller holds t.mu.
func (t *tracker) pruneDocs() {
	const keep = 16
	if len(t.docs) <= keep {
		return
	}
	for l := range t.docs {
		if l != t.loader {
			delete(t.docs, l)
		}
		if len(t.docs) <= keep/2 {
			return
		}
	}
}

// snapshot is a consistent copy of the tracker state.
type snapshot struct {
	url        string
	urlKnown   bool
	readyState string
	loader     cdp.LoaderID
	commits    uint64
	pending    int
	lastNet    time.Time
	dialog     *Dialog
	crashed    bool
	changed    <-chan struct{}
}

func (t *tracker) snap() snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := snapshot{
		url:        t.url,
		urlKnown:   t.urlKnown,
		readyState: t.readyState,
		loader:     t.loader,
		commits:    t.commits,
		pending:    len(t.requests),
		lastNet:    t.lastNet,
		crashed:    t.crashed,
		changed:    t.changed,
	}
	if t.dialog != nil {
		d := *t.dialog
		s.dialog = &d
	}
	return s
}

// docInfo returns the record of a document load, if any.
func (t *tracker) docInfo(l cdp.LoaderID) (docLoad, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.docs[l]
	if !ok {
		return docLoad{}, false
	}
	return *d, true
}

// markNavigated records that the caller navigated the page, so its URL is
// reported even when it is about:blank.
func (t *tracker) markNavigated() {
	t.mu.Lock()
	t.urlKnown = true
	t.mu.Unlock()
}

// clearDialog forgets the open dialog after the caller handled it; the
// closed event confirms it later.
func (t *tracker) clearDialog() {
	t.mu.Lock()
	t.dialog = nil
	t.notify()
	t.mu.Unlock()
}

// seed sets the URL and ready state read from the page after attaching, for
// a target whose first events were sent before the listener existed. It does
// nothing when a commit arrived in the meantime, because the events are newer.
func (t *tracker) seed(commitsBefore uint64, url, readyState string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.commits != commitsBefore {
		return
	}
	if url != "" {
		t.url = url
		if url != "about:blank" {
			t.urlKnown = true
		}
	}
	if readyState != "" {
		t.readyState = readyState
	}
	t.notify()
}

// setURL records a URL the page is known to be at.
func (t *tracker) setURL(u string) {
	t.mu.Lock()
	t.url = u
	t.urlKnown = true
	t.notify()
	t.mu.Unlock()
}
