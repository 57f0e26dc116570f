package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/firefox"
	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// firefoxEngine is Firefox (package firefox, over WebDriver BiDi) behind
// the seam: sessions are user contexts, pages the tabs bobby opened in
// them. Its errors wrap the browser package's sentinels, so the tools
// classify failures on both engines alike.
type firefoxEngine struct {
	rt *firefox.Runtime

	mu   sync.Mutex
	meta map[string]*ffMeta // by session id
}

// ffMeta is what bobby keeps of a Firefox session beside the browser's.
type ffMeta struct {
	profile string
	policy  browser.ExecutionPolicy
}

func newFirefoxEngine(rt *firefox.Runtime) *firefoxEngine {
	return &firefoxEngine{rt: rt, meta: map[string]*ffMeta{}}
}

// ffErr maps a Firefox runtime error onto the browser package's sentinels.
func ffErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, firefox.ErrNotOpen):
		return fmt.Errorf("%w: %w", browser.ErrNotOpen, err)
	case errors.Is(err, firefox.ErrNotFound):
		return fmt.Errorf("%w: %w", browser.ErrNotFound, err)
	case errors.Is(err, firefox.ErrClosed):
		return fmt.Errorf("%w: %w", browser.ErrSessionClosed, err)
	case errors.Is(err, firefox.ErrNotInteractable):
		return fmt.Errorf("%w: %w", browser.ErrNotInteractable, err)
	case errors.Is(err, firefox.ErrTimeout):
		return fmt.Errorf("%w: %w", browser.ErrTimeout, err)
	case errors.Is(err, firefox.ErrUnsupportedOnEngine):
		return errorf(CodeUnsupportedOnEngine, "%v", err)
	}
	var se *bidi.ScriptError
	if errors.As(err, &se) {
		return &browser.EvalError{Text: se.Text}
	}
	if bidi.IsCode(err, "no such frame") {
		return fmt.Errorf("%w: %w", browser.ErrPageClosed, err)
	}
	return err
}

// ffActionErr is ffErr for the error of a Firefox action: one that came
// before the action sent the page any input (a *firefox.NotSentError, its
// target not yet located) is marked unsent, so its timeout is a plain
// timeout the caller may retry, as on Chromium, never needsReconciliation.
func ffActionErr(err error) error {
	var ns *firefox.NotSentError
	if errors.As(err, &ns) {
		return unsent(ffErr(err))
	}
	return ffErr(err)
}

func (e *firefoxEngine) name() string                    { return engineFirefox }
func (e *firefoxEngine) Open(ctx context.Context) error  { return e.rt.Open(ctx) }
func (e *firefoxEngine) Close(ctx context.Context) error { return e.rt.Close(ctx) }
func (e *firefoxEngine) Healthy() bool                   { return e.rt.Healthy() }
func (e *firefoxEngine) Version(context.Context) (string, error) {
	v, err := e.rt.Version()
	return v, ffErr(err)
}

func (e *firefoxEngine) newSession(ctx context.Context, profile string, ep browser.ExecutionPolicy) (engineSession, error) {
	if ep.Fingerprint || ep.Humanize {
		return nil, errorf(CodeUnsupportedOnEngine, "executionPolicy fingerprint and humanize run on chromium, not on firefox (this runtime's [browser] engine): "+
			"the persona and the humanized pointer are CDP emulation and input; create the session without them or set [browser] engine = \"chromium\"")
	}
	s, err := e.rt.NewSession(ctx)
	if err != nil {
		return nil, ffErr(err)
	}
	m := &ffMeta{profile: profile, policy: ep}
	e.mu.Lock()
	e.meta[s.ID] = m
	e.mu.Unlock()
	return &firefoxSession{s: s, m: m}, nil
}

func (e *firefoxEngine) wrap(s *firefox.Session) engineSession {
	e.mu.Lock()
	m := e.meta[s.ID]
	e.mu.Unlock()
	if m == nil {
		m = &ffMeta{}
	}
	return &firefoxSession{s: s, m: m}
}

func (e *firefoxEngine) session(id string) (engineSession, error) {
	s, err := e.rt.Session(id)
	if err != nil {
		return nil, ffErr(err)
	}
	return e.wrap(s), nil
}

func (e *firefoxEngine) sessions() []engineSession {
	return wrapEach(e.rt.Sessions(), e.wrap)
}

func (e *firefoxEngine) pageSession(id string) (string, error) {
	p, err := e.rt.Page(id)
	if err != nil {
		return "", ffErr(err)
	}
	return p.SessionID(), nil
}

func (e *firefoxEngine) closeSession(ctx context.Context, id string) error {
	err := e.rt.CloseSession(ctx, id)
	e.mu.Lock()
	delete(e.meta, id)
	e.mu.Unlock()
	return ffErr(err)
}

// firefoxSession is a Firefox user context behind the seam.
type firefoxSession struct {
	s *firefox.Session
	m *ffMeta
}

func (s *firefoxSession) id() string                          { return s.s.ID }
func (s *firefoxSession) chromium() *browser.Session          { return nil }
func (s *firefoxSession) Policy() browser.ExecutionPolicy     { return s.m.policy }
func (s *firefoxSession) Alive() bool                         { return s.s.Alive() }
func (s *firefoxSession) ActivePageID() string                { return s.s.ActivePageID() }
func (s *firefoxSession) wrapPage(p *firefox.Page) enginePage { return &firefoxPage{p: p, s: s.s} }

func (s *firefoxSession) Err() error {
	if s.s.Alive() {
		return nil
	}
	return browser.ErrSessionClosed
}

func (s *firefoxSession) State() browser.SessionState {
	ids := []string{}
	for _, p := range s.s.Pages() {
		ids = append(ids, p.ID())
	}
	return browser.SessionState{
		ID: s.s.ID, Profile: s.m.profile, PageIDs: ids, CreatedAt: s.s.CreatedAt, LastUsedAt: s.s.LastUsed(),
		ExecutionPolicy: s.m.policy,
	}
}

func (s *firefoxSession) pages() []enginePage {
	return wrapEach(s.s.Pages(), s.wrapPage)
}

func (s *firefoxSession) page(id string) (enginePage, error) {
	p, err := s.s.Page(id)
	if err != nil {
		return nil, ffErr(err)
	}
	return s.wrapPage(p), nil
}

func (s *firefoxSession) newPage(ctx context.Context) (enginePage, error) {
	p, err := s.s.NewPage(ctx)
	if err != nil {
		return nil, ffErr(err)
	}
	return s.wrapPage(p), nil
}

// toCookie is a BiDi cookie in the tools' shape.
func toCookie(c bidi.Cookie) browser.Cookie {
	out := browser.Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, HTTPOnly: c.HTTPOnly, Secure: c.Secure}
	switch strings.ToLower(c.SameSite) {
	case "strict":
		out.SameSite = "Strict"
	case "lax":
		out.SameSite = "Lax"
	case "none":
		out.SameSite = "None"
	}
	if c.Expiry > 0 {
		out.Expires = &c.Expiry
	}
	return out
}

// matching lists the session's cookies the filter keeps, sorted as
// Chromium's are (domain, path, name).
func (s *firefoxSession) matching(ctx context.Context, f browser.CookieFilter) ([]browser.Cookie, error) {
	raw, err := s.s.Cookies(ctx)
	if err != nil {
		return nil, ffErr(err)
	}
	var out []browser.Cookie
	for _, r := range raw {
		c := toCookie(r)
		ok, err := f.Matches(c)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b browser.Cookie) int {
		if c := strings.Compare(a.Domain, b.Domain); c != 0 {
			return c
		}
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func (s *firefoxSession) Cookies(ctx context.Context, f browser.CookieFilter) ([]browser.Cookie, bool, error) {
	cs, err := s.matching(ctx, f)
	if err != nil {
		return nil, false, fmt.Errorf("get cookies: %w", err)
	}
	if len(cs) > browser.MaxCookies {
		return cs[:browser.MaxCookies], true, nil
	}
	return cs, false, nil
}

func (s *firefoxSession) SetCookies(ctx context.Context, in []browser.NewCookie) error {
	if len(in) == 0 || len(in) > browser.MaxCookies {
		return fmt.Errorf("set cookies: %w: give 1..%d cookies, got %d", browser.ErrInvalidArgument, browser.MaxCookies, len(in))
	}
	for i, c := range in {
		domain, path, secure, err := c.Resolve()
		if err != nil {
			return fmt.Errorf("set cookies: cookie %d: %w", i, err)
		}
		ck := bidi.Cookie{Name: c.Name, Value: c.Value, Domain: domain, Path: path, HTTPOnly: c.HTTPOnly, Secure: secure, Expiry: c.Expires}
		if c.SameSite != "" {
			ck.SameSite = strings.ToLower(c.SameSite)
		}
		if err := s.s.SetCookie(ctx, ck); err != nil {
			if bidi.IsCode(err, "unable to set cookie") || bidi.IsCode(err, "invalid argument") {
				return fmt.Errorf("set cookies: %w: the browser refused cookie %d: %v", browser.ErrInvalidArgument, i, err)
			}
			return fmt.Errorf("set cookies: %w", ffErr(err))
		}
	}
	return nil
}

func (s *firefoxSession) DeleteCookies(ctx context.Context, f browser.CookieFilter) (int, error) {
	cs, err := s.matching(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("delete cookies: %w", err)
	}
	for _, c := range cs {
		if err := s.s.DeleteCookie(ctx, c.Name, c.Domain, c.Path); err != nil {
			return 0, fmt.Errorf("delete cookies: %w", ffErr(err))
		}
	}
	return len(cs), nil
}

// firefoxPage is a Firefox tab behind the seam.
type firefoxPage struct {
	p *firefox.Page
	s *firefox.Session
}

func (p *firefoxPage) id() string              { return p.p.ID() }
func (p *firefoxPage) SessionID() string       { return p.p.SessionID() }
func (p *firefoxPage) openerID() string        { return "" }
func (p *firefoxPage) chromium() *browser.Page { return nil }

// State reads the page's URL and readyState. While a dialog is open the
// page answers no script, so the last reading stands.
func (p *firefoxPage) State() browser.PageState {
	st := browser.PageState{ID: p.p.ID(), SessionID: p.p.SessionID(), Mode: browser.ModeInteractive, ReadyState: "loading"}
	fs, ok := p.p.LastState()
	if _, open := p.p.Dialog(); !open {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if now, err := p.p.State(ctx); err == nil {
			fs, ok = now, true
		}
		cancel()
	}
	if ok {
		if fs.URL != "" {
			st.URL = ptr(fs.URL)
		}
		st.ReadyState = fs.ReadyState
	}
	return st
}

func (p *firefoxPage) PendingDialog() *browser.Dialog {
	d, ok := p.p.Dialog()
	if !ok {
		return nil
	}
	return &browser.Dialog{Type: d.Type, Message: d.Message, DefaultPrompt: d.DefaultValue, OpenedAt: d.OpenedAt}
}

func (p *firefoxPage) HandleDialog(ctx context.Context, accept bool, promptText string) error {
	_, err := p.p.HandleDialog(ctx, accept, promptText)
	return ffErr(err)
}

func (p *firefoxPage) Close(ctx context.Context) error {
	if err := p.s.ClosePage(ctx, p.p); err != nil {
		if errors.Is(err, firefox.ErrClosed) {
			return fmt.Errorf("%w: %w", browser.ErrPageClosed, err)
		}
		return ffErr(err)
	}
	return nil
}

func (p *firefoxPage) Activate(ctx context.Context) error { return ffErr(p.s.Activate(ctx, p.p)) }

// ffNavigateTimeout bounds a navigation as Chromium's NavigateTimeout does.
const ffNavigateTimeout = 30 * time.Second

// Navigate loads url under the same URL policy as Chromium and reports the
// outcome in the same shape: a failed navigation is a value.
func (p *firefoxPage) Navigate(ctx context.Context, rawURL string) browser.NavigationOutcome {
	out := browser.NavigationOutcome{Status: browser.NavFailed, URL: rawURL}
	fail := func(code, msg string) browser.NavigationOutcome {
		out.Error = &browser.NavigationError{Code: code, Message: msg}
		if out.FinalURL == "" {
			if st := p.State(); st.URL != nil {
				out.FinalURL = *st.URL
			}
		}
		return out
	}
	u, err := browser.NavigationPolicy{}.Check(rawURL)
	if err != nil {
		if errors.Is(err, browser.ErrPolicyDenied) {
			return fail(browser.NavCodePolicyDenied, err.Error())
		}
		return fail(browser.NavCodeInvalidRequest, err.Error())
	}
	if d := p.PendingDialog(); d != nil {
		out.Error = &browser.NavigationError{Code: browser.NavCodeDialogOpen, Message: "a " + d.Type + " dialog blocks the page; answer it with dialog first", Dialog: d}
		return out
	}
	limit := browser.AppliedTimeout(ctx, ffNavigateTimeout)
	nctx, cancel := context.WithTimeout(ctx, ffNavigateTimeout)
	defer cancel()
	_, err = p.p.Navigate(nctx, u.String())
	if err != nil {
		switch {
		case nctx.Err() != nil && ctx.Err() == nil, errors.Is(ctx.Err(), context.DeadlineExceeded):
			return fail(browser.NavCodeTimeout, fmt.Sprintf("the page did not finish loading within %s", limit))
		case ctx.Err() != nil:
			return fail(browser.NavCodeAborted, ctx.Err().Error())
		case strings.Contains(err.Error(), "NS_ERROR_"):
			return fail(browser.NavCodeNetworkError, err.Error())
		case bidi.IsCode(err, "no such frame"):
			return fail(browser.NavCodePageClosed, err.Error())
		}
		return fail(browser.NavCodeFailed, err.Error())
	}
	st, err := p.p.State(ctx)
	if err != nil {
		return fail(browser.NavCodeFailed, err.Error())
	}
	out.FinalURL = st.URL
	if st.Status > 0 {
		out.HTTPStatus = ptr(st.Status)
		if st.Status >= 400 {
			return fail(browser.NavCodeHTTPError, fmt.Sprintf("the server answered HTTP %d", st.Status))
		}
	}
	out.Status = browser.NavCompleted
	return out
}

// blocked is the dialogOpen error of a page whose open dialog blocks its
// scripts (as Chromium answers), nil when none is open.
func (p *firefoxPage) blocked() error {
	if d := p.PendingDialog(); d != nil {
		return &browser.DialogError{Dialog: *d}
	}
	return nil
}

// Evaluate runs the expression in the page. Unlike Chromium's
// (browser.Page.Evaluate), an evaluation cut off by ctx leaves a script
// that never yields running: WebDriver BiDi has no command that terminates
// a script (nothing like CDP's Runtime.terminateExecution), and the remote
// agent's preferences turn Firefox's own slow-script stop off. Such a page
// answers again only once it is closed.
func (p *firefoxPage) Evaluate(ctx context.Context, expr string) (json.RawMessage, error) {
	if err := p.blocked(); err != nil {
		return nil, err
	}
	raw, err := p.p.EvaluateJSON(ctx, expr)
	return raw, ffErr(err)
}

// ffDialogPoll is how often form work on a Firefox page looks for a dialog
// that opened under it.
const ffDialogPoll = 20 * time.Millisecond

// forms runs the form functions on the tab (firefox.FormPage). The page
// answers no script while a dialog blocks it, so a dialog that opens
// during the work (a click that calls alert()) cancels it and the work
// answers the dialog's error, as Chromium's page work does; the page's
// dialog watcher (WatchDialogs, from the page's creation) is what sees it.
func (p *firefoxPage) forms(ctx context.Context, fn func(ctx context.Context, tab form.Tab) error) error {
	if err := p.blocked(); err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(ffDialogPoll)
		defer tick.Stop()
		for {
			select {
			case <-fctx.Done():
				return
			case <-tick.C:
				if d := p.PendingDialog(); d != nil {
					cancel(&browser.DialogError{Dialog: *d})
					return
				}
			}
		}
	}()
	err := fn(fctx, form.On(p.p.Forms()))
	cancel(nil)
	<-watched
	// A dialog that cut the work short answers, even where the form
	// function made the best of the cut (an activate whose re-read failed
	// counts as applied): Firefox's pointer input returns while the dialog
	// is open, where Chromium's blocks until the page's work is cancelled.
	var de *browser.DialogError
	if errors.As(context.Cause(fctx), &de) {
		return de
	}
	return ffErr(err)
}

func (p *firefoxPage) snapshot(ctx context.Context, opts snapshot.Options) (*snapshot.Snapshot, error) {
	if err := p.blocked(); err != nil {
		return nil, err
	}
	s, err := p.p.Snapshot(ctx, opts)
	return s, ffErr(err)
}

// target is the element an element command names, once no dialog blocks
// the page.
func (p *firefoxPage) target(ta targetArgs) (snapshot.Target, error) {
	if err := p.blocked(); err != nil {
		return snapshot.Target{}, err
	}
	return ta.required()
}

// ffModifiers are the tools' modifier names as the firefox package names
// the keys.
var ffModifiers = map[string]string{"shift": "Shift", "ctrl": "Control", "alt": "Alt", "meta": "Meta"}

func (p *firefoxPage) click(ctx context.Context, x *execCtx, in clickArgs) (map[string]any, map[string]any, error) {
	t, err := p.target(in.targetArgs)
	if err != nil {
		return nil, nil, err
	}
	var mods []string
	for _, m := range in.Modifiers {
		mods = append(mods, ffModifiers[m])
	}
	loc, err := p.p.Click(ctx, t, firefox.ClickOptions{Modifiers: mods, Button: in.Button, Count: in.ClickCount})
	ev := map[string]any{}
	if loc.Ref != "" {
		ev["ref"] = loc.Ref
	}
	if d := p.PendingDialog(); d != nil {
		ev["dialog"] = d
	}
	if err != nil {
		return ev, nil, ffActionErr(err)
	}
	if ev["dialog"] == nil {
		for k, v := range p.settle(ctx) {
			ev[k] = v
		}
	}
	if len(in.Modifiers) > 0 {
		ev["modifiers"] = in.Modifiers
	}
	return ev, map[string]any{"x": loc.Where.X, "y": loc.Where.Y}, nil
}

func (p *firefoxPage) typeText(ctx context.Context, x *execCtx, in typeTextArgs) (map[string]any, map[string]any, error) {
	t, err := p.target(in.targetArgs)
	if err != nil {
		return nil, nil, err
	}
	ref, err := p.p.TypeInto(ctx, t, in.Text, in.Clear)
	if err != nil {
		return map[string]any{"ref": ref}, nil, ffActionErr(err)
	}
	// The text itself is never echoed: it may be a password.
	return map[string]any{"ref": ref, "typedChars": len([]rune(in.Text)), "cleared": in.Clear}, nil, nil
}

// settle gives an action's effects a moment and waits (at most 3 s) for
// the document to finish loading. Firefox gives bobby no network-idle
// signal, so the evidence says what settled: the document.
func (p *firefoxPage) settle(ctx context.Context) map[string]any {
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	select {
	case <-time.After(150 * time.Millisecond):
	case <-sctx.Done():
	}
	_ = p.p.WaitFor(sctx, firefox.Wait{Kind: firefox.WaitDocument, ReadyState: "complete", Timeout: 3 * time.Second})
	return map[string]any{"settled": "document", "page": p.State()}
}

func (p *firefoxPage) waitFor(ctx context.Context, x *execCtx, in waitForArgs) (map[string]any, map[string]any, error) {
	if err := p.blocked(); err != nil {
		return nil, nil, err
	}
	cm := in.Condition
	timeout := x.wait
	if timeout <= 0 {
		timeout = browser.DefaultWaitTimeout
	}
	ms := int(timeout / time.Millisecond)
	if cm.Kind == "networkQuiet" {
		return nil, nil, errorf(CodeUnsupportedOnEngine, "wait_for networkQuiet runs on chromium, not on firefox (this runtime's [browser] engine): "+
			"Firefox gives bobby no network-idle signal; wait for text, value, url, document or element instead, or set [browser] engine = \"chromium\"")
	}
	t, hasTarget, err := cm.pick()
	if err != nil {
		return nil, nil, err
	}
	if hasTarget && t.Selector != "" {
		if !browser.PageLevelCSS(t.Selector) {
			return nil, nil, errorf(CodeInvalidRequest, "selector targets do not run on firefox yet; use a ref or role and name from a snapshot (body, html and :root stand for the page)")
		}
		hasTarget = false
	}
	if hasTarget && wholePage(t, cm.Kind) {
		hasTarget = false // role-scoped page-level targets read the page's text
	}
	start := time.Now()
	res := browser.WaitResult{Kind: cm.Kind}
	done := func(matched bool, observed string) (map[string]any, map[string]any, error) {
		res.Matched, res.ElapsedMs, res.Observed = matched, time.Since(start).Milliseconds(), observed
		if !matched {
			res.TimedOut = true
			return map[string]any{"wait": res}, nil, errorf(CodeTimeout, "%s condition not met within %d ms", cm.Kind, ms)
		}
		return map[string]any{"wait": res}, nil, nil
	}
	if cm.Kind == browser.WaitElement {
		if !hasTarget {
			return nil, nil, errorf(CodeInvalidRequest, "an element wait needs a target (a ref or role and name)")
		}
		return p.waitElement(ctx, t, cm.State, timeout, done)
	}
	w := firefox.Wait{Kind: cm.Kind, Timeout: timeout}
	switch cm.Kind {
	case browser.WaitText, browser.WaitValue, browser.WaitURL:
		if cm.Matcher == nil {
			return nil, nil, errorf(CodeInvalidRequest, "a %s wait needs a matcher", cm.Kind)
		}
		match, err := cm.Matcher.Matcher()
		if err != nil {
			return nil, nil, errorf(CodeInvalidRequest, "%v", err)
		}
		w.Match = match
	case browser.WaitDocument:
		w.ReadyState = cm.ReadyState
		switch w.ReadyState {
		case "":
			w.ReadyState = "complete"
		case "loading":
			// Every document has been loading: the condition holds.
			return done(true, p.State().ReadyState)
		}
	}
	if hasTarget {
		loc, err := p.p.Locate(ctx, t, false)
		if err != nil {
			return nil, nil, ffErr(err)
		}
		w.Target = &snapshot.Target{Ref: loc.Ref}
	} else if cm.Kind == browser.WaitValue {
		return nil, nil, errorf(CodeInvalidRequest, "a value wait needs a target (a ref or role and name)")
	}
	err = p.p.WaitFor(ctx, w)
	observed := ""
	switch cm.Kind {
	case browser.WaitURL:
		if st := p.State(); st.URL != nil {
			observed = *st.URL
		}
	case browser.WaitDocument:
		observed = p.State().ReadyState
	}
	if err != nil {
		if errors.Is(err, firefox.ErrTimeout) {
			return done(false, observed)
		}
		return nil, nil, ffErr(err)
	}
	return done(true, observed)
}

// waitElement polls a target until it is in the wanted state: present,
// visible (default) or hidden (absent counts as hidden).
func (p *firefoxPage) waitElement(ctx context.Context, t snapshot.Target, want string, timeout time.Duration,
	done func(bool, string) (map[string]any, map[string]any, error)) (map[string]any, map[string]any, error) {
	if want == "" {
		want = browser.ElementVisible
	}
	deadline := time.Now().Add(timeout)
	for {
		loc, err := p.p.Locate(ctx, t, false)
		if err != nil && !isTargetMissing(err) {
			return nil, nil, ffErr(err)
		}
		observed := "absent"
		if err == nil {
			observed = "hidden"
			if loc.Where.Visible {
				observed = "visible"
			}
		}
		matched := false
		switch want {
		case browser.ElementPresent:
			matched = observed != "absent"
		case browser.ElementVisible:
			matched = observed == "visible"
		case browser.ElementHidden:
			matched = observed != "visible"
		}
		if matched || time.Now().After(deadline) {
			return done(matched, observed)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *firefoxPage) screenshot(ctx context.Context, x *execCtx, in screenshotArgs) (browser.Screenshot, error) {
	if err := p.blocked(); err != nil {
		return browser.Screenshot{}, err
	}
	t, ok, err := in.pick()
	if err != nil {
		return browser.Screenshot{}, err
	}
	var target *snapshot.Target
	if ok {
		target = &t
	}
	shot, err := p.p.Capture(ctx, target, in.FullPage)
	if err != nil {
		return browser.Screenshot{}, ffErr(err)
	}
	sum := sha256.Sum256(shot.PNG)
	return browser.Screenshot{PNG: shot.PNG, SHA256: hex.EncodeToString(sum[:]), Width: float64(shot.Width), Height: float64(shot.Height)}, nil
}
