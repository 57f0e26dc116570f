package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// DefaultMaxCaptureBytes bounds a download a click starts when
// Options.MaxCaptureBytes is zero; a larger one is cancelled.
const DefaultMaxCaptureBytes = 100 << 20

// Download capture: every session's browser context saves the downloads
// its pages start (a click on a download link, a script) into a directory
// of its own under the runtime's DataDir, named by download GUID, and the
// page that started one lists it until TakeDownloads hands it over. Each
// download carries the browser's running count of downloads at its start,
// so a command that takes a DownloadMark first takes only the downloads
// begun during it: one started earlier (by a script, or by a navigation
// that refused it) is never reported as the effect of a later command. The
// directory goes with the session.

// Captured download states.
const (
	CaptureInProgress = "inProgress"
	CaptureCompleted  = "completed"
	CaptureCanceled   = "canceled"
)

// CapturedDownload is a download a page started.
type CapturedDownload struct {
	URL               string `json:"url"`
	SuggestedFilename string `json:"suggestedFilename"`
	State             string `json:"state"`
	Bytes             int64  `json:"bytes"`
	SHA256            string `json:"sha256,omitempty"`
	// Error says why a download did not complete (cancelled by the page or
	// the browser, or over the size bound).
	Error string `json:"error,omitempty"`
	// Path is the captured file (removed with the session); empty unless
	// completed.
	Path string `json:"-"`

	guid  string
	frame string
	seq   uint64 // the browser's download count at its start, from 1
	done  chan struct{}
}

// captures tracks a browser's downloads by GUID.
type captures struct {
	mu     sync.Mutex
	byGUID map[string]*CapturedDownload
	seq    uint64 // downloads begun so far
}

// enableCapture makes the session's browser context save downloads into
// its capture directory and report them.
func (s *Session) enableCapture(ctx context.Context) error {
	// Inside the profile directory, so a crash or Close removes it too.
	dir, err := os.MkdirTemp(s.inst.dataDir, "bobby-downloads-")
	if err != nil {
		return fmt.Errorf("capture directory: %w", err)
	}
	s.captureDir = dir
	cctx, cancel := s.inst.callCtx(ctx, s.rt.opts.ActionTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(cctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, BrowserContextID: s.contextID,
		DownloadPath: dir, EventsEnabled: new(true),
	}); err != nil {
		os.RemoveAll(dir)
		return s.inst.classify(err)
	}
	return nil
}

// onDownload handles the browser's download events (on its read loop: no
// commands, no blocking).
func (in *instance) onDownload(ev any) {
	switch ev := ev.(type) {
	case *browser.EventDownloadWillBegin:
		d := &CapturedDownload{URL: ev.URL, SuggestedFilename: filepath.Base(ev.SuggestedFilename), State: CaptureInProgress,
			guid: ev.GUID, frame: string(ev.FrameID), done: make(chan struct{})}
		in.caps.mu.Lock()
		if in.caps.byGUID == nil {
			in.caps.byGUID = map[string]*CapturedDownload{}
		}
		in.caps.seq++
		d.seq = in.caps.seq
		in.caps.byGUID[ev.GUID] = d
		in.caps.mu.Unlock()
		go in.attachDownload(d)
	case *browser.EventDownloadProgress:
		in.caps.mu.Lock()
		d := in.caps.byGUID[ev.GUID]
		if d == nil || d.State != CaptureInProgress {
			in.caps.mu.Unlock()
			return
		}
		d.Bytes = int64(ev.ReceivedBytes)
		max := int64(in.rt.opts.MaxCaptureBytes)
		if max <= 0 {
			max = DefaultMaxCaptureBytes
		}
		switch {
		case ev.State == browser.DownloadProgressStateCompleted:
			d.State = CaptureCompleted
			d.Path = ev.FilePath
		case ev.State == browser.DownloadProgressStateCanceled:
			d.State = CaptureCanceled
			if d.Error == "" {
				d.Error = "cancelled by the page or the browser"
			}
		case d.Bytes > max || int64(ev.TotalBytes) > max:
			d.State, d.Error = CaptureCanceled, fmt.Sprintf("larger than %d bytes; cancelled", max)
			guid := d.guid
			go in.cancelDownload(guid)
		}
		finished := d.State != CaptureInProgress
		in.caps.mu.Unlock()
		if finished {
			go in.finishDownload(d)
		}
	}
}

// attachDownload gives the download to the page whose frame started it.
func (in *instance) attachDownload(d *CapturedDownload) {
	ss := in.sessionList()
	for _, s := range ss {
		for _, p := range s.Pages() {
			if string(p.targetID) == d.frame || string(p.tr.frame()) == d.frame {
				p.addDownload(d)
				return
			}
		}
	}
}

func (in *instance) cancelDownload(guid string) {
	ctx, cancel := in.callCtx(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = chromedp.CallBrowser(ctx, browser.CancelDownload, browser.CancelDownloadParams{GUID: guid})
}

// finishDownload hashes a completed file (off the read loop) and wakes the
// waiters.
func (in *instance) finishDownload(d *CapturedDownload) {
	in.caps.mu.Lock()
	path, state := d.Path, d.State
	in.caps.mu.Unlock()
	sum, n, err := "", int64(0), error(nil)
	if state == CaptureCompleted {
		sum, n, err = hashFile(path)
	}
	in.caps.mu.Lock()
	if state == CaptureCompleted {
		if err != nil {
			d.State, d.Error, d.Path = CaptureCanceled, "the captured file is unreadable: "+err.Error(), ""
		} else {
			d.SHA256, d.Bytes = sum, n
		}
	}
	close(d.done)
	in.caps.mu.Unlock()
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func (p *Page) addDownload(d *CapturedDownload) {
	p.mu.Lock()
	p.downloads = append(p.downloads, d)
	p.mu.Unlock()
	p.tr.poke()
}

// DownloadMark is the browser's download count now: downloads begun after
// it are newer than the mark (see TakeDownloads).
func (p *Page) DownloadMark() uint64 {
	caps := &p.session.inst.caps
	caps.mu.Lock()
	defer caps.mu.Unlock()
	return caps.seq
}

// TakeDownloads waits until every download the page started after the mark
// since (see DownloadMark) has finished (completed, cancelled or over the
// size bound), at most wait, and hands them over: a later call returns only
// newer ones. Downloads begun before the mark are dropped unreported: they
// are no effect of the command that took the mark. A download still running
// at the deadline is returned in state inProgress (and dropped). grace is
// how long to wait for a download to begin at all (its response may still
// be on the way); 0 takes only those already begun.
func (p *Page) TakeDownloads(ctx context.Context, since uint64, grace, wait time.Duration) []CapturedDownload {
	deadline := time.Now().Add(wait)
	graceEnd := time.Now().Add(grace)
	for {
		if p.hasDownloadSince(since) || time.Now().After(graceEnd) {
			break
		}
		ch := p.tr.snap().changed
		select {
		case <-ch:
		case <-time.After(25 * time.Millisecond):
		case <-ctx.Done():
			return nil
		}
	}
	p.mu.Lock()
	all := p.downloads
	p.downloads = nil
	p.mu.Unlock()
	var ds []*CapturedDownload
	for _, d := range all {
		if d.seq > since {
			ds = append(ds, d)
		}
	}
	out := make([]CapturedDownload, 0, len(ds))
	for _, d := range ds {
		select {
		case <-d.done:
		case <-time.After(time.Until(deadline)):
		case <-ctx.Done():
		}
		p.session.inst.caps.mu.Lock()
		c := *d
		p.session.inst.caps.mu.Unlock()
		c.done = nil
		out = append(out, c)
	}
	return out
}

// hasDownloadSince reports whether the page started a download after the
// mark since.
func (p *Page) hasDownloadSince(since uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.downloads {
		if d.seq > since {
			return true
		}
	}
	return false
}

// discardDownloads cancels and forgets the downloads the page started after
// the mark since, waiting up to wait for one to begin: the download a
// navigation turned into, which Navigate refuses rather than captures. A
// file that completed before the cancel is removed.
func (p *Page) discardDownloads(since uint64, wait time.Duration) {
	end := time.Now().Add(wait)
	for !p.hasDownloadSince(since) && time.Now().Before(end) {
		select {
		case <-p.tr.snap().changed:
		case <-time.After(25 * time.Millisecond):
		case <-p.ctx.Done():
			return
		}
	}
	p.mu.Lock()
	var ds, kept []*CapturedDownload
	for _, d := range p.downloads {
		if d.seq > since {
			ds = append(ds, d)
		} else {
			kept = append(kept, d)
		}
	}
	p.downloads = kept
	p.mu.Unlock()
	in := p.session.inst
	for _, d := range ds {
		in.caps.mu.Lock()
		running := d.State == CaptureInProgress
		in.caps.mu.Unlock()
		if running {
			in.cancelDownload(d.guid)
		}
		select {
		case <-d.done:
		case <-time.After(time.Until(end) + time.Second):
		}
		in.caps.mu.Lock()
		path := d.Path
		in.caps.mu.Unlock()
		if path != "" {
			_ = os.Remove(path)
		}
	}
}

// frame returns the page's main frame ID.
func (t *tracker) frame() cdp.FrameID {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mainFrame
}

// poke wakes the tracker's waiters without a state change of its own.
func (t *tracker) poke() {
	t.mu.Lock()
	t.notify()
	t.mu.Unlock()
}
