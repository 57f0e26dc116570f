package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/firefox"
	"github.com/deltaharness/delta/internal/bobby/policy"
	"github.com/deltaharness/delta/internal/bobby/workflow"
)

// Version is stamped at build time (-ldflags "-X …/gateway.Version=…").
var Version = "dev"

// Bounds.
const (
	MaxToolInputBytes  = 256 << 10
	MaxStdioFrameBytes = 1 << 20
	MaxHTTPBodyBytes   = 1 << 20
	MaxEventRecords    = 256
	maxRetainedPages   = 256
	maxIdempotencyKeys = 1024
	maxArtifacts       = 128
	maxArtifactBytes   = 64 << 20
	// CredentialWarnAhead is how early runtime_info and doctor warn of
	// a credential expiring.
	CredentialWarnAhead = 7 * 24 * time.Hour
)

// Options configure a Gateway.
type Options struct {
	Config config.Config
	Logger *slog.Logger
	// Runtime, when set, is a Chromium runtime the caller owns (already
	// open or opened by Open); Close leaves it running. When nil, Open
	// creates and launches the engine of Config.Browser (Chromium, or
	// Firefox with engine = "firefox") and Close shuts it down.
	Runtime *browser.Runtime
	// Firefox, when set, is a Firefox runtime the caller owns, used as
	// Runtime is; it implies the Firefox engine whatever Config says.
	Firefox *firefox.Runtime
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Gateway is bobby's MCP surface over one browser runtime. One Gateway
// serves every MCP session of the process: stdio's single session or every
// streamable HTTP session. Sessions and pages belong to the principal that
// created them.
type Gateway struct {
	cfg        config.Config
	log        *slog.Logger
	now        func() time.Time
	principals atomic.Pointer[policy.Registry] // swapped by ReloadPrincipals
	revoked    revokedSessions                 // MCP sessions a reload ended
	startPhase Phase
	tools      []*toolDef
	toolByName map[string]*toolDef
	// secrets are the values bobby typed into password fields, redacted
	// from every tool result (redact.go).
	secrets secretBook

	// eng is the browser engine the tools run on; rt is the Chromium
	// runtime behind it (nil when the engine is Firefox).
	eng     engine
	rt      *browser.Runtime
	ownsRT  bool
	openMu  sync.Mutex
	opened  bool
	closing chan struct{}

	// The owned browser launches in the background so that initialize and
	// tools/list never wait for Chromium; ensureBrowser waits for it.
	launchMu   sync.Mutex
	launchDone chan struct{}
	launchErr  error

	owners    *owners
	retained  *workflow.Retained[*retainedContext]
	idem      *workflow.Idempotency[*Outcome]
	artifacts *artifactStore
	// checkpoints are the recorded outcomes of checkpointed commands,
	// kept on disk so that they outlast the process (checkpoint.go).
	checkpoints *checkpointStore

	sessionsMu sync.Mutex
	sessions   map[*clientSession]struct{}

	reaper *reaper
	bg     sync.WaitGroup // background goroutines (the idle sweep); Close waits
}

// New validates the configuration and assembles a Gateway. It starts nothing.
func New(opts Options) (*Gateway, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new gateway: %w", err)
	}
	principals, err := PrincipalsFromConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("new gateway: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	g := &Gateway{
		cfg:         cfg,
		log:         log.With("system", "gateway"),
		now:         now,
		startPhase:  Phase(cfg.Toolset.StartPhase),
		rt:          opts.Runtime,
		ownsRT:      opts.Runtime == nil && opts.Firefox == nil,
		closing:     make(chan struct{}),
		owners:      &owners{bySession: map[string]*owned{}},
		retained:    workflow.NewRetained[*retainedContext](maxRetainedPages),
		idem:        workflow.NewIdempotency[*Outcome](maxIdempotencyKeys),
		artifacts:   newArtifactStore(maxArtifacts, maxArtifactBytes),
		checkpoints: newCheckpointStore(cfg.Browser.DataDir),
		sessions:    map[*clientSession]struct{}{},
		reaper:      &reaper{max: cfg.HTTP.MaxSessions, idle: cfg.HTTP.IdleTimeout},
	}
	g.principals.Store(principals)
	switch {
	case opts.Firefox != nil:
		g.eng = newFirefoxEngine(opts.Firefox)
	case g.rt == nil && cfg.Browser.Engine == config.EngineFirefox:
		g.eng = newFirefoxEngine(firefox.New(firefox.Options{
			Path: cfg.Browser.Path, DataDir: cfg.Browser.DataDir, Args: cfg.Browser.Flags, Logger: log,
		}))
	default:
		if g.rt == nil {
			g.rt = browser.New(browser.Options{
				ExecPath:        cfg.Browser.Path,
				ExtraFlags:      cfg.Browser.Flags,
				DataDir:         cfg.Browser.DataDir,
				Logger:          log,
				DownloadsDir:    cfg.HTTP.DownloadsRoot,
				MaxCaptureBytes: cfg.HTTP.MaxDownloadBytes,
			})
		}
		g.eng = chromiumEngine{g.rt}
	}
	g.tools, g.toolByName = toolTable, toolIndex
	return g, nil
}

// PrincipalsFromConfig builds the bearer-token registry of [[principals]].
func PrincipalsFromConfig(cfg config.Config) (*policy.Registry, error) {
	var ps []policy.Principal
	for i, p := range cfg.Principals {
		caps, err := policy.ParseSet(p.Capabilities)
		if err != nil {
			return nil, &config.KeyError{Key: fmt.Sprintf("principals[%d].capabilities", i), Err: err}
		}
		pr, err := policy.NewPrincipal(p.Name, caps, p.ExpiresAt, p.TokenSHA256)
		if err != nil {
			return nil, &config.KeyError{Key: fmt.Sprintf("principals[%d]", i), Err: err}
		}
		ps = append(ps, pr)
	}
	return policy.NewRegistry(ps)
}

// Principals returns the current bearer principals.
func (g *Gateway) Principals() *policy.Registry { return g.registry() }

// Runtime returns the Chromium runtime (nil when the engine is Firefox).
func (g *Gateway) Runtime() *browser.Runtime { return g.rt }

// Engine names the browser engine the tools run on: chromium or firefox.
func (g *Gateway) Engine() string { return g.eng.name() }

// Open launches the browser when the Gateway owns it (a caller-provided
// runtime is used as it is). ctx bounds the launch only.
func (g *Gateway) Open(ctx context.Context) error {
	g.openMu.Lock()
	defer g.openMu.Unlock()
	if g.opened {
		return errors.New("open gateway: already open")
	}
	if n, err := g.checkpoints.prune(g.now().Add(-checkpointTTL)); err != nil {
		g.log.Warn("prune checkpoints", "err", err)
	} else if n > 0 {
		g.log.Info("pruned old checkpoints", "removed", n)
	}
	g.launchDone = make(chan struct{})
	if g.ownsRT {
		go func() {
			defer close(g.launchDone)
			err := g.eng.Open(context.WithoutCancel(ctx))
			if err != nil {
				g.log.Error("browser launch failed; the next session retries", "err", err)
			}
			g.launchMu.Lock()
			g.launchErr = err
			g.launchMu.Unlock()
		}()
	} else {
		close(g.launchDone)
	}
	g.opened = true
	return nil
}

// ensureBrowser waits for the background launch and retries a failed one.
func (g *Gateway) ensureBrowser(ctx context.Context) error {
	g.openMu.Lock()
	done := g.launchDone
	g.openMu.Unlock()
	if done == nil {
		return fmt.Errorf("browser: %w", browser.ErrNotOpen)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.launchMu.Lock()
	defer g.launchMu.Unlock()
	if g.launchErr == nil {
		return nil
	}
	if err := g.eng.Open(ctx); err != nil {
		return fmt.Errorf("launch browser: %w", err)
	}
	g.launchErr = nil
	return nil
}

// Close closes every MCP session and, when the Gateway owns the browser,
// every browser session and Chromium itself.
func (g *Gateway) Close(ctx context.Context) error {
	g.openMu.Lock()
	defer g.openMu.Unlock()
	select {
	case <-g.closing:
		return nil
	default:
		close(g.closing)
	}
	g.bg.Wait()
	g.sessionsMu.Lock()
	var css []*clientSession
	for cs := range g.sessions {
		css = append(css, cs)
	}
	g.sessionsMu.Unlock()
	for _, cs := range css {
		cs.closeMCP()
	}
	if g.launchDone != nil {
		<-g.launchDone // never close a runtime while it is launching
	}
	var err error
	if g.ownsRT && g.opened {
		err = g.eng.Close(context.WithoutCancel(ctx))
	} else {
		// A shared runtime outlives us, but the sessions we created do not.
		for _, id := range g.owners.all() {
			if cerr := g.eng.closeSession(context.WithoutCancel(ctx), id); cerr != nil && !errors.Is(cerr, browser.ErrNotFound) {
				err = errors.Join(err, cerr)
			}
		}
	}
	g.opened = false
	return err
}

// owners records which principal created each browser session and when
// a call last used it (the LRU order of the session cap and the idle
// reaper). Ownership is the whole access rule: another principal gets
// notFound, the same answer as for an unknown ID.
type owners struct {
	mu        sync.Mutex
	bySession map[string]*owned
}

type owned struct {
	principal string
	lastUsed  time.Time
}

func (o *owners) set(sessionID, principal string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bySession[sessionID] = &owned{principal: principal, lastUsed: now}
}

func (o *owners) owner(sessionID string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.bySession[sessionID]
	if !ok {
		return "", false
	}
	return w.principal, true
}

// touch records a use of the session.
func (o *owners) touch(sessionID string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if w, ok := o.bySession[sessionID]; ok && now.After(w.lastUsed) {
		w.lastUsed = now
	}
}

func (o *owners) remove(sessionID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.bySession, sessionID)
}

func (o *owners) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.bySession)
}

func (o *owners) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.bySession))
	for id := range o.bySession {
		out = append(out, id)
	}
	return out
}

// leastRecent returns the least recently used session.
func (o *owners) leastRecent() (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var id string
	var at time.Time
	for sid, w := range o.bySession {
		if id == "" || w.lastUsed.Before(at) {
			id, at = sid, w.lastUsed
		}
	}
	return id, id != ""
}

// idleSince returns the sessions last used before t.
func (o *owners) idleSince(t time.Time) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for sid, w := range o.bySession {
		if w.lastUsed.Before(t) {
			out = append(out, sid)
		}
	}
	return out
}

// session returns the principal's live browser session, or notFound.
func (g *Gateway) session(principal, id string) (engineSession, *toolError) {
	if owner, ok := g.owners.owner(id); !ok || owner != principal {
		return nil, errorf(CodeNotFound, "session %s not found", id)
	}
	s, err := g.eng.session(id)
	if err != nil {
		g.owners.remove(id)
		return nil, errorf(CodeNotFound, "session %s not found", id)
	}
	g.owners.touch(id, g.now())
	return s, nil
}

// page returns the principal's page. sessionID may be empty (the page is
// looked up across the principal's sessions); pageID may be empty (the
// session's active page).
func (g *Gateway) page(principal, sessionID, pageID string) (engineSession, enginePage, *toolError) {
	if sessionID == "" && pageID == "" {
		return nil, nil, schemaErr("/pageId", "required", "give workflowHandle, or pageId (optionally with sessionId)")
	}
	if sessionID == "" {
		sid, err := g.eng.pageSession(pageID)
		if err != nil {
			return nil, nil, errorf(CodeNotFound, "page %s not found", pageID)
		}
		sessionID = sid
	}
	s, terr := g.session(principal, sessionID)
	if terr != nil {
		if pageID != "" {
			return nil, nil, errorf(CodeNotFound, "page %s not found", pageID)
		}
		return nil, nil, terr
	}
	if pageID == "" {
		pageID = s.ActivePageID()
		if pageID == "" {
			return nil, nil, errorf(CodeNotFound, "session %s has no open page", sessionID)
		}
	}
	p, err := s.page(pageID)
	if err != nil {
		return nil, nil, errorf(CodeNotFound, "page %s not found", pageID)
	}
	return s, p, nil
}

// sessionAlive is the purge predicate run before each workflow_start.
func (g *Gateway) sessionAlive(id string) bool {
	s, err := g.eng.session(id)
	return err == nil && s.Alive()
}

func (g *Gateway) addClient(cs *clientSession) {
	g.sessionsMu.Lock()
	defer g.sessionsMu.Unlock()
	g.sessions[cs] = struct{}{}
}

func (g *Gateway) removeClient(cs *clientSession) {
	g.sessionsMu.Lock()
	defer g.sessionsMu.Unlock()
	delete(g.sessions, cs)
}

// forEachClient runs fn for every MCP session (used to evict handles of a
// browser session closed through any of them).
func (g *Gateway) forEachClient(fn func(cs *clientSession)) {
	g.sessionsMu.Lock()
	css := make([]*clientSession, 0, len(g.sessions))
	for cs := range g.sessions {
		css = append(css, cs)
	}
	g.sessionsMu.Unlock()
	for _, cs := range css {
		fn(cs)
	}
}
