package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/policy"
	"github.com/deltaharness/delta/internal/bobby/workflow"
)

// Protocol versions bobby negotiates through initialize, on a stateful
// MCP session (streamable HTTP with Mcp-Session-Id, or stdio).
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// protocol20260728 is the sessionless protocol (server/discover, the
// version, client info and capabilities in every request's _meta, list
// changes through subscriptions/listen). The SDK serves it over stdio (one
// process is one context) and over streamable HTTP only statelessly, where
// bobby keeps a context per principal instead of per MCP session
// (statelessContexts in http.go).
const protocol20260728 = "2026-07-28"

// modernVersions are the versions a context that can serve 2026-07-28
// offers: it first, then the initialize-based ones.
var modernVersions = append([]string{protocol20260728}, protocolVersions...)

// clientSession is one MCP session: its principal, its phase, its handle
// registry. Each has its own *mcp.Server, so tools/list and list_changed are
// per session and per principal.
type clientSession struct {
	g         *Gateway
	principal policy.Principal
	server    *mcp.Server
	wf        *workflow.Registry

	// stateless marks a principal's 2026-07-28 context over HTTP
	// (statelessContexts): shared by that principal's clients, so its
	// phase stays the start phase.
	stateless bool

	// explore holds the explore-phase definitions (written once, before
	// the session serves, then read only).
	explore map[string]*mcp.Tool

	mu       sync.Mutex
	phase    Phase
	mcpSess  []*mcp.ServerSession
	initDone bool
}

// newClientSession builds the per-session MCP server for principal p,
// speaking the initialize-based versions.
func (g *Gateway) newClientSession(p policy.Principal) *clientSession {
	return g.newClientSessionFor(p, protocolVersions)
}

// newClientSessionFor is newClientSession offering versions.
func (g *Gateway) newClientSessionFor(p policy.Principal, versions []string) *clientSession {
	cs := &clientSession{
		g:         g,
		principal: p,
		wf:        workflow.New(),
		phase:     g.startPhase,
	}
	cs.server = mcp.NewServer(&mcp.Implementation{Name: "bobby", Title: "bobby browser runtime", Version: Version}, &mcp.ServerOptions{
		Instructions:              instructionsFor(g.eng.name()),
		Logger:                    g.log,
		SupportedProtocolVersions: versions,
		CompletionHandler:         cs.complete,
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{},
			Prompts:   &mcp.PromptCapabilities{},
		},
	})
	cs.server.AddReceivingMiddleware(cs.middleware)
	cs.registerTools()
	addResources(cs)
	addPrompts(cs)
	g.addClient(cs)
	return cs
}

// instructionsFor is the initialize answer's instructions on engine: which
// browser runs, and how to start.
func instructionsFor(engine string) string {
	return "bobby drives a real " + engineTitle(engine) + " browser (this runtime's [browser] engine). " + instructions
}

// engineTitle is an engine's name as a user writes it.
func engineTitle(engine string) string {
	switch engine {
	case engineChromium:
		return "Chromium"
	case engineFirefox:
		return "Firefox"
	}
	return engine
}

const instructions = `Start with workflow_start {profile:"default", url} and use the returned workflowHandle with workflow_observe, intent_complete_form and intent_submit_and_verify (the form loop, all in the default explore phase). toolset_select switches phases (explore, act, intent, verify); tools/list changes, what you may call does not. Every failure carries error.repair {action, doc}; doc points into bobby://failure-taxonomy.`

// middleware intercepts the methods bobby owns: initialize (a new
// generation) and tools/call (every tool, advertised or not, goes through
// the capability check and bobby's own argument validation).
func (cs *clientSession) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			if err == nil {
				cs.wf.NewGeneration()
				if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
					cs.track(ss)
				}
			}
			return res, err
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return cs.callTool(ctx, r)
			}
		case "tools/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return cs.filterList(res), nil
		}
		return next(ctx, method, req)
	}
}

// track records an initialized MCP session and forgets this client
// session once the MCP session ends.
func (cs *clientSession) track(ss *mcp.ServerSession) {
	cs.mu.Lock()
	cs.initDone = true
	if slices.Contains(cs.mcpSess, ss) {
		cs.mu.Unlock()
		return
	}
	cs.mcpSess = append(cs.mcpSess, ss)
	cs.mu.Unlock()
	go func() {
		_ = ss.Wait()
		cs.mu.Lock()
		cs.mcpSess = slices.DeleteFunc(cs.mcpSess, func(s *mcp.ServerSession) bool { return s == ss })
		last := len(cs.mcpSess) == 0
		cs.mu.Unlock()
		if last {
			cs.g.removeClient(cs)
		}
	}()
}

// initialized reports whether an initialize was accepted.
func (cs *clientSession) initialized() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.initDone
}

// closeMCP ends the MCP sessions served by this server.
func (cs *clientSession) closeMCP() {
	cs.mu.Lock()
	sess := slices.Clone(cs.mcpSess)
	cs.mu.Unlock()
	for _, s := range sess {
		_ = s.Close()
	}
	// A 2026-07-28 context has no initialized session to track: each of
	// its requests runs on a throwaway session of the same server, and a
	// subscriptions/listen stream stays on one until it is closed.
	for s := range cs.server.Sessions() {
		_ = s.Close()
	}
}

// Phase returns the current phase.
func (cs *clientSession) currentPhase() Phase {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.phase
}

// setPhase switches the phase and reports whether it changed. A change
// re-registers toolset_select: a single registry change, so the SDK sends
// exactly one notifications/tools/list_changed, to this session only (the
// server is this session's own). tools/list is filtered by phase in the
// middleware.
func (cs *clientSession) setPhase(p Phase) bool {
	cs.mu.Lock()
	if cs.phase == p {
		cs.mu.Unlock()
		return false
	}
	cs.phase = p
	cs.mu.Unlock()
	if t := cs.g.toolByName["toolset_select"]; t != nil {
		cs.server.AddTool(cs.mcpTool(t, ""), unreachableHandler)
	}
	return true
}

// registerTools registers, once, every tool the principal's capabilities
// allow; the phase filter applies to tools/list results. The explore
// phase lists its own, shorter definitions (see advertised).
func (cs *clientSession) registerTools() {
	cs.explore = map[string]*mcp.Tool{}
	for _, t := range cs.g.tools {
		if cs.principal.Capabilities.Has(t.capabilities()...) {
			cs.server.AddTool(cs.mcpTool(t, ""), unreachableHandler)
			if inPhase(t.name, PhaseExplore) {
				cs.explore[t.name] = cs.mcpTool(t, PhaseExplore)
			}
		}
	}
}

// filterList keeps the tools of the current phase in a tools/list result.
func (cs *clientSession) filterList(res mcp.Result) mcp.Result {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok {
		return res
	}
	phase := cs.currentPhase()
	out := *lr
	out.Tools = make([]*mcp.Tool, 0, len(lr.Tools))
	for _, t := range lr.Tools {
		if !inPhase(t.Name, phase) || !cs.g.advertisedOn(t.Name) {
			continue
		}
		if et, ok := cs.explore[t.Name]; ok && phase == PhaseExplore {
			t = et
		}
		out.Tools = append(out.Tools, t)
	}
	return &out
}

// unreachableHandler is registered with the SDK for advertisement only: the
// middleware answers every tools/call itself.
func unreachableHandler(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool dispatch bypassed the gateway"}
}

// principalFor returns the principal of a request: the bearer identity of
// this very HTTP request when there is one (re-checked per call), else the
// session's (stdio).
func (cs *clientSession) principalFor(req *mcp.CallToolRequest) policy.Principal {
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		if p, ok := req.Extra.TokenInfo.Extra[tokenInfoPrincipal].(policy.Principal); ok {
			return p
		}
	}
	return cs.principal
}

// rpcInvalidParams is a JSON-RPC -32602 carrying bobby's rejection data.
func rpcInvalidParams(pointer, constraint, message string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{
		"reason":     CodeSchemaViolation,
		"pointer":    pointer,
		"constraint": constraint,
		"repair":     repairFor(CodeSchemaViolation),
	})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: message, Data: data}
}

// callTool is the single entry point of every tool call. Whatever a tool
// answers passes through redactResult: a credential a URL carries (a GET
// form's password, a token parameter) never reaches the caller.
func (cs *clientSession) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, err := cs.callToolUnredacted(ctx, req)
	if res != nil {
		redactResult(res, cs.g.secrets.spellings(cs.principalFor(req).Name))
	}
	return res, err
}

func (cs *clientSession) callToolUnredacted(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params == nil || req.Params.Name == "" {
		return nil, rpcInvalidParams("/params/name", "required", "tools/call needs params.name")
	}
	t, ok := cs.g.toolByName[req.Params.Name]
	if !ok {
		return nil, rpcInvalidParams("/params/name", "enum", fmt.Sprintf("unknown tool; tools/list names the tools (%d exist)", len(cs.g.tools)))
	}
	if len(req.Params.Arguments) > MaxToolInputBytes {
		return errorResult(t.name, errorf(CodeInputTooLarge, "tool input is %d bytes; the limit is %d", len(req.Params.Arguments), MaxToolInputBytes)), nil
	}
	args, err := decodeArgs(req.Params.Arguments)
	if err != nil {
		return nil, rpcInvalidParams("/params/arguments", "type", "params.arguments must be a JSON object")
	}
	argMap, ok := args.(map[string]any)
	if !ok {
		return nil, rpcInvalidParams("/params/arguments", "type", "params.arguments must be a JSON object")
	}
	p := cs.principalFor(req)
	if p.Expired(cs.g.now()) {
		return errorResult(t.name, errorf(CodeCapabilityDenied, "the credential of principal %s expired at %s; rotate it and re-initialize", p.Name, p.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z"))), nil
	}
	if !p.Capabilities.Has(t.capabilities()...) {
		return errorResult(t.name, errorf(CodeCapabilityDenied, "%s requires %s", t.name, capList(t.capabilities()))), nil
	}
	if te := cs.g.engineRefusal(t); te != nil {
		return errorResult(t.name, te), nil
	}
	if v := validate(t.input(p), argMap); v != nil {
		return errorResult(t.name, schemaErr(v.Pointer, v.Constraint, fmt.Sprintf("%s arguments: %s", t.name, v.Error()))), nil
	}
	c := &call{g: cs.g, cs: cs, principal: p, tool: t, args: argMap, raw: req.Params.Arguments, req: req}
	out, err := cs.safeHandle(ctx, c)
	if err != nil {
		if te, ok := err.(*toolError); ok {
			return errorResult(t.name, te), nil
		}
		cs.g.log.Error("tool failed", "tool", t.name, "err", err)
		return errorResult(t.name, errorf(CodeInternal, "%s failed unexpectedly", t.name)), nil
	}
	res := structuredResult(t.name, out, fullDetail(argMap))
	if img := cs.g.screenshotImage(p, out); img != nil {
		res.Content = append(res.Content, img)
	}
	return res, nil
}

// screenshotImage returns the PNG of a completed screenshot as image
// content. Hosts forward content to the model, not structuredContent, and
// most never read the artifact:// resource, so without it no model would
// see the capture. Only a principal that may read the artifact gets it.
func (g *Gateway) screenshotImage(p policy.Principal, v any) *mcp.ImageContent {
	o, ok := v.(*Outcome)
	if !ok || o.Kind != "screenshot" || o.failed() || !p.Capabilities.Has(policy.ArtifactRead) {
		return nil
	}
	art, _ := o.Evidence["artifact"].(map[string]any)
	uri, _ := art["uri"].(string)
	a, ok := g.artifacts.get(strings.TrimPrefix(uri, artifactScheme))
	if !ok || a.Owner != p.Name {
		return nil
	}
	return &mcp.ImageContent{Data: a.Data, MIMEType: a.MIME}
}

// safeHandle runs the handler and turns a panic into an internal error: a
// bad input must never take the process down.
func (cs *clientSession) safeHandle(ctx context.Context, c *call) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			cs.g.log.Error("tool panicked", "tool", c.tool.name, "panic", r)
			out, err = nil, errorf(CodeInternal, "%s failed unexpectedly", c.tool.name)
		}
	}()
	return c.tool.handler(ctx, c)
}

func capList(cs []policy.Capability) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	if len(s) == 0 {
		return "nothing"
	}
	return fmt.Sprint(s)
}

// failer is implemented by results that may report a non-completed status.
type failer interface{ failed() bool }

// structuredResult wraps a handler's result: the JSON as structuredContent
// (the typed contract) and a compact rendering as text content (what a
// model reads; see text.go). A result whose status is not completed is an
// error result (isError:true).
func structuredResult(tool string, v any, full bool) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(tool, errorf(CodeInternal, "encode result: %v", err))
	}
	isErr := false
	if f, ok := v.(failer); ok {
		isErr = f.failed()
	}
	text := resultText(tool, v)
	if full {
		text = fullResultText(tool, v, b)
	}
	return &mcp.CallToolResult{
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		IsError:           isErr,
	}
}

// fullDetail reports whether the call asked for evidenceDetail "full", as
// a tool argument or inside command_execute's envelope.
func fullDetail(args map[string]any) bool {
	if d, _ := args["evidenceDetail"].(string); d == "full" {
		return true
	}
	env, _ := args["envelope"].(map[string]any)
	d, _ := env["evidenceDetail"].(string)
	return d == "full"
}

// errorResult is the result of a call refused before or outside a command.
func errorResult(tool string, e *toolError) *mcp.CallToolResult {
	body := map[string]any{
		"status": StatusRejected,
		"error":  e.info(),
	}
	if e.Code == CodeSchemaViolation {
		body["reason"] = CodeSchemaViolation
		if e.Pointer != nil {
			body["pointer"] = *e.Pointer
		}
		body["constraint"] = e.Constraint
		body["repair"] = repairFor(CodeSchemaViolation)
	}
	for k, v := range e.Extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	// The text repeats only the error (code, pointer, message, repair) and
	// any extra fields: reason/pointer/constraint/repair are in it already.
	text := map[string]any{"status": StatusRejected, "error": e.info()}
	for k, v := range e.Extra {
		text[k] = v
	}
	return &mcp.CallToolResult{
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: resultText(tool, text)}},
		IsError:           true,
	}
}

// call is one tool invocation after validation.
type call struct {
	g         *Gateway
	cs        *clientSession
	principal policy.Principal
	tool      *toolDef
	args      map[string]any
	raw       json.RawMessage
	req       *mcp.CallToolRequest
}

// decode unmarshals the (validated) arguments into v. Numbers in untyped
// values stay exact (json.Number).
func (c *call) decode(v any) error {
	if len(bytes.TrimSpace(c.raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(c.raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errorf(CodeInvalidRequest, "decode %s arguments: %v", c.tool.name, err)
	}
	return nil
}

// require checks a dynamic capability (one that depends on the arguments).
func (c *call) require(caps ...policy.Capability) *toolError {
	if missing := c.principal.Capabilities.Missing(caps...); len(missing) > 0 {
		return errorf(CodeCapabilityDenied, "%s with these arguments requires %s", c.tool.name, capList(missing))
	}
	return nil
}
