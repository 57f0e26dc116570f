package gateway

import (
	"context"
	"encoding/json"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// The engines [browser] engine names; a tool's engines field lists those
// it runs on.
const (
	engineChromium = "chromium"
	engineFirefox  = "firefox"
)

// bothEngines is a tool that runs on Chromium and Firefox alike.
var bothEngines = []string{engineChromium, engineFirefox}

// engine is the browser behind the tools: Chromium (package browser, over
// CDP) or Firefox (package firefox, over WebDriver BiDi). It holds what the
// tools that run on both need: the browser's lifecycle, sessions and pages.
// A tool declared for Chromium only reaches the Chromium types themselves
// (execCtx.sess, execCtx.page), which are nil on any other engine; the
// table keeps such a tool from running there (unsupportedOnEngine).
type engine interface {
	name() string
	Open(ctx context.Context) error
	Close(ctx context.Context) error
	Healthy() bool
	Version(ctx context.Context) (string, error)
	newSession(ctx context.Context, profile string, ep browser.ExecutionPolicy) (engineSession, error)
	session(id string) (engineSession, error)
	sessions() []engineSession
	// pageSession is the id of the session holding page id.
	pageSession(id string) (string, error)
	closeSession(ctx context.Context, id string) error
}

// engineSession is an isolated browser session: a Chromium browser context
// or a Firefox user context (own cookies and storage either way).
type engineSession interface {
	id() string
	State() browser.SessionState
	Policy() browser.ExecutionPolicy
	Alive() bool
	Err() error
	pages() []enginePage
	page(id string) (enginePage, error)
	newPage(ctx context.Context) (enginePage, error)
	ActivePageID() string
	Cookies(ctx context.Context, f browser.CookieFilter) ([]browser.Cookie, bool, error)
	SetCookies(ctx context.Context, cs []browser.NewCookie) error
	DeleteCookies(ctx context.Context, f browser.CookieFilter) (int, error)
	// download fetches a URL with the session's cookies into the
	// downloads root (engine_files.go).
	download(ctx context.Context, root, url, saveAs string, maxBytes int64) (browser.Download, error)
	// chromium is the Chromium session, nil on another engine.
	chromium() *browser.Session
}

// enginePage is one page (tab) with the operations of the tools that run on
// both engines. Results are the browser package's types, so both engines
// answer in the same shapes.
type enginePage interface {
	id() string
	SessionID() string
	openerID() string
	State() browser.PageState
	PendingDialog() *browser.Dialog
	HandleDialog(ctx context.Context, accept bool, promptText string) error
	Close(ctx context.Context) error
	Activate(ctx context.Context) error
	Navigate(ctx context.Context, url string) browser.NavigationOutcome
	Evaluate(ctx context.Context, expr string) (json.RawMessage, error)
	// snapshot takes the accessibility snapshot (refs stable per element).
	snapshot(ctx context.Context, opts snapshot.Options) (*snapshot.Snapshot, error)
	// click, typeText, waitFor and screenshot are the tools' own steps:
	// each engine resolves the target its way and reports the same
	// evidence.
	click(ctx context.Context, x *execCtx, in clickArgs) (map[string]any, map[string]any, error)
	typeText(ctx context.Context, x *execCtx, in typeTextArgs) (map[string]any, map[string]any, error)
	waitFor(ctx context.Context, x *execCtx, in waitForArgs) (map[string]any, map[string]any, error)
	screenshot(ctx context.Context, x *execCtx, in screenshotArgs) (browser.Screenshot, error)
	// uploadFiles puts local files on the target's file input
	// (engine_files.go).
	uploadFiles(ctx context.Context, x *execCtx, in uploadArgs) (map[string]any, map[string]any, error)
	// settle waits briefly, after an action, for its effects to land; its
	// fields join the action's evidence.
	settle(ctx context.Context) map[string]any
	// forms runs fn with the form functions (package form) bound to this
	// page through the engine's form.Page. A dialog that opens meanwhile
	// ends the work with the dialogOpen error, as it ends any page work.
	forms(ctx context.Context, fn func(ctx context.Context, tab form.Tab) error) error
	// chromium is the Chromium page, nil on another engine.
	chromium() *browser.Page
}

// chromiumEngine is the Chromium runtime behind the seam.
type chromiumEngine struct{ rt *browser.Runtime }

func (e chromiumEngine) name() string                                { return engineChromium }
func (e chromiumEngine) Open(ctx context.Context) error              { return e.rt.Open(ctx) }
func (e chromiumEngine) Close(ctx context.Context) error             { return e.rt.Close(ctx) }
func (e chromiumEngine) Healthy() bool                               { return e.rt.Healthy() }
func (e chromiumEngine) Version(ctx context.Context) (string, error) { return e.rt.Version(ctx) }

func (e chromiumEngine) newSession(ctx context.Context, profile string, ep browser.ExecutionPolicy) (engineSession, error) {
	s, err := e.rt.NewSession(ctx, profile, ep)
	if err != nil {
		return nil, err
	}
	return chromiumSession{s}, nil
}

func (e chromiumEngine) session(id string) (engineSession, error) {
	s, err := e.rt.Session(id)
	if err != nil {
		return nil, err
	}
	return chromiumSession{s}, nil
}

func (e chromiumEngine) sessions() []engineSession {
	return wrapEach(e.rt.Sessions(), func(s *browser.Session) engineSession { return chromiumSession{s} })
}

func (e chromiumEngine) pageSession(id string) (string, error) {
	p, err := e.rt.Page(id)
	if err != nil {
		return "", err
	}
	return p.SessionID(), nil
}

func (e chromiumEngine) closeSession(ctx context.Context, id string) error {
	return e.rt.CloseSession(ctx, id)
}

// wrapEach puts every session or page of an engine behind the seam.
func wrapEach[T, U any](xs []T, wrap func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = wrap(x)
	}
	return out
}

// chromiumSession is a Chromium browser context behind the seam.
type chromiumSession struct{ *browser.Session }

func (s chromiumSession) id() string                 { return s.Session.ID }
func (s chromiumSession) chromium() *browser.Session { return s.Session }

func (s chromiumSession) pages() []enginePage {
	return wrapEach(s.Session.Pages(), func(p *browser.Page) enginePage { return chromiumPage{p} })
}

func (s chromiumSession) page(id string) (enginePage, error) {
	p, err := s.Session.Page(id)
	if err != nil {
		return nil, err
	}
	return chromiumPage{p}, nil
}

func (s chromiumSession) newPage(ctx context.Context) (enginePage, error) {
	p, err := s.Session.NewPage(ctx)
	if err != nil {
		return nil, err
	}
	return chromiumPage{p}, nil
}

// chromiumPage is a Chromium page behind the seam; its tool steps are in
// engine_chromium.go.
type chromiumPage struct{ *browser.Page }

func (p chromiumPage) id() string              { return p.Page.ID }
func (p chromiumPage) openerID() string        { return p.Page.OpenerID }
func (p chromiumPage) chromium() *browser.Page { return p.Page }
