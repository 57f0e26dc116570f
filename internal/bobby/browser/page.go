package browser

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// PageState is the page as the MCP tools report it.
type PageState struct {
	ID              string  `json:"id"`
	SessionID       string  `json:"session_id"`
	URL             *string `json:"url"` // null until the page navigates
	Mode            string  `json:"mode"`
	ReadyState      string  `json:"ready_state"`
	PendingRequests int     `json:"pending_requests"`
}

// ModeInteractive is the only page mode bobby has.
const ModeInteractive = "Interactive"

// Dialog is a JavaScript dialog waiting for an answer.
type Dialog struct {
	// Type is alert, confirm, prompt or beforeunload.
	Type          string    `json:"type"`
	Message       string    `json:"message"`
	DefaultPrompt string    `json:"defaultPrompt,omitempty"`
	URL           string    `json:"url,omitempty"`
	OpenedAt      time.Time `json:"openedAt"`
}

// Page is one target (tab or popup) of a session.
type Page struct {
	// ID is a random UUID.
	ID string
	// OpenerID is the ID of the page that opened this one, or "" (also
	// for a popup whose opener Chromium does not report, such as a
	// shift-click window).
	OpenerID string

	popup bool // registered from a target event, not by NewPage

	session *Session
	tr      *tracker

	ctx      context.Context // chromedp page context
	cancel   context.CancelFunc
	targetID target.ID

	closeOnce sync.Once
	mu        sync.Mutex
	closed    error // nil while live
	inflight  map[uint64]context.CancelCauseFunc
	nextOp    uint64
	emulation EmulationState // what Emulate and the fingerprint set
	pointer   *[2]float64    // last pointer position of a humanized move

	net *netLog // the page's bounded request log

	downloads []*CapturedDownload // started by the page, not yet taken
}

func newPage(s *Session, opener string) *Page {
	p := &Page{
		ID:       uuid.NewString(),
		OpenerID: opener,
		session:  s,
		tr:       newTracker(""),
		inflight: make(map[uint64]context.CancelCauseFunc),
		net:      newNetLog(DefaultNetLogSize),
	}
	p.tr.onDialog = p.abortInflight
	p.tr.onCrash = func() { go p.shutdown(ErrPageCrashed) }
	// AllowURL may resolve a host name: never on the read loop.
	p.tr.onCommit = func(u string) { go p.checkCommit(u) }
	return p
}

// attach runs the first chromedp Run on pctx (which attaches the target and
// ties its handler to pctx) within ctx and the action timeout.
func (p *Page) attach(ctx context.Context, pctx context.Context, cancel context.CancelFunc) error {
	p.ctx, p.cancel = pctx, cancel
	timeout := p.session.rt.opts.ActionTimeout
	errc := make(chan error, 1)
	go func() { errc <- chromedp.Do(pctx) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("attach target: no answer within %s: %w", timeout, ErrTimeout)
	}
	if err != nil {
		cancel()
		return err
	}
	c := chromedp.FromContext(pctx)
	p.targetID = c.Target.TargetID
	p.tr.mu.Lock()
	if p.tr.commits == 0 {
		p.tr.mainFrame = cdp.FrameID(p.targetID)
	}
	p.tr.mu.Unlock()

	// Events sent before the listener existed are lost, so read the
	// current URL and ready state once.
	before := p.tr.snap().commits
	sctx, scancel := context.WithTimeout(pctx, timeout)
	res, err := cdp.Call(sctx, c.Target, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    `[location.href, document.readyState]`,
		ReturnByValue: new(true),
	})
	scancel()
	if err == nil && res.ExceptionDetails == nil && res.Result != nil {
		var v [2]string
		if decodeValue(res.Result.Value, &v) == nil {
			p.tr.seed(before, v[0], v[1])
		}
	}

	if err := p.guardRequests(pctx); err != nil {
		cancel()
		return fmt.Errorf("install network policy: %w", err)
	}
	if err := p.applyFingerprint(pctx); err != nil {
		cancel()
		return fmt.Errorf("apply fingerprint: %w", err)
	}

	detached, err := chromedp.Detached(pctx)
	if err != nil {
		cancel()
		return err
	}
	go func() {
		select {
		case <-detached:
			p.shutdown(ErrPageClosed)
			p.session.removePage(p)
		case <-pctx.Done():
		}
	}()
	return nil
}

// TargetID returns the CDP target ID of the page.
func (p *Page) TargetID() target.ID { return p.targetID }

// Popup reports whether the page was opened by a page (window.open,
// target=_blank, modified click) rather than by NewPage.
func (p *Page) Popup() bool { return p.popup }

// SessionID returns the ID of the page's session.
func (p *Page) SessionID() string { return p.session.ID }

// Session returns the page's session.
func (p *Page) Session() *Session { return p.session }

// Context returns the chromedp page context: chromedp.FromContext(ctx).Target
// is this page's target. It ends when the page closes. Prefer Do, which adds
// the action timeout and the dialog guard.
func (p *Page) Context() context.Context { return p.ctx }

// State returns the page in the spec's shape, from memory.
func (p *Page) State() PageState {
	s := p.tr.snap()
	var u *string
	if s.urlKnown {
		u = &s.url
	}
	return PageState{
		ID:              p.ID,
		SessionID:       p.session.ID,
		URL:             u,
		Mode:            ModeInteractive,
		ReadyState:      s.readyState,
		PendingRequests: s.pending,
	}
}

// URL returns the page's current URL.
func (p *Page) URL() string { return p.tr.snap().url }

// PendingRequests returns the number of requests in flight.
func (p *Page) PendingRequests() int { return p.tr.snap().pending }

// PendingDialog returns the open JavaScript dialog, or nil.
func (p *Page) PendingDialog() *Dialog { return p.tr.snap().dialog }

// Err returns why the page is unusable (ErrPageClosed, ErrPageCrashed,
// ErrSessionClosed, ErrBrowserCrashed), or nil.
func (p *Page) Err() error {
	p.mu.Lock()
	err := p.closed
	p.mu.Unlock()
	if err != nil {
		return err
	}
	return p.session.err()
}

// HandleDialog accepts or dismisses the open dialog; promptText answers a
// prompt. It returns ErrNotFound when no dialog is open.
func (p *Page) HandleDialog(ctx context.Context, accept bool, promptText string) error {
	if err := p.Err(); err != nil {
		return fmt.Errorf("handle dialog: %w", err)
	}
	if p.PendingDialog() == nil {
		return fmt.Errorf("handle dialog: no dialog is open: %w", ErrNotFound)
	}
	cctx, cancel := p.callCtx(ctx, p.session.rt.opts.ActionTimeout)
	defer cancel()
	_, err := chromedp.Call(cctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{
		Accept:     accept,
		PromptText: promptText,
	})
	if err != nil {
		return fmt.Errorf("handle dialog: %w", p.classify(cctx, err))
	}
	p.tr.clearDialog()
	p.session.touch()
	return nil
}

// Activate brings the page to the front and makes it the session's active
// page.
func (p *Page) Activate(ctx context.Context) error {
	if err := p.Err(); err != nil {
		return fmt.Errorf("activate page: %w", err)
	}
	cctx, cancel := p.session.inst.callCtx(ctx, p.session.rt.opts.ActionTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(cctx, target.ActivateTarget, target.ActivateTargetParams{TargetID: p.targetID}); err != nil {
		return fmt.Errorf("activate page: %w", p.session.inst.classify(err))
	}
	p.session.mu.Lock()
	p.session.active = p.ID
	p.session.lastUsed = time.Now().UTC()
	p.session.mu.Unlock()
	return nil
}

// Close closes the page's target and removes it from its session. Closing a
// closed page does nothing. It works while a dialog is open.
func (p *Page) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		p.shutdown(ErrPageClosed)
		close(done)
	}()
	p.session.removePage(p)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close page: %w", ctx.Err())
	}
}

// shutdown marks the page closed, aborts its in-flight work and closes its
// target (chromedp's cancel closes it and waits a bounded time).
func (p *Page) shutdown(reason error) {
	p.mu.Lock()
	if p.closed == nil {
		p.closed = reason
	}
	cancels := make([]context.CancelCauseFunc, 0, len(p.inflight))
	for _, c := range p.inflight {
		cancels = append(cancels, c)
	}
	p.mu.Unlock()
	for _, c := range cancels {
		c(reason)
	}
	p.closeOnce.Do(func() {
		if p.cancel != nil {
			p.cancel()
		}
	})
}

// abortInflight cancels the work a just-opened dialog blocks. It runs on the
// target's read loop, so it only cancels contexts.
func (p *Page) abortInflight(d Dialog) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.inflight {
		c(&DialogError{Dialog: d})
	}
}

// callCtx derives a context carrying the chromedp page context that ends
// with ctx, the page, and after timeout.
func (p *Page) callCtx(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithTimeoutCause(p.ctx, timeout, ErrTimeout)
	stop := context.AfterFunc(ctx, cancel)
	return cctx, func() { stop(); cancel() }
}

// Do runs fn with the chromedp page context, bounded by ctx and the action
// timeout. It returns a *DialogError (errors.Is ErrDialogOpen) at once when a
// dialog is open, and aborts fn the moment one opens, so no work hangs on a
// dialog. Errors caused by a closed page or a dead browser come back as
// ErrPageClosed or ErrBrowserCrashed.
func (p *Page) Do(ctx context.Context, fn func(pctx context.Context) error) error {
	return p.do(ctx, p.session.rt.opts.ActionTimeout, fn)
}

func (p *Page) do(ctx context.Context, timeout time.Duration, fn func(pctx context.Context) error) error {
	if err := p.Err(); err != nil {
		return err
	}
	if d := p.PendingDialog(); d != nil {
		return &DialogError{Dialog: *d}
	}
	p.session.touch()

	pctx, cancel := context.WithCancelCause(p.ctx)
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	if timeout > 0 {
		var tcancel context.CancelFunc
		pctx, tcancel = context.WithTimeoutCause(pctx, timeout, fmt.Errorf("no answer within %s: %w", timeout, ErrTimeout))
		defer tcancel()
	}

	p.mu.Lock()
	id := p.nextOp
	p.nextOp++
	p.inflight[id] = cancel
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.inflight, id)
		p.mu.Unlock()
	}()
	// A dialog that opened between the check above and the registration
	// would not have cancelled us.
	if d := p.PendingDialog(); d != nil {
		return &DialogError{Dialog: *d}
	}

	err := fn(pctx)
	if err == nil {
		return nil
	}
	return p.classify(pctx, err)
}

// classify explains an error of work on the page by the reason its context
// ended, if it ended.
func (p *Page) classify(pctx context.Context, err error) error {
	if cause := context.Cause(pctx); cause != nil && pctx.Err() != nil {
		var de *DialogError
		switch {
		case errors.As(cause, &de):
			return de
		case errors.Is(cause, ErrTimeout):
			return cause
		case errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded):
			// caller's context, or the page context ending below
		default:
			return cause
		}
	}
	if perr := p.Err(); perr != nil {
		return fmt.Errorf("%w: %w", perr, err)
	}
	if errors.Is(err, chromedp.ErrTargetDetached) {
		return fmt.Errorf("%w: %w", ErrPageClosed, err)
	}
	return err
}
