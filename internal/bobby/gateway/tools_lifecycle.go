package gateway

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/policy"
	"github.com/deltaharness/delta/internal/bobby/workflow"
)

// lifecycleError maps a browser runtime failure of a lifecycle call.
func lifecycleError(op string, err error) *toolError {
	var te *toolError
	if errors.As(err, &te) {
		return te
	}
	switch {
	case errors.Is(err, browser.ErrInvalidArgument):
		return errorf(CodeInvalidRequest, "%s: %v", op, err)
	case errors.Is(err, browser.ErrNotFound), errors.Is(err, browser.ErrSessionClosed):
		return errorf(CodeNotFound, "%s: not found", op)
	case errors.Is(err, browser.ErrPageClosed), errors.Is(err, browser.ErrPageCrashed):
		return errorf(CodePageClosed, "%s: %v", op, err)
	case errors.Is(err, browser.ErrBrowserCrashed), errors.Is(err, browser.ErrNotOpen):
		return errorf(CodeBrowserCrashed, "%s: %v", op, err)
	case errors.Is(err, browser.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return errorf(CodeTimeout, "%s: %v", op, err)
	}
	return errorf(CodeInternal, "%s: %v", op, err)
}

// policyArgs is executionPolicy as callers send it.
type policyArgs struct {
	JavaScriptEvaluation bool   `json:"javascriptEvaluation"`
	VisionAssist         bool   `json:"visionAssist"`
	Fingerprint          bool   `json:"fingerprint"`
	Humanize             bool   `json:"humanize"`
	VisionNode           string `json:"visionNode"`
	Zigzagzig            bool   `json:"zigzagzig"`
}

// checkSessionRequest applies the creation gate: profile, dynamic
// capabilities of the execution policy, and vision wiring.
func (g *Gateway) checkSessionRequest(p policy.Principal, profile string, pa *policyArgs) (browser.ExecutionPolicy, *toolError) {
	var ep browser.ExecutionPolicy
	if _, ok := g.cfg.Profiles[profile]; !ok {
		names := make([]string, 0, len(g.cfg.Profiles))
		for n := range g.cfg.Profiles {
			names = append(names, n)
		}
		sort.Strings(names)
		return ep, errorf(CodeInvalidRequest, "unknown profile; configured profiles: %s", strings.Join(names, ", "))
	}
	if pa == nil {
		return ep, nil
	}
	if pa.Zigzagzig {
		if missing := p.Capabilities.Missing(policy.BrowserFingerprint, policy.BrowserHumanize); len(missing) > 0 {
			return ep, errorf(CodeCapabilityDenied, "zigzagzig requires %s", capList(missing))
		}
		pa.Fingerprint, pa.Humanize = true, true
	}
	if pa.Fingerprint && !p.Capabilities.Has(policy.BrowserFingerprint) {
		return ep, errorf(CodeCapabilityDenied, "executionPolicy.fingerprint requires browser:fingerprint")
	}
	if pa.Humanize && !p.Capabilities.Has(policy.BrowserHumanize) {
		return ep, errorf(CodeCapabilityDenied, "executionPolicy.humanize requires browser:humanize")
	}
	if pa.VisionNode != "" {
		if _, ok := g.cfg.Nodes[pa.VisionNode]; !ok {
			return ep, errorf(CodeInvalidRequest, "visionNode names no [nodes.<name>] entry")
		}
	}
	if pa.VisionAssist {
		return ep, errorf(CodeVisionAssistFailed, "no vision provider is wired in this runtime; create the session without visionAssist")
	}
	ep = browser.ExecutionPolicy{
		JavaScriptEvaluation: pa.JavaScriptEvaluation,
		VisionAssist:         pa.VisionAssist,
		Fingerprint:          pa.Fingerprint,
		Humanize:             pa.Humanize,
	}
	return ep, nil
}

// createSession creates a browser session owned by principal p.
func (g *Gateway) createSession(ctx context.Context, p policy.Principal, profile string, ep browser.ExecutionPolicy) (engineSession, *toolError) {
	if err := g.ensureBrowser(ctx); err != nil {
		return nil, lifecycleError("create session", err)
	}
	release, err := g.reaper.reserve(ctx, g)
	if err != nil {
		return nil, lifecycleError("create session", err)
	}
	defer release()
	s, err := g.eng.newSession(ctx, profile, ep)
	if err != nil {
		return nil, lifecycleError("create session", err)
	}
	g.owners.set(s.id(), p.Name, g.now())
	return s, nil
}

// closeSession closes a browser session and forgets everything bound to it.
func (g *Gateway) closeSession(ctx context.Context, s engineSession) error {
	pages := s.pages()
	id := s.id()
	err := g.eng.closeSession(ctx, id)
	g.owners.remove(id)
	g.idem.ForgetScope(id)
	for _, pg := range pages {
		g.retained.Forget(pg.id())
	}
	g.forEachClient(func(cs *clientSession) { cs.wf.EvictSession(id) })
	if err != nil && !errors.Is(err, browser.ErrNotFound) {
		return err
	}
	return nil
}

// sessionCreateArgs are session_create's arguments.
type sessionCreateArgs struct {
	Profile         string      `json:"profile"`
	ExecutionPolicy *policyArgs `json:"executionPolicy"`
}

// sessionResult is a session's state and the call's status.
type sessionResult struct {
	Status string `json:"status"`
	browser.SessionState
}

func handleSessionCreate(ctx context.Context, c *call, args sessionCreateArgs) (*sessionResult, error) {
	ep, te := c.g.checkSessionRequest(c.principal, args.Profile, args.ExecutionPolicy)
	if te != nil {
		return nil, te
	}
	s, te := c.g.createSession(ctx, c.principal, args.Profile, ep)
	if te != nil {
		return nil, te
	}
	return &sessionResult{Status: StatusCompleted, SessionState: s.State()}, nil
}

// ownedSessions returns the principal's live sessions, oldest first.
func (g *Gateway) ownedSessions(principal string) []engineSession {
	var out []engineSession
	for _, s := range g.eng.sessions() {
		if owner, ok := g.owners.owner(s.id()); ok && owner == principal {
			out = append(out, s)
		}
	}
	return out
}

// sessionListResult is session_list's result.
type sessionListResult struct {
	Status   string         `json:"status"`
	Sessions []sessionEntry `json:"sessions"`
}

// sessionEntry is one listed session; error is set for a broken one.
type sessionEntry struct {
	browser.SessionState
	Error *ErrorInfo `json:"error,omitempty"`
}

func handleSessionList(ctx context.Context, c *call, _ struct{}) (*sessionListResult, error) {
	res := &sessionListResult{Status: StatusCompleted, Sessions: []sessionEntry{}}
	for _, s := range c.g.ownedSessions(c.principal.Name) {
		e := sessionEntry{SessionState: s.State()}
		if err := s.Err(); err != nil {
			e.Error = lifecycleError("session", err).info()
		}
		res.Sessions = append(res.Sessions, e)
	}
	return res, nil
}

type sessionIDArgs struct {
	SessionID string `json:"sessionId"`
}

type sessionCloseResult struct {
	Status      string `json:"status"`
	SessionID   string `json:"sessionId"`
	ClosedPages int    `json:"closedPages"`
}

func handleSessionClose(ctx context.Context, c *call, args sessionIDArgs) (*sessionCloseResult, error) {
	s, te := c.g.session(c.principal.Name, args.SessionID)
	if te != nil {
		return nil, te
	}
	n := len(s.pages())
	if err := c.g.closeSession(ctx, s); err != nil {
		return nil, lifecycleError("close session", err)
	}
	return &sessionCloseResult{Status: StatusCompleted, SessionID: args.SessionID, ClosedPages: n}, nil
}

type pageOpenArgs struct {
	SessionID string  `json:"sessionId"`
	URL       *string `json:"url"`
}

// pageOpenResult is the new page's state; with url, the navigation too.
type pageOpenResult struct {
	Status string `json:"status"`
	browser.PageState
	NavigationOutcome *browser.NavigationOutcome `json:"navigationOutcome,omitempty"`
	Error             *ErrorInfo                 `json:"error,omitempty"`
}

func (r *pageOpenResult) failed() bool { return r.Status != StatusCompleted }

func handlePageOpen(ctx context.Context, c *call, args pageOpenArgs) (*pageOpenResult, error) {
	if args.URL != nil {
		if te := c.require(policy.BrowserMutate); te != nil {
			return nil, te
		}
	}
	s, te := c.g.session(c.principal.Name, args.SessionID)
	if te != nil {
		return nil, te
	}
	p, err := s.newPage(ctx)
	if err != nil {
		return nil, lifecycleError("open page", err)
	}
	res := &pageOpenResult{Status: StatusCompleted}
	if args.URL == nil {
		res.PageState = p.State()
		return res, nil
	}
	nav := p.Navigate(ctx, *args.URL)
	c.g.retained.Invalidate(p.id())
	res.PageState = p.State()
	res.NavigationOutcome = &nav
	if !nav.OK() {
		res.Status = StatusFailed
		res.Error = navError(nav).info()
	}
	return res, nil
}

type pageCloseResult struct {
	Status    string `json:"status"`
	PageID    string `json:"pageId"`
	SessionID string `json:"sessionId"`
}

func handlePageClose(ctx context.Context, c *call, args scopeArgs) (*pageCloseResult, error) {
	p, err := c.scopedPage(args)
	if err != nil {
		return nil, err
	}
	if err := p.Close(ctx); err != nil && !errors.Is(err, browser.ErrPageClosed) {
		return nil, lifecycleError("close page", err)
	}
	c.g.retained.Forget(p.id())
	c.g.forEachClient(func(cs *clientSession) { cs.wf.EvictPage(p.id()) })
	return &pageCloseResult{Status: StatusCompleted, PageID: p.id(), SessionID: p.SessionID()}, nil
}

type pageListResult struct {
	Status       string      `json:"status"`
	SessionID    string      `json:"sessionId"`
	Pages        []pageEntry `json:"pages"`
	ActivePageID *string     `json:"activePageId"`
}

// pageEntry is one listed page: its opener and any open dialog too.
type pageEntry struct {
	browser.PageState
	OpenerID string       `json:"opener_id,omitempty"`
	Dialog   *dialogBrief `json:"dialog,omitempty"`
}

type dialogBrief struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func handlePageList(ctx context.Context, c *call, args sessionIDArgs) (*pageListResult, error) {
	s, te := c.g.session(c.principal.Name, args.SessionID)
	if te != nil {
		return nil, te
	}
	res := &pageListResult{Status: StatusCompleted, SessionID: s.id(), Pages: []pageEntry{}}
	for _, p := range s.pages() {
		e := pageEntry{PageState: p.State(), OpenerID: p.openerID()}
		if d := p.PendingDialog(); d != nil {
			e.Dialog = &dialogBrief{Type: d.Type, Message: d.Message}
		}
		res.Pages = append(res.Pages, e)
	}
	if id := s.ActivePageID(); id != "" {
		res.ActivePageID = &id
	}
	return res, nil
}

// firefoxFeatures are the runtime features on Firefox: what its tools
// (those declared for both engines) do there.
var firefoxFeatures = []string{"firefox", "accessibility-snapshots", "semantic-targets", "forms", "dialogs", "screenshots", "workflow-handles", "phases", "cookies", "uploads", "downloads"}

// runtimeFeatures are the configured runtime features runtime_info lists.
// vision-assist and vision-provider appear only when vision is wired, which
// it is not in this version.
//
// humanize and fingerprint are execution-policy flags that change what the
// page sees: humanize moves the pointer along a curved path and types key
// by key with a human cadence; fingerprint gives every page of the session
// the coherent persona of its profile (user agent and client hints,
// navigator.platform, language headers and Intl locale, timezone, screen).
var runtimeFeatures = []string{"chromium", "accessibility-snapshots", "semantic-targets", "forms", "dialogs", "popups", "network-quiet", "screenshots", "workflow-handles", "phases",
	"uploads", "downloads", "pdf", "emulation", "cookies", "network-log", "obstruction-dismissal", "humanize", "fingerprint"}

// runtimeInfoResult is runtime_info's result.
type runtimeInfoResult struct {
	Status                string         `json:"status"`
	Principal             string         `json:"principal"`
	CredentialExpiresAt   *string        `json:"credentialExpiresAt"`
	CredentialExpiresSoon bool           `json:"credentialExpiresSoon"`
	Capabilities          []string       `json:"capabilities"`
	GrantedCapabilities   []string       `json:"grantedCapabilities"`
	Phase                 Phase          `json:"phase"`
	Generation            uint64         `json:"generation"`
	ProtocolVersion       string         `json:"protocolVersion"`
	Server                serverInfo     `json:"server"`
	Browser               browserInfo    `json:"browser"`
	Profiles              []string       `json:"profiles"`
	VisionNodes           []string       `json:"visionNodes"`
	Sessions              map[string]any `json:"sessions"`
	Limits                runtimeLimits  `json:"limits"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type browserInfo struct {
	Healthy bool   `json:"healthy"`
	Engine  string `json:"engine"` // chromium or firefox
	Version string `json:"version,omitempty"`
}

type runtimeLimits struct {
	MaxToolInputBytes    int   `json:"maxToolInputBytes"`
	MaxStdioFrameBytes   int   `json:"maxStdioFrameBytes"`
	MaxEventRecords      int   `json:"maxEventRecords"`
	MaxDownloadBytes     int64 `json:"maxDownloadBytes"`
	WorkflowHandles      int   `json:"workflowHandles"`
	WorkflowReservations int   `json:"workflowReservations"`
}

func handleRuntimeInfo(ctx context.Context, c *call, _ struct{}) (*runtimeInfoResult, error) {
	var expires *string
	if !c.principal.ExpiresAt.IsZero() {
		e := c.principal.ExpiresAt.UTC().Format(time.RFC3339)
		expires = &e
	}
	bi := browserInfo{Healthy: c.g.eng.Healthy(), Engine: c.g.eng.name()}
	if c.g.ensureBrowser(ctx) == nil && c.g.eng.Healthy() {
		bi.Healthy = true
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := c.g.eng.Version(vctx)
		cancel()
		if err == nil {
			bi.Version = v
		}
	}
	features := runtimeFeatures
	if c.g.eng.name() == engineFirefox {
		features = firefoxFeatures
	}
	nodes := []string{}
	for n := range c.g.cfg.Nodes {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	profiles := []string{}
	for n := range c.g.cfg.Profiles {
		profiles = append(profiles, n)
	}
	sort.Strings(profiles)
	var proto string
	if c.req != nil && c.req.Session != nil {
		if ip := c.req.Session.InitializeParams(); ip != nil {
			proto = ip.ProtocolVersion
		}
	}
	return &runtimeInfoResult{
		Status:                StatusCompleted,
		Principal:             c.principal.Name,
		CredentialExpiresAt:   expires,
		CredentialExpiresSoon: c.principal.ExpiresWithin(c.g.now(), CredentialWarnAhead),
		Capabilities:          features,
		GrantedCapabilities:   c.principal.Capabilities.Strings(),
		Phase:                 c.cs.currentPhase(),
		Generation:            c.cs.wf.Generation(),
		ProtocolVersion:       proto,
		Server:                serverInfo{Name: "bobby", Version: Version},
		Browser:               bi,
		Profiles:              profiles,
		VisionNodes:           nodes,
		Sessions:              c.g.reaper.counts(c.g),
		Limits: runtimeLimits{
			MaxToolInputBytes: MaxToolInputBytes, MaxStdioFrameBytes: MaxStdioFrameBytes,
			MaxEventRecords: MaxEventRecords, MaxDownloadBytes: c.g.cfg.HTTP.MaxDownloadBytes,
			WorkflowHandles: workflow.DefaultMaxCommitted, WorkflowReservations: workflow.DefaultMaxReservations,
		},
	}, nil
}

type toolsetSelectArgs struct {
	Phase Phase `json:"phase"`
}

type toolsetSelectResult struct {
	Status        string   `json:"status"`
	Phase         Phase    `json:"phase"`
	PreviousPhase Phase    `json:"previousPhase"`
	Changed       bool     `json:"changed"`
	Tools         []string `json:"tools"`
}

func handleToolsetSelect(ctx context.Context, c *call, args toolsetSelectArgs) (*toolsetSelectResult, error) {
	if c.cs.stateless {
		return nil, errorf(CodeUnsupported, "toolset_select needs an MCP session and 2026-07-28 over HTTP has none: every tool stays callable (bobby://phases and bobby://schemas list them); connect with protocol 2025-11-25 for per-session phases")
	}
	prev := c.cs.currentPhase()
	changed := c.cs.setPhase(args.Phase)
	var tools []string
	for _, t := range c.g.tools {
		if t.advertisedTo(c.principal, args.Phase) && t.runsOn(c.g.eng.name()) {
			tools = append(tools, t.name)
		}
	}
	slices.Sort(tools)
	return &toolsetSelectResult{Status: StatusCompleted, Phase: args.Phase, PreviousPhase: prev, Changed: changed, Tools: tools}, nil
}
