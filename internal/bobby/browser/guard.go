package browser

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// guardRequests makes every request of the page wait for Options.AllowURL:
// documents, redirect hops, iframes, fetch/XHR and subresources. A refused
// request fails with net::ERR_BLOCKED_BY_CLIENT before it leaves the
// browser, so a page cannot reach an address the gateway refuses. Without
// AllowURL nothing is intercepted.
//
// A popup's very first request is sent before this package can attach to
// it; adoptPopup checks the popup's URL afterwards instead.
func (p *Page) guardRequests(pctx context.Context) error {
	allow := p.session.rt.opts.AllowURL
	if allow == nil {
		return nil
	}
	// The listener runs on the target's read loop and must not send
	// commands, so each decision runs on its own goroutine (AllowURL may
	// resolve a host name).
	err := chromedp.Listen(pctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			go p.decide(pctx, allow, e)
		}
	})
	if err != nil {
		return err
	}
	_, err = chromedp.Call(pctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
	return err
}

// decide answers one paused request.
func (p *Page) decide(pctx context.Context, allow func(*url.URL) error, e *fetch.EventRequestPaused) {
	ctx, cancel := context.WithTimeout(pctx, 10*time.Second)
	defer cancel()
	if e.Request != nil {
		if u, err := url.Parse(e.Request.URL + e.Request.URLFragment); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			if err := allow(u); err != nil {
				p.session.rt.log.Info("request refused by network policy", "page", p.ID, "host", u.Host, "type", e.ResourceType, "err", err)
				_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
				return
			}
		}
	}
	_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
}

// blockedByPolicy reports whether a network error text is a refusal of
// guardRequests.
func blockedByPolicy(errorText string) bool {
	return strings.Contains(errorText, "ERR_BLOCKED_BY_CLIENT")
}

// checkCommit blanks a page whose document came from a refused URL. The
// request guard stops such documents before they load; this catches the one
// case it cannot, a popup's first document (requested before attach).
func (p *Page) checkCommit(raw string) {
	allow := p.session.rt.opts.AllowURL
	if allow == nil {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || allow(u) == nil {
		return
	}
	p.session.rt.log.Info("document from a refused url replaced by about:blank", "page", p.ID, "host", u.Host)
	p.blank()
}
