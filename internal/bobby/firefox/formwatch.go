package firefox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/form"
)

// watchEvents are the BiDi events a submit watch follows: the tab's
// navigations and its network requests (frames included).
var watchEvents = []string{
	"browsingContext.navigationStarted",
	"browsingContext.navigationCommitted",
	"browsingContext.domContentLoaded",
	"browsingContext.load",
	"browsingContext.fragmentNavigated",
	"browsingContext.historyUpdated",
	"network.beforeRequestSent",
	"network.responseCompleted",
	"network.fetchError",
}

// netEvent is the part of a network event the watch reads.
type netEvent struct {
	Context       string  `json:"context"`
	Navigation    *string `json:"navigation"`
	RedirectCount int     `json:"redirectCount"`
	Request       struct {
		Request       string `json:"request"`
		URL           string `json:"url"`
		Method        string `json:"method"`
		Destination   string `json:"destination"`
		InitiatorType string `json:"initiatorType"`
	} `json:"request"`
	Response struct {
		Status int64 `json:"status"`
	} `json:"response"`
	ErrorText string `json:"errorText"`
}

// resourceType names a request in Chromium's resource types, which the
// form package judges by: what the document loads on its way (images,
// scripts, styles, fonts) apart from what can carry a submit.
func resourceType(e netEvent) string {
	switch e.Request.InitiatorType {
	case "fetch":
		return "Fetch"
	case "xmlhttprequest":
		return "XHR"
	case "beacon":
		return "Ping"
	}
	switch e.Request.Destination {
	case "document", "iframe", "frame":
		return "Document"
	case "image":
		return "Image"
	case "script", "worker", "sharedworker", "serviceworker":
		return "Script"
	case "style":
		return "Stylesheet"
	case "font":
		return "Font"
	case "audio", "video", "track":
		return "Media"
	case "manifest":
		return "Manifest"
	case "websocket":
		return "WebSocket"
	}
	if e.Navigation != nil {
		return "Document"
	}
	return "Other"
}

// convertEvent turns one BiDi event into the form watch's terms; ok is
// false for events of other tabs (whose context is not in tab, the tab's
// browsing contexts) and of other kinds. An event of a frame of the tab
// that is no navigation of its top document comes as a zero Event (page
// activity only).
func convertEvent(bc string, tab map[string]bool, e bidi.Event) (form.Event, bool) {
	if !slices.Contains(watchEvents, e.Method) {
		return form.Event{}, false
	}
	var n netEvent
	if json.Unmarshal(e.Params, &n) != nil || !tab[n.Context] {
		return form.Event{}, false
	}
	top := n.Context == bc
	switch e.Method {
	case "network.beforeRequestSent":
		return form.Event{Kind: form.EventRequest, Request: n.Request.Request, Type: resourceType(n),
			Method: n.Request.Method, URL: n.Request.URL, Frame: n.Context}, true
	case "network.responseCompleted":
		// One event says both: the response arrived and its body loaded.
		return form.Event{Kind: form.EventResponse, Request: n.Request.Request, Status: n.Response.Status}, true
	case "network.fetchError":
		return form.Event{Kind: form.EventFailed, Request: n.Request.Request, Failed: n.ErrorText}, true
	}
	if !top {
		return form.Event{}, true
	}
	switch e.Method {
	case "browsingContext.navigationStarted":
		return form.Event{Kind: form.EventNavRequested}, true
	case "browsingContext.navigationCommitted", "browsingContext.domContentLoaded":
		return form.Event{Kind: form.EventNavigated}, true
	case "browsingContext.load":
		return form.Event{Kind: form.EventLoaded}, true
	case "browsingContext.fragmentNavigated", "browsingContext.historyUpdated":
		return form.Event{Kind: form.EventSameDocument}, true
	}
	return form.Event{}, true
}

// Watch subscribes to the tab's navigations and network requests and
// reports them to sink until stop.
func (f *FormPage) Watch(ctx context.Context, sink func(form.Event)) (func(), error) {
	bc := f.p.bc
	var tree struct {
		Contexts []bidi.Info `json:"contexts"`
	}
	if err := f.p.conn.Call(ctx, "browsingContext.getTree", map[string]string{"root": bc}, &tree); err != nil {
		return nil, fmt.Errorf("watch the page: %w", err)
	}
	tab := map[string]bool{bc: true}
	var add func([]bidi.Info)
	add = func(is []bidi.Info) {
		for _, i := range is {
			tab[i.Context] = true
			add(i.Children)
		}
	}
	add(tree.Contexts)
	remove := f.p.conn.OnEvent(func(e bidi.Event) {
		ev, ok := convertEvent(bc, tab, e)
		if !ok {
			return
		}
		sink(ev)
		if e.Method == "network.responseCompleted" {
			sink(form.Event{Kind: form.EventFinished, Request: ev.Request})
		}
	})
	sub, err := f.p.conn.Subscribe(ctx, watchEvents, bc)
	if err != nil {
		remove()
		return nil, fmt.Errorf("watch the page: %w", err)
	}
	return func() {
		remove()
		cctx, cancel := cleanupCtx(ctx)
		defer cancel()
		_ = f.p.conn.Call(cctx, "session.unsubscribe", map[string]any{"subscriptions": []string{sub}}, nil)
	}, nil
}
