package browser

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
)

// FollowGrace is how long Follow waits for a click to start anything (a
// document request, a popup, a same-document URL change) before it reports
// that the target led nowhere.
const FollowGrace = 3 * time.Second

// Follow outcomes.
const (
	FollowNavigated    = "navigated"    // the page loaded a new document
	FollowPopup        = "popup"        // a new page opened
	FollowSameDocument = "sameDocument" // the URL changed without a load (fragment, history API)
	FollowDownload     = "download"     // the click started a download (TakeDownloads hands it over)
	FollowNone         = "none"         // nothing happened within FollowGrace
	FollowFailed       = "failed"       // the document request failed
)

// FollowResult is the evidence of Follow.
type FollowResult struct {
	Outcome string `json:"outcome"`
	// Href is the link's destination when the target is or sits in a link.
	Href string `json:"href,omitempty"`
	// URL is where the page (or the popup) is afterwards.
	URL string `json:"url"`
	// Status is the HTTP status of the new document, when one loaded.
	Status int64 `json:"status,omitempty"`
	// Error is the network error of a failed document request.
	Error string `json:"error,omitempty"`
	// Popup is the page a popup outcome opened, registered in the session.
	Popup  *Page   `json:"-"`
	Dialog *Dialog `json:"dialog,omitempty"`
}

// Follow clicks a link or control and waits until where it leads has
// loaded: a new document in this page (load event or DOMContentLoaded), a
// popup, or a same-document URL change; or until a download it started has
// begun (FollowDownload: the caller takes it with TakeDownloads from a mark
// it took before Follow). A link whose destination the network policy
// refuses is refused before the click. When the click starts nothing within
// FollowGrace the outcome is FollowNone.
func (p *Page) Follow(ctx context.Context, ref NodeRef) (FollowResult, error) {
	var res FollowResult
	err := p.onNode(ctx, ref, func(pctx context.Context, t *chromedp.Target, n node) error {
		return callOn(pctx, t, n.object, `function(){
			const a = this.closest ? this.closest("a[href], area[href]") : null;
			return a ? a.href : "";
		}`, &res.Href)
	})
	if err != nil {
		return res, fmt.Errorf("follow: %w", err)
	}
	if res.Href != "" {
		if _, err := p.session.rt.checkURL(res.Href); err != nil {
			return res, fmt.Errorf("follow %s: %w", res.Href, err)
		}
	}

	before := p.tr.snap()
	seq := p.net.lastSeq()
	s := p.session
	known := map[*Page]bool{}
	for _, q := range s.Pages() {
		known[q] = true
	}
	mark := p.DownloadMark()
	click, err := p.Click(ctx, ref, ClickOptions{})
	if err != nil {
		return res, fmt.Errorf("follow: %w", err)
	}
	if click.Dialog != nil {
		res.Dialog, res.Outcome, res.URL = click.Dialog, FollowNone, p.URL()
		return res, nil
	}

	grace := time.Now().Add(FollowGrace)
	deadline := time.Now().Add(s.rt.opts.NavigateTimeout)
	started := false
	for {
		now := p.tr.snap()
		doc := p.net.document(seq)
		for _, q := range s.Pages() {
			if !known[q] && q.popup && (q.OpenerID == p.ID || q.OpenerID == "") {
				res.Outcome, res.Popup, res.URL = FollowPopup, q, q.URL()
				return res, nil
			}
		}
		switch {
		case p.hasDownloadSince(mark):
			// A download link: its document request ends as a download
			// (often logged as aborted), so this comes first.
			res.Outcome, res.URL = FollowDownload, p.URL()
			return res, nil
		case doc != nil && doc.Failed != "":
			res.Outcome, res.Error, res.URL = FollowFailed, doc.Failed, p.URL()
			return res, nil
		case now.commits > before.commits && now.readyState != "loading":
			res.Outcome, res.URL = FollowNavigated, now.url
			if doc != nil {
				res.Status = doc.Status
			}
			return res, nil
		case !started && doc == nil && now.commits == before.commits && now.url != before.url:
			res.Outcome, res.URL = FollowSameDocument, now.url
			return res, nil
		}
		if doc != nil || now.commits > before.commits {
			started = true
		}
		t := time.Now()
		if (!started && t.After(grace)) || t.After(deadline) {
			res.Outcome, res.URL = FollowNone, now.url
			if started {
				return res, fmt.Errorf("follow: the new document did not load within %s: %w", s.rt.opts.NavigateTimeout, ErrTimeout)
			}
			return res, nil
		}
		select {
		case <-now.changed:
		case <-time.After(25 * time.Millisecond):
		case <-ctx.Done():
			return res, fmt.Errorf("follow: %w", ctx.Err())
		}
	}
}

// lastSeq is the newest sequence number of the log.
func (l *netLog) lastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// document returns the newest Document request logged after seq, or nil.
func (l *netLog) document(seq uint64) *NetEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.entries) - 1; i >= 0 && l.entries[i].Seq > seq; i-- {
		if e := l.entries[i]; e.Type == "Document" {
			c := *e
			return &c
		}
	}
	return nil
}
