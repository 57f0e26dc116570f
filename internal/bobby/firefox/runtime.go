package firefox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi"
)

// Errors of the runtime's lifecycle.
var (
	// ErrNotOpen means Open has not launched Firefox (or it failed).
	ErrNotOpen = errors.New("firefox is not running")
	// ErrNotFound means no live session or page has the id.
	ErrNotFound = errors.New("not found")
	// ErrClosed means the session or page was closed.
	ErrClosed = errors.New("closed")
)

// Options configure a Runtime. Zero values are the defaults.
type Options struct {
	Path    string // the Firefox binary (default bidi.DefaultFirefox)
	DataDir string // parent of the temporary profile (default os.TempDir())
	Args    []string
	Logger  *slog.Logger
	// Viewport is each new tab's viewport in CSS pixels (default 1280×720,
	// Chromium's headless default).
	Width, Height int
	// LaunchTimeout bounds Firefox's start to a BiDi session (0: the bidi
	// package's default, 30 s).
	LaunchTimeout time.Duration
}

// Runtime is one Firefox process and the sessions in it: each session is
// a BiDi user context (its own cookies, storage and cache), each page a
// tab in it. New fills defaults, Open launches, Close ends everything.
type Runtime struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	b        *bidi.Browser
	opened   bool // Open succeeded and Close has not run: a dead Firefox is relaunched
	sessions openOrder[*Session]
}

// New returns a Runtime that has not launched Firefox yet.
func New(o Options) *Runtime {
	if o.Path == "" {
		o.Path = bidi.DefaultFirefox
	}
	if o.Width <= 0 || o.Height <= 0 {
		o.Width, o.Height = 1280, 720
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runtime{opts: o, log: log.With("system", "firefox")}
}

// Open launches Firefox and opens its BiDi session. Opening a Runtime whose
// Firefox is alive does nothing; one whose Firefox died relaunches it.
func (r *Runtime) Open(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.b != nil && r.aliveLocked() {
		return nil
	}
	if r.b != nil {
		_ = r.b.Close()
		r.b = nil
		r.dropSessionsLocked()
	}
	b, err := bidi.Launch(ctx, bidi.LaunchOptions{Path: r.opts.Path, DataDir: r.opts.DataDir, Args: r.opts.Args, Timeout: r.opts.LaunchTimeout})
	if err != nil {
		return fmt.Errorf("open firefox: %w", err)
	}
	r.b, r.opened = b, true
	r.log.Info("firefox launched", "version", b.Capabilities.BrowserVersion)
	return nil
}

func (r *Runtime) aliveLocked() bool {
	select {
	case <-r.b.Exited():
		return false
	case <-r.b.Done():
		return false
	default:
		return true
	}
}

func (r *Runtime) dropSessionsLocked() {
	for _, s := range r.sessions.clear() {
		s.markClosed()
	}
}

// Close ends every session and stops Firefox.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropSessionsLocked()
	r.opened = false
	if r.b == nil {
		return nil
	}
	err := r.b.Close()
	r.b = nil
	if err != nil {
		return fmt.Errorf("close firefox: %w", err)
	}
	return nil
}

// Healthy reports whether Firefox runs and its BiDi connection is up.
func (r *Runtime) Healthy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b != nil && r.aliveLocked()
}

// Version is the browser's name and version as session.new reported them.
func (r *Runtime) Version() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.b == nil {
		return "", ErrNotOpen
	}
	return r.b.Capabilities.BrowserName + "/" + r.b.Capabilities.BrowserVersion, nil
}

func (r *Runtime) wasOpened() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opened
}

func (r *Runtime) browser() (*bidi.Browser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.b == nil || !r.aliveLocked() {
		return nil, ErrNotOpen
	}
	return r.b, nil
}

// NewSession creates a user context: a session isolated from every other.
// A Firefox that died since Open is relaunched first (its sessions are
// gone with it).
func (r *Runtime) NewSession(ctx context.Context) (*Session, error) {
	b, err := r.browser()
	if err != nil && r.wasOpened() {
		r.log.Warn("firefox is gone; relaunching it")
		if err = r.Open(ctx); err == nil {
			b, err = r.browser()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	uc, err := b.CreateUserContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	s := &Session{ID: uc, rt: r, conn: b.Conn, CreatedAt: time.Now()}
	r.mu.Lock()
	r.sessions.add(uc, s)
	r.mu.Unlock()
	return s, nil
}

// Session returns the live session id.
func (r *Runtime) Session(id string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sessions.get(id)
	if !ok {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return s, nil
}

// Sessions lists the live sessions, oldest first.
func (r *Runtime) Sessions() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions.list()
}

// Page finds a live page of any session.
func (r *Runtime) Page(id string) (*Page, error) {
	for _, s := range r.Sessions() {
		if p, err := s.Page(id); err == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("page %s: %w", id, ErrNotFound)
}

// CloseSession removes the user context and every tab in it.
func (r *Runtime) CloseSession(ctx context.Context, id string) error {
	r.mu.Lock()
	s, ok := r.sessions.remove(id)
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("close session %s: %w", id, ErrNotFound)
	}
	s.markClosed()
	if err := s.conn.RemoveUserContext(ctx, id); err != nil {
		return fmt.Errorf("close session %s: %w", id, err)
	}
	return nil
}

// Session is one user context and the tabs bobby opened in it.
type Session struct {
	ID        string
	CreatedAt time.Time

	rt   *Runtime
	conn *bidi.Conn

	mu       sync.Mutex
	pages    openOrder[*Page]
	active   string
	closed   bool
	lastUsed time.Time
}

// Conn is the BiDi connection the session's commands go over.
func (s *Session) Conn() *bidi.Conn { return s.conn }

func (s *Session) markClosed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, p := range s.pages.clear() {
		p.stopWatch()
	}
	s.active = ""
}

// Alive reports whether the session is open.
func (s *Session) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed
}

// LastUsed is when a page of the session was last opened or activated.
func (s *Session) LastUsed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastUsed.IsZero() {
		return s.CreatedAt
	}
	return s.lastUsed
}

// NewPage opens a tab in the session with the runtime's viewport, watching
// its dialogs, and makes it the active page.
func (s *Session) NewPage(ctx context.Context) (*Page, error) {
	if !s.Alive() {
		return nil, fmt.Errorf("new page: session %s: %w", s.ID, ErrClosed)
	}
	// A foreground tab: Firefox sizes a background tab's viewport only
	// once it paints (a second's wait), and the new page is the session's
	// active one anyway.
	var created struct {
		Context string `json:"context"`
	}
	if err := s.conn.Call(ctx, "browsingContext.create", map[string]any{"type": "tab", "background": false, "userContext": s.ID}, &created); err != nil {
		return nil, fmt.Errorf("new page: %w", err)
	}
	bc := created.Context
	if err := s.conn.SetViewport(ctx, bc, s.rt.opts.Width, s.rt.opts.Height); err != nil {
		s.closeContext(ctx, bc)
		return nil, fmt.Errorf("new page: %w", err)
	}
	p := NewPage(s.conn, bc)
	p.session = s.ID
	stop, err := p.WatchDialogs(ctx)
	if err != nil {
		s.closeContext(ctx, bc)
		return nil, fmt.Errorf("new page: %w", err)
	}
	p.stop = stop
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		stop()
		return nil, fmt.Errorf("new page: session %s: %w", s.ID, ErrClosed)
	}
	s.pages.add(bc, p)
	s.active = bc
	s.lastUsed = time.Now()
	return p, nil
}

// closeContext closes a tab that NewPage opened but could not finish
// setting up, bounded as every cleanup is (cleanupCtx).
func (s *Session) closeContext(ctx context.Context, bc string) {
	cctx, cancel := cleanupCtx(ctx)
	defer cancel()
	_ = s.conn.CloseContext(cctx, bc)
}

// Pages lists the session's open pages, oldest first.
func (s *Session) Pages() []*Page {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pages.list()
}

// Page returns the open page id of the session.
func (s *Session) Page(id string) (*Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pages.get(id)
	if !ok {
		return nil, fmt.Errorf("page %s: %w", id, ErrNotFound)
	}
	return p, nil
}

// ActivePageID is the page last opened or activated ("" when none is open).
func (s *Session) ActivePageID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// Activate brings the page to the front and makes it the active one.
func (s *Session) Activate(ctx context.Context, p *Page) error {
	if err := s.conn.Call(ctx, "browsingContext.activate", map[string]string{"context": p.bc}, nil); err != nil {
		return fmt.Errorf("activate page: %w", err)
	}
	s.mu.Lock()
	s.active = p.bc
	s.lastUsed = time.Now()
	s.mu.Unlock()
	return nil
}

// ClosePage closes the tab; the newest remaining page becomes active.
func (s *Session) ClosePage(ctx context.Context, p *Page) error {
	s.mu.Lock()
	_, ok := s.pages.remove(p.bc)
	if ok && s.active == p.bc {
		s.active = s.pages.newest()
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("close page %s: %w", p.bc, ErrClosed)
	}
	p.stopWatch()
	if err := s.conn.CloseContext(ctx, p.bc); err != nil {
		return fmt.Errorf("close page %s: %w", p.bc, err)
	}
	return nil
}

// Cookies lists the session's cookies.
func (s *Session) Cookies(ctx context.Context) ([]bidi.Cookie, error) {
	cs, err := s.conn.Cookies(ctx, s.ID, "")
	if err != nil {
		return nil, fmt.Errorf("get cookies: %w", err)
	}
	return cs, nil
}

// SetCookie stores a cookie in the session.
func (s *Session) SetCookie(ctx context.Context, c bidi.Cookie) error {
	if err := s.conn.SetCookie(ctx, s.ID, c); err != nil {
		return fmt.Errorf("set cookie %s: %w", c.Name, err)
	}
	return nil
}

// DeleteCookie deletes the session's cookies named name on domain and
// path (empty domain or path: any).
func (s *Session) DeleteCookie(ctx context.Context, name, domain, path string) error {
	f := map[string]any{"name": name}
	if domain != "" {
		f["domain"] = domain
	}
	if path != "" {
		f["path"] = path
	}
	p := map[string]any{"partition": map[string]string{"type": "storageKey", "userContext": s.ID}, "filter": f}
	if err := s.conn.Call(ctx, "storage.deleteCookies", p, nil); err != nil {
		return fmt.Errorf("delete cookie %s: %w", name, err)
	}
	return nil
}
