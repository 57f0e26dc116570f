// Package browser runs one real Chromium for bobby and exposes it as
// sessions and pages.
//
// A Runtime owns the Chromium process: Open launches it, Close kills it and
// waits until no process is left, and a crash or an external kill is noticed
// at once (Healthy turns false, calls into the dead sessions return
// ErrBrowserCrashed) and repaired by the next NewSession, which relaunches.
//
// A Session is an isolated browser context (own cookies, storage and cache),
// so parallel agents do not see each other's logins. A Page is a target in
// that context. Pages that a page opens itself (window.open, target=_blank,
// ctrl-click) are registered in the same session automatically, so a page
// list always shows them.
//
// Every page keeps its state (URL, ready state, in-flight requests, the open
// JavaScript dialog) from CDP events, so State, PendingDialog and the session
// and page lists answer from memory even while a dialog blocks the renderer.
// Work that needs the renderer runs through Page.Do, which refuses to start
// while a dialog is open and aborts when one opens, returning a *DialogError:
// a dialog never hangs a call.
//
// Packages that work on the DOM (snapshots, forms) get the chromedp page
// context from Page.Do and do not import this package's internals.
//
// All methods are safe for concurrent use.
package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// Defaults used by New for zero Options fields.
const (
	DefaultNavigateTimeout = 30 * time.Second
	DefaultActionTimeout   = 15 * time.Second
	DefaultLaunchTimeout   = 30 * time.Second
	DefaultWindowWidth     = 1280
	DefaultWindowHeight    = 800
)

// DefaultFlags are the Chromium switches every launch uses, on top of
// chromedp's defaults. Without the background-networking switches Chromium
// floods a closed network with refused connections.
var DefaultFlags = []string{
	"--headless",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
}

// Options configure a Runtime. Zero fields take the defaults above.
type Options struct {
	// ExecPath is the Chromium binary. Empty means the first of chromium,
	// chromium-browser, google-chrome on PATH.
	ExecPath string
	// ExtraFlags are added after DefaultFlags, as "--name" or "--name=value".
	ExtraFlags []string
	// DataDir is where each launch creates its fresh user-data-dir (removed
	// again on Close or after a crash). Empty means os.TempDir().
	DataDir string
	// Logger receives the runtime's logs. Nil means slog.Default().
	Logger *slog.Logger

	// NavigateTimeout bounds one navigation until its load event.
	NavigateTimeout time.Duration
	// ActionTimeout bounds one action (click, type, evaluate, a Do call).
	ActionTimeout time.Duration
	// LaunchTimeout bounds the launch of Chromium.
	LaunchTimeout time.Duration

	// DownloadsDir is the root under which DownloadURL saves files.
	DownloadsDir string
	// MaxCaptureBytes bounds a download a page starts itself (a click on
	// a download link); larger ones are cancelled. Zero means
	// DefaultMaxCaptureBytes.
	MaxCaptureBytes int64

	// Navigation is the scheme policy of Page.Navigate.
	Navigation NavigationPolicy
	// AllowURL, when set, is asked about every URL a page navigates to
	// (including each redirect hop of the main document) and may refuse it
	// with an error; the gateway uses it for its private-address policy.
	AllowURL func(*url.URL) error

	// NoWarmSpare turns off the warm spare (see spare.go): every session
	// then opens its browser context and first page when asked.
	NoWarmSpare bool
}

// Runtime owns one Chromium process and the sessions in it.
type Runtime struct {
	opts Options
	log  *slog.Logger

	launchMu sync.Mutex // serialises launches and Close

	mu       sync.Mutex
	state    runtimeState
	inst     *instance
	sessions map[string]*Session
	spare    *Session       // a ready context with a blank page, or nil
	filling  chan struct{}  // closed when the running refill ends; nil when none runs
	wg       sync.WaitGroup // instance watchers and refills

	// refillDelay is how long a new session that does not navigate defers
	// the next spare (DefaultRefillDelay; tests change it).
	refillDelay time.Duration
}

type runtimeState int

const (
	stateNew runtimeState = iota
	stateOpen
	stateClosed
)

// New returns a Runtime with defaults filled in. It starts nothing.
func New(o Options) *Runtime {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.NavigateTimeout <= 0 {
		o.NavigateTimeout = DefaultNavigateTimeout
	}
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = DefaultActionTimeout
	}
	if o.LaunchTimeout <= 0 {
		o.LaunchTimeout = DefaultLaunchTimeout
	}
	if o.DataDir == "" {
		o.DataDir = os.TempDir()
	}
	return &Runtime{
		opts:        o,
		log:         o.Logger.With("system", "browser"),
		sessions:    make(map[string]*Session),
		refillDelay: DefaultRefillDelay,
	}
}

// Options returns the effective options (defaults filled in).
func (r *Runtime) Options() Options { return r.opts }

// Open launches Chromium. ctx bounds the launch only; the browser lives
// until Close.
func (r *Runtime) Open(ctx context.Context) error {
	r.launchMu.Lock()
	defer r.launchMu.Unlock()
	r.mu.Lock()
	switch r.state {
	case stateOpen:
		r.mu.Unlock()
		return errors.New("open browser runtime: already open")
	case stateClosed:
		r.mu.Unlock()
		return fmt.Errorf("open browser runtime: %w", ErrNotOpen)
	}
	r.mu.Unlock()

	inst, err := r.launch(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.state = stateOpen
	r.inst = inst
	r.mu.Unlock()
	r.refill()
	return nil
}

// Close closes every session and kills Chromium, then waits until the
// process and its children are gone and the profile directory is removed.
func (r *Runtime) Close(ctx context.Context) error {
	r.launchMu.Lock()
	defer r.launchMu.Unlock()
	r.mu.Lock()
	if r.state != stateOpen {
		r.state = stateClosed
		r.mu.Unlock()
		return nil
	}
	r.state = stateClosed
	inst := r.inst
	r.inst = nil
	sessions := r.sessions
	r.sessions = make(map[string]*Session)
	if r.spare != nil {
		sessions[r.spare.ID] = r.spare
		r.spare = nil
	}
	r.mu.Unlock()

	// Kill the browser first: the pages' handlers then end at once
	// instead of closing their targets one by one.
	var err error
	if inst != nil {
		err = inst.shutdown(ctx)
	}
	for _, s := range sessions {
		s.markClosed(ErrSessionClosed)
	}
	r.wg.Wait()
	return err
}

// Healthy reports whether the runtime is open and its Chromium is alive.
func (r *Runtime) Healthy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state == stateOpen && r.inst != nil && r.inst.alive()
}

// Version returns the product string of the running browser, such as
// "Chrome/156.0.8078.108".
func (r *Runtime) Version(ctx context.Context) (string, error) {
	inst, err := r.current()
	if err != nil {
		return "", fmt.Errorf("browser version: %w", err)
	}
	cctx, cancel := inst.callCtx(ctx, r.opts.ActionTimeout)
	defer cancel()
	res, err := chromedp.CallBrowser(cctx, browser.GetVersion, cdp.Empty{})
	if err != nil {
		return "", fmt.Errorf("browser version: %w", inst.classify(err))
	}
	return res.Product, nil
}

// PID returns the process ID of the running Chromium, or 0.
func (r *Runtime) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inst == nil {
		return 0
	}
	return r.inst.pid
}

// current returns the live instance, or why there is none.
func (r *Runtime) current() (*instance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != stateOpen || r.inst == nil {
		return nil, ErrNotOpen
	}
	if !r.inst.alive() {
		return nil, ErrBrowserCrashed
	}
	return r.inst, nil
}

// ensure returns the live instance, relaunching Chromium when it died.
func (r *Runtime) ensure(ctx context.Context) (*instance, error) {
	if inst, err := r.current(); err == nil {
		return inst, nil
	} else if !errors.Is(err, ErrBrowserCrashed) {
		return nil, err
	}
	r.launchMu.Lock()
	defer r.launchMu.Unlock()
	r.mu.Lock()
	if r.state != stateOpen {
		r.mu.Unlock()
		return nil, ErrNotOpen
	}
	old := r.inst
	r.mu.Unlock()
	if old != nil && old.alive() {
		return old, nil // another caller relaunched first
	}
	if old != nil {
		// The process is gone already; this only reaps and removes its
		// profile directory.
		if err := old.shutdown(ctx); err != nil {
			r.log.Warn("clean up crashed browser", "err", err)
		}
	}
	r.log.Info("relaunching crashed browser")
	inst, err := r.launch(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.inst = inst
	r.mu.Unlock()
	r.refill()
	return inst, nil
}

// NewSession creates an isolated browser context. profile is a label that
// the session reports back; every session starts with empty cookies and
// storage. When Chromium died, NewSession relaunches it first.
func (r *Runtime) NewSession(ctx context.Context, profile string, policy ExecutionPolicy) (*Session, error) {
	if strings.TrimSpace(profile) == "" {
		return nil, fmt.Errorf("new session: %w", invalidf("profile is required"))
	}
	inst, err := r.ensure(ctx)
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	s := r.takeSpare(ctx, inst)
	if s != nil {
		s.adopt(profile, policy)
	} else if s, err = r.openSession(ctx, inst, profile, policy); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.state != stateOpen {
		r.mu.Unlock()
		s.discard(ctx)
		return nil, fmt.Errorf("new session: %w", ErrNotOpen)
	}
	r.sessions[s.ID] = s
	r.mu.Unlock()
	inst.addSession(s)
	r.refillAfterStart(s)
	r.log.Debug("session created", "session", s.ID, "profile", profile)
	return s, nil
}

// openSession creates an isolated browser context in inst, with download
// capture on. The session is not registered anywhere yet.
func (r *Runtime) openSession(ctx context.Context, inst *instance, profile string, policy ExecutionPolicy) (*Session, error) {
	cctx, cancel := inst.callCtx(ctx, r.opts.ActionTimeout)
	defer cancel()
	res, err := chromedp.CallBrowser(cctx, target.CreateBrowserContext, target.CreateBrowserContextParams{})
	if err != nil {
		return nil, fmt.Errorf("new session: create browser context: %w", inst.classify(err))
	}
	now := time.Now().UTC()
	s := &Session{
		ID:        uuid.NewString(),
		Profile:   profile,
		rt:        r,
		inst:      inst,
		contextID: res.BrowserContextID,
		policy:    policy,
		createdAt: now,
		lastUsed:  now,
		adopting:  make(map[target.ID]bool),
		changed:   make(chan struct{}),
	}
	if err := s.enableCapture(ctx); err != nil {
		s.discard(ctx)
		return nil, fmt.Errorf("new session: download capture: %w", err)
	}
	return s, nil
}

// Session returns the session with the ID, or ErrNotFound.
func (r *Runtime) Session(id string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sessions[id]
	if !ok {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return s, nil
}

// Sessions returns every session, oldest first. Sessions of a crashed
// browser stay listed (their calls return ErrBrowserCrashed) until
// CloseSession removes them.
func (r *Runtime) Sessions() []*Session {
	r.mu.Lock()
	out := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b *Session) int {
		if c := a.createdAt.Compare(b.createdAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Page finds a page by ID across all sessions.
func (r *Runtime) Page(id string) (*Page, error) {
	for _, s := range r.Sessions() {
		if p, err := s.Page(id); err == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("page %s: %w", id, ErrNotFound)
}

// CloseSession closes the session's pages and disposes of its browser
// context. A session of a crashed browser is just forgotten.
func (r *Runtime) CloseSession(ctx context.Context, id string) error {
	r.mu.Lock()
	s, ok := r.sessions[id]
	delete(r.sessions, id)
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("close session %s: %w", id, ErrNotFound)
	}
	return s.close(ctx)
}

// execPath finds the Chromium binary.
func (r *Runtime) execPath() (string, error) {
	if r.opts.ExecPath != "" {
		p, err := exec.LookPath(r.opts.ExecPath)
		if err != nil {
			return "", fmt.Errorf("find chromium %s: %w", r.opts.ExecPath, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("find chromium: none of chromium, chromium-browser, google-chrome on PATH (install chromium or set ExecPath)")
}
