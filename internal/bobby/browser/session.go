package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// ExecutionPolicy is what a session allows beyond plain automation. The
// gateway checks it (for example JavaScriptEvaluation before Evaluate); this
// package only stores and reports it.
type ExecutionPolicy struct {
	JavaScriptEvaluation bool `json:"javascriptEvaluation"`
	VisionAssist         bool `json:"visionAssist"`
	Fingerprint          bool `json:"fingerprint"`
	Humanize             bool `json:"humanize"`
}

// SessionState is the session as the MCP tools report it.
type SessionState struct {
	ID              string          `json:"id"`
	Profile         string          `json:"profile"`
	Proxy           *string         `json:"proxy"` // always null: no proxy support yet
	PageIDs         []string        `json:"page_ids"`
	CreatedAt       time.Time       `json:"created_at"`
	LastUsedAt      time.Time       `json:"last_used_at"`
	ExecutionPolicy ExecutionPolicy `json:"execution_policy"`
}

// Session is an isolated browser context and the pages in it.
type Session struct {
	// ID is a random UUID.
	ID string
	// Profile is the label given to NewSession.
	Profile string

	rt        *Runtime
	inst      *instance
	contextID cdp.BrowserContextID
	policy    ExecutionPolicy
	createdAt time.Time

	mu       sync.Mutex
	lastUsed time.Time
	pages    []*Page // in the order they opened
	active   string
	adopting map[target.ID]bool
	creating int // NewPage calls in flight
	// popupChecks counts adoptPopup calls not yet returned, so a test can
	// wait until every target event of the session has been handled.
	popupChecks atomic.Int32
	closed      error         // nil while usable
	changed     chan struct{} // closed and replaced when the page set changes

	captureDir string // where the context's downloads land (see enableCapture)

	// prepared is the blank page a warm spare was made with: attached but
	// not yet handed out, so not in pages. The first NewPage takes it.
	prepared *Page
	// startOver, while set, ends the session's start: it makes the next
	// warm spare (see refillAfterStart). It is called once.
	startOver func()
}

// started ends the session's start: its first navigation ended, or it is
// closing.
func (s *Session) started() {
	s.mu.Lock()
	f := s.startOver
	s.startOver = nil
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// Policy returns the session's execution policy.
func (s *Session) Policy() ExecutionPolicy { return s.policy }

// State returns the session in the spec's shape. It never talks to the
// browser, so it answers while a page is blocked.
func (s *Session) State() SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.pages))
	for _, p := range s.pages {
		ids = append(ids, p.ID)
	}
	return SessionState{
		ID:              s.ID,
		Profile:         s.Profile,
		PageIDs:         ids,
		CreatedAt:       s.createdAt.Truncate(time.Second),
		LastUsedAt:      s.lastUsed.Truncate(time.Second),
		ExecutionPolicy: s.policy,
	}
}

// Alive reports whether the session can still be used: false after
// CloseSession and after its browser crashed.
func (s *Session) Alive() bool { return s.err() == nil }

// Err returns why the session is unusable (ErrSessionClosed,
// ErrBrowserCrashed), or nil.
func (s *Session) Err() error { return s.err() }

func (s *Session) err() error {
	s.mu.Lock()
	err := s.closed
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if !s.inst.alive() {
		return ErrBrowserCrashed
	}
	return nil
}

// touch records use of the session.
func (s *Session) touch() {
	s.mu.Lock()
	s.lastUsed = time.Now().UTC()
	s.mu.Unlock()
}

// Pages returns the live pages, in the order they opened.
func (s *Session) Pages() []*Page {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Page(nil), s.pages...)
}

// Page returns the page with the ID, or ErrNotFound.
func (s *Session) Page(id string) (*Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pages {
		if p.ID == id {
			return p, nil
		}
	}
	return nil, fmt.Errorf("page %s: %w", id, ErrNotFound)
}

// ActivePageID returns the page last activated or opened, or "".
func (s *Session) ActivePageID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// NewPage opens a blank page (a new target) in the session's context.
func (s *Session) NewPage(ctx context.Context) (*Page, error) {
	if err := s.err(); err != nil {
		return nil, fmt.Errorf("new page: %w", err)
	}
	s.touch()
	p, err := s.takePrepared(ctx)
	if err != nil {
		return nil, fmt.Errorf("new page: %w", err)
	}
	if p == nil {
		if p, err = s.openPage(ctx, s.addPageLocked); err != nil {
			return nil, fmt.Errorf("new page: %w", err)
		}
		return p, nil
	}
	if err := s.addPage(p); err != nil {
		p.shutdown(ErrSessionClosed)
		return nil, fmt.Errorf("new page: %w", err)
	}
	return p, nil
}

// takePrepared hands out the warm spare's blank page, or nil when there is
// none or it died. The page was attached before the session had its policy,
// so the policy's fingerprint is applied now, before the first navigation,
// as openPage does.
func (s *Session) takePrepared(ctx context.Context) (*Page, error) {
	s.mu.Lock()
	p := s.prepared
	s.prepared = nil
	s.mu.Unlock()
	if p == nil {
		return nil, nil
	}
	if p.Err() != nil {
		p.shutdown(ErrPageClosed)
		return nil, nil
	}
	if err := p.applyFingerprint(p.ctx); err != nil {
		p.shutdown(ErrPageClosed)
		return nil, fmt.Errorf("apply fingerprint: %w", s.inst.classify(err))
	}
	return p, nil
}

// openPage opens a target in the session's browser context, attaches to it
// and hands it to keepLocked (run under s.mu) before the target stops
// counting as in flight. adoptPopup therefore always finds the new target
// either in flight or registered, never in between, and does not attach to
// it a second time as a popup.
func (s *Session) openPage(ctx context.Context, keepLocked func(*Page) error) (*Page, error) {
	s.mu.Lock()
	s.creating++
	s.mu.Unlock()
	p := newPage(s, "")
	pctx, cancel := chromedp.NewContext(s.inst.ctx,
		chromedp.WithExistingBrowserContext(s.contextID),
		chromedp.WithListener(p.listen),
	)
	attachErr := p.attach(ctx, pctx, cancel)
	var keepErr error
	s.mu.Lock()
	if attachErr == nil {
		keepErr = keepLocked(p)
	}
	s.creating--
	s.notifyLocked()
	s.mu.Unlock()
	switch {
	case attachErr != nil:
		return nil, s.inst.classify(attachErr)
	case keepErr != nil:
		p.shutdown(keepErr)
		return nil, keepErr
	}
	return p, nil
}

// adoptPopup registers a page target that appeared in the session's browser
// context without NewPage: window.open, target=_blank, a modified click. A
// target with no opener (shift-click opens a new window without one) can
// also be NewPage's own target before NewPage records it, so such targets
// wait until no NewPage is in flight.
func (s *Session) adoptPopup(info *target.Info) {
	timer := time.NewTimer(s.rt.opts.ActionTimeout)
	defer timer.Stop()
	s.mu.Lock()
	for {
		if s.closed != nil || s.adopting[info.TargetID] || s.hasTargetLocked(info.TargetID) {
			s.mu.Unlock()
			return
		}
		if info.OpenerID != "" || s.creating == 0 {
			break
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return
		}
		s.mu.Lock()
	}
	opener := ""
	for _, p := range s.pages {
		if p.targetID == info.OpenerID {
			opener = p.ID
		}
	}
	s.adopting[info.TargetID] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.adopting, info.TargetID)
		s.mu.Unlock()
	}()

	p := newPage(s, opener)
	p.popup = true
	p.tr.mainFrame = cdp.FrameID(info.TargetID)
	pctx, cancel := chromedp.NewContext(s.inst.ctx,
		chromedp.WithTargetID(info.TargetID),
		chromedp.WithListener(p.listen),
	)
	if err := p.attach(context.Background(), pctx, cancel); err != nil {
		s.rt.log.Warn("adopt popup", "session", s.ID, "target", info.TargetID, "err", err)
		return
	}
	// The popup's first request left before the request guard existed:
	// if it already committed, check where it landed (later commits are
	// checked by the tracker).
	p.checkCommit(p.URL())
	if err := s.addPage(p); err != nil {
		p.shutdown(ErrSessionClosed)
		return
	}
	s.rt.log.Debug("popup registered", "session", s.ID, "page", p.ID, "opener", opener, "url", logURL(info.URL))
}

// logURL is a URL as logs may show it: without userinfo, query and
// fragment, which can carry what a form sent (a password in a GET form).
func logURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// hasTargetLocked reports whether a page of the session is the target. The
// caller holds s.mu.
func (s *Session) hasTargetLocked(id target.ID) bool {
	if s.prepared != nil && s.prepared.targetID == id {
		return true
	}
	for _, p := range s.pages {
		if p.targetID == id {
			return true
		}
	}
	return false
}

func (s *Session) addPage(p *Page) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addPageLocked(p)
}

// addPageLocked registers p as the session's active page. The caller holds
// s.mu.
func (s *Session) addPageLocked(p *Page) error {
	if s.closed != nil {
		return s.closed
	}
	s.pages = append(s.pages, p)
	s.active = p.ID
	s.lastUsed = time.Now().UTC()
	s.notifyLocked()
	return nil
}

func (s *Session) removePage(p *Page) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.pages {
		if q == p {
			s.pages = append(s.pages[:i], s.pages[i+1:]...)
			if s.active == p.ID {
				s.active = ""
				if len(s.pages) > 0 {
					s.active = s.pages[len(s.pages)-1].ID
				}
			}
			s.notifyLocked()
			return
		}
	}
}

func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// targetGone handles a target destroyed outside our control (window.close,
// a crash of the tab).
func (s *Session) targetGone(id target.ID) {
	for _, p := range s.Pages() {
		if p.targetID == id {
			p.shutdown(ErrPageClosed)
			s.removePage(p)
		}
	}
}

// WaitPopup runs trigger and returns the first page opened by opener after
// it started, waiting at most the action timeout, or until ctx's deadline
// when that comes sooner: a caller's shorter budget ends the wait with the
// same ErrTimeout, so "nothing opened" is answered in the time it asked
// for. Use it for click-and-wait-for-popup flows.
func (s *Session) WaitPopup(ctx context.Context, opener *Page, trigger func() error) (*Page, error) {
	s.mu.Lock()
	known := make(map[*Page]bool, len(s.pages))
	for _, p := range s.pages {
		known[p] = true
	}
	s.mu.Unlock()
	if err := trigger(); err != nil {
		return nil, err
	}
	wait := s.rt.opts.ActionTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait = max(time.Until(d), 0)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		for _, p := range s.pages {
			// A popup without an opener (shift-click) is credited to
			// whoever waits for one.
			if !known[p] && p.popup && (opener == nil || p.OpenerID == opener.ID || p.OpenerID == "") {
				s.mu.Unlock()
				return p, nil
			}
		}
		closed := s.closed
		s.mu.Unlock()
		if closed != nil {
			return nil, fmt.Errorf("wait popup: %w", closed)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// The caller's deadline is the wait it asked for (the timer
				// above may lose the race to it).
				return nil, fmt.Errorf("wait popup: no page opened within %s: %w", wait.Round(time.Millisecond), ErrTimeout)
			}
			return nil, fmt.Errorf("wait popup: %w", ctx.Err())
		case <-timer.C:
			return nil, fmt.Errorf("wait popup: no page opened within %s: %w", wait.Round(time.Millisecond), ErrTimeout)
		case <-s.inst.dead:
			return nil, fmt.Errorf("wait popup: %w", ErrBrowserCrashed)
		}
	}
}

// markClosed makes the session unusable and ends its pages' handlers
// without talking to the browser.
func (s *Session) markClosed(reason error) {
	s.mu.Lock()
	if s.closed == nil {
		s.closed = reason
	}
	pages := s.pages
	if errors.Is(reason, ErrSessionClosed) {
		s.pages = nil
	}
	if s.prepared != nil {
		pages = append(pages[:len(pages):len(pages)], s.prepared)
		s.prepared = nil
	}
	s.notifyLocked()
	s.mu.Unlock()
	for _, p := range pages {
		p.shutdown(reason)
	}
}

// close closes the pages and disposes of the browser context.
func (s *Session) close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed == nil {
		s.closed = ErrSessionClosed
	}
	pages := s.pages
	s.pages = nil
	if s.prepared != nil {
		pages = append(pages, s.prepared)
		s.prepared = nil
	}
	s.notifyLocked()
	s.mu.Unlock()
	s.started()

	var wg sync.WaitGroup
	for _, p := range pages {
		wg.Go(func() { p.shutdown(ErrPageClosed) })
	}
	wg.Wait()
	s.inst.removeSession(s)
	if s.captureDir != "" {
		os.RemoveAll(s.captureDir)
	}
	if !s.inst.alive() {
		return nil
	}
	cctx, cancel := s.inst.callCtx(ctx, s.rt.opts.ActionTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(cctx, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: s.contextID}); err != nil {
		return fmt.Errorf("close session %s: dispose browser context: %w", s.ID, s.inst.classify(err))
	}
	return nil
}
