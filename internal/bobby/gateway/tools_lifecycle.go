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
func (g *Gateway) createSession(ctx context.Context, p policy.Principal, profile string, ep browser.ExecutionPolicy) (*browser.Session, *toolError) {
	if err := g.ensureBrowser(ctx); err != nil {
		return nil, lifecycleError("create session", err)
	}
	release, err := g.reaper.reserve(ctx, g)
	if err != nil {
		return nil, lifecycleError("create session", err)
	}
	defer release()
	s, err := g.rt.NewSession(ctx, profile, ep)
	if err != nil {
		return nil, lifecycleError("create session", err)
	}
	g.owners.set(s.ID, p.Name, g.now())
	return s, nil
}

// closeSession closes a browser session and forgets everything bound to it.
func (g *Gateway) closeSession(ctx context.Context, s *browser.Session) error {
	pages := s.Pages()
	err := g.rt.CloseSession(ctx, s.ID)
	g.owners.remove(s.ID)
	g.idem.ForgetScope(s.ID)
	for _, pg := range pages {
		g.retained.Forget(pg.ID)
	}
	g.forEachClient(func(cs *clientSession) { cs.wf.EvictSession(s.ID) })
	if err != nil && !errors.Is(err, browser.ErrNotFound) {
		return err
	}
	return nil
}

func merge(status string, fields any) map[string]any {
	m := toMap(fields)
	m["status"] = status
	return m
}

func handleSessionCreate(ctx context.Context, c *call) (any, error) {
	var args struct {
		Profile         string      `json:"profile"`
		ExecutionPolicy *policyArgs `json:"executionPolicy"`
	}
	if err := c.decode(&args); err != nil {
		return nil, err
	}
	ep, te := c.g.checkSessionRequest(c.principal, args.Profile, args.ExecutionPolicy)
	if te != nil {
		return nil, te
	}
	s, te := c.g.createSession(ctx, c.principal, args.Profile, ep)
	if te != nil {
		return nil, te
	}
	return merge(StatusCompleted, s.State()), nil
}

// ownedSessions returns the principal's live sessions, oldest first.
func (g *Gateway) ownedSessions(principal string) []*browser.Session {
	var out []*browser.Session
	for _, s := range g.rt.Sessions() {
		if owner, ok := g.owners.owner(s.ID); ok && owner == principal {
			out = append(out, s)
		}
	}
	return out
}

func handleSessionList(ctx context.Context, c *call) (any, error) {
	sessions := []any{}
	for _, s := range c.g.ownedSessions(c.principal.Name) {
		st := toMap(s.State())
		if err := s.Err(); err != nil {
			st["error"] = lifecycleError("session", err).info()
		}
		sessions = append(sessions, st)
	}
	return map[string]any{"status": StatusCompleted, "sessions": sessions}, nil
}

func handleSessionClose(ctx context.Context, c *call) (any, error) {
	id := argString(c.args, "sessionId")
	s, te := c.g.session(c.principal.Name, id)
	if te != nil {
		return nil, te
	}
	n := len(s.Pages())
	if err := c.g.closeSession(ctx, s); err != nil {
		return nil, lifecycleError("close session", err)
	}
	return map[string]any{"status": StatusCompleted, "sessionId": id, "closedPages": n}, nil
}

func handlePageOpen(ctx context.Context, c *call) (any, error) {
	url := argString(c.args, "url")
	if c.has("url") {
		if te := c.require(policy.BrowserMutate); te != nil {
			return nil, te
		}
	}
	s, te := c.g.session(c.principal.Name, argString(c.args, "sessionId"))
	if te != nil {
		return nil, te
	}
	p, err := s.NewPage(ctx)
	if err != nil {
		return nil, lifecycleError("open page", err)
	}
	if !c.has("url") {
		return merge(StatusCompleted, p.State()), nil
	}
	nav := p.Navigate(ctx, url)
	c.g.retained.Invalidate(p.ID)
	res := merge(StatusCompleted, p.State())
	res["navigationOutcome"] = nav
	if !nav.OK() {
		res["status"] = StatusFailed
		res["error"] = navError(nav).info()
	}
	return statusMap(res), nil
}

// statusMap is a result map whose "status" decides isError.
type statusMap map[string]any

func (m statusMap) failed() bool { s, _ := m["status"].(string); return s != StatusCompleted }

func handlePageClose(ctx context.Context, c *call) (any, error) {
	scope, err := c.cs.wf.BindScope(workflow.ScopeArgs{
		Handle: argString(c.args, "workflowHandle"), SessionID: argString(c.args, "sessionId"),
		PageID: argString(c.args, "pageId"), WorkflowID: argString(c.args, "workflowId"),
	})
	if err != nil {
		return nil, scopeError(err)
	}
	_, p, te := c.g.page(c.principal.Name, scope.SessionID, scope.PageID)
	if te != nil {
		return nil, te
	}
	if err := p.Close(ctx); err != nil && !errors.Is(err, browser.ErrPageClosed) {
		return nil, lifecycleError("close page", err)
	}
	c.g.retained.Forget(p.ID)
	c.g.forEachClient(func(cs *clientSession) { cs.wf.EvictPage(p.ID) })
	return map[string]any{"status": StatusCompleted, "pageId": p.ID, "sessionId": p.SessionID()}, nil
}

func handlePageList(ctx context.Context, c *call) (any, error) {
	s, te := c.g.session(c.principal.Name, argString(c.args, "sessionId"))
	if te != nil {
		return nil, te
	}
	pages := []any{}
	for _, p := range s.Pages() {
		st := toMap(p.State())
		if p.OpenerID != "" {
			st["opener_id"] = p.OpenerID
		}
		if d := p.PendingDialog(); d != nil {
			st["dialog"] = map[string]any{"type": d.Type, "message": d.Message}
		}
		pages = append(pages, st)
	}
	var active any
	if id := s.ActivePageID(); id != "" {
		active = id
	}
	return map[string]any{"status": StatusCompleted, "sessionId": s.ID, "pages": pages, "activePageId": active}, nil
}

// runtimeFeatures are the configured runtime features runtime_info lists.
// vision-assist and vision-provider appear only when vision is wired, which
// it is not in this version.
var runtimeFeatures = []string{"chromium", "accessibility-snapshots", "semantic-targets", "forms", "dialogs", "popups", "network-quiet", "screenshots", "workflow-handles", "phases"}

func handleRuntimeInfo(ctx context.Context, c *call) (any, error) {
	var expires any
	if !c.principal.ExpiresAt.IsZero() {
		expires = c.principal.ExpiresAt.UTC().Format(time.RFC3339)
	}
	browserInfo := map[string]any{"healthy": c.g.rt.Healthy()}
	if c.g.ensureBrowser(ctx) == nil && c.g.rt.Healthy() {
		browserInfo["healthy"] = true
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := c.g.rt.Version(vctx)
		cancel()
		if err == nil {
			browserInfo["version"] = v
		}
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
	warn := c.principal.ExpiresWithin(c.g.now(), credentialWarnAhead)
	return map[string]any{
		"status":                StatusCompleted,
		"principal":             c.principal.Name,
		"credentialExpiresAt":   expires,
		"credentialExpiresSoon": warn,
		"capabilities":          runtimeFeatures,
		"grantedCapabilities":   c.principal.Capabilities.Strings(),
		"phase":                 c.cs.currentPhase(),
		"generation":            c.cs.wf.Generation(),
		"protocolVersion":       proto,
		"server":                map[string]any{"name": "bobby", "version": Version},
		"browser":               browserInfo,
		"profiles":              profiles,
		"visionNodes":           nodes,
		"sessions":              c.g.reaper.counts(c.g),
		"limits": map[string]any{
			"maxToolInputBytes": MaxToolInputBytes, "maxStdioFrameBytes": MaxStdioFrameBytes,
			"maxEventRecords": MaxEventRecords, "maxDownloadBytes": c.g.cfg.HTTP.MaxDownloadBytes,
			"workflowHandles": workflow.DefaultMaxCommitted, "workflowReservations": workflow.DefaultMaxReservations,
		},
	}, nil
}

func handleToolsetSelect(ctx context.Context, c *call) (any, error) {
	phase := Phase(argString(c.args, "phase"))
	prev := c.cs.currentPhase()
	changed := c.cs.setPhase(phase)
	var tools []string
	for _, t := range c.g.tools {
		if t.advertisedTo(c.principal, phase) {
			tools = append(tools, t.name)
		}
	}
	slices.Sort(tools)
	return map[string]any{"status": StatusCompleted, "phase": phase, "previousPhase": prev, "changed": changed, "tools": tools}, nil
}
