package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

// tokenInfoPrincipal is the TokenInfo.Extra key holding the policy.Principal.
const tokenInfoPrincipal = "bobby.principal"

// MCPPath is the streamable HTTP endpoint.
const MCPPath = "/v1/mcp"

type slotKey struct{}

// serverSlot makes the SDK's two getServer calls of one HTTP request agree:
// the first (a protocol-version check) gets a bare template server, the
// second (a new MCP session) gets that session's own server.
type serverSlot struct {
	mu    sync.Mutex
	calls int
	cs    *clientSession
}

// HTTPHandler serves POST/GET/DELETE /v1/mcp (bearer auth required) and
// GET /healthz.
func (g *Gateway) HTTPHandler() http.Handler {
	g.reaper.enable(g)
	// One bounded store serves every MCP session of this handler: a dropped
	// SSE stream resumes with Last-Event-ID.
	events := newEventStore(MaxEventRecords, maxSessionEventBytes, maxEventBytes)
	template := mcp.NewServer(&mcp.Implementation{Name: "bobby", Version: Version}, &mcp.ServerOptions{
		SupportedProtocolVersions: protocolVersions, Logger: g.log,
	})
	streamable := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		slot, _ := r.Context().Value(slotKey{}).(*serverSlot)
		p, ok := principalFromRequest(r)
		if slot == nil || !ok || r.Header.Get("Mcp-Session-Id") != "" {
			return template
		}
		slot.mu.Lock()
		defer slot.mu.Unlock()
		slot.calls++
		if slot.calls == 1 {
			return template
		}
		if slot.cs == nil {
			slot.cs = g.newClientSession(p)
		}
		return slot.cs.server
	}, &mcp.StreamableHTTPOptions{
		EventStore:          events,
		Logger:              g.log,
		MaxRequestBodyBytes: MaxHTTPBodyBytes,
		// An MCP session idle this long is closed, like a browser session.
		SessionTimeout: g.cfg.HTTP.IdleTimeout,
	})
	// 2026-07-28 has no MCP session: the SDK serves it only statelessly,
	// each request on a throwaway session of the principal's context.
	contexts := &statelessContexts{byKey: map[string]*clientSession{}}
	stateless := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, ok := principalFromRequest(r)
		if !ok {
			return nil
		}
		return contexts.get(g, p).server
	}, &mcp.StreamableHTTPOptions{Stateless: true, Logger: g.log, MaxRequestBodyBytes: MaxHTTPBodyBytes})
	withSlot := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionless(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		if g.refuseRevoked(w, r) || refuseBeforeInitialize(w, r) {
			return
		}
		if r.Method == http.MethodGet && g.cfg.HTTP.KeepAlive > 0 {
			k := startKeepAlive(w, g.cfg.HTTP.KeepAlive)
			defer k.stop()
			w = k
		}
		slot := &serverSlot{}
		streamable.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), slotKey{}, slot)))
		// A new MCP server whose initialize did not succeed is dropped.
		if slot.cs != nil && !slot.cs.initialized() {
			g.removeClient(slot.cs)
		}
	})
	verifier := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		p, err := g.registry().Authenticate(token, g.now())
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		if p, err = narrowPrincipal(p, r.Header); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: p.Name, Scopes: p.Capabilities.Strings(), Extra: map[string]any{tokenInfoPrincipal: p}}, nil
	}
	resumable := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !refuseEventGap(w, r, events) {
			withSlot.ServeHTTP(w, r)
		}
	})
	protected := auth.RequireBearerToken(verifier, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(resumable)
	mux := http.NewServeMux()
	mux.Handle(MCPPath, protected)
	mux.HandleFunc("GET /healthz", g.healthz)
	return mux
}

// sessionless reports whether a request speaks 2026-07-28 or later (its
// MCP-Protocol-Version header says so; the SDK's client sets it on every
// such request, server/discover included) and carries no Mcp-Session-Id.
func sessionless(r *http.Request) bool {
	return r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") >= protocol20260728
}

// statelessContexts hold what an MCP session holds for the other versions
// — the workflow handles, the tools/list and its subscriptions — once per
// principal (and capability set, which a bridge can narrow) for its
// 2026-07-28 requests. Every 2026-07-28 client of a principal shares one:
// a handle is a binding, not an authority (ownership and capability
// checks run on every call). The phase is the one thing a client would
// change under another's feet, so toolset_select refuses there and the
// listing stays at the start phase (hidden tools stay callable). A
// context whose principal's credential changed (ReloadPrincipals removed
// it) is rebuilt.
type statelessContexts struct {
	mu    sync.Mutex
	byKey map[string]*clientSession
}

func (sc *statelessContexts) get(g *Gateway, p policy.Principal) *clientSession {
	key := p.Name + "\x00" + strings.Join(p.Capabilities.Strings(), ",")
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if cs := sc.byKey[key]; cs != nil && g.hasClient(cs) {
		return cs
	}
	cs := g.newClientSessionFor(p, modernVersions)
	cs.stateless = true
	sc.byKey[key] = cs
	return cs
}

// hasClient reports whether cs is still one of the gateway's contexts.
func (g *Gateway) hasClient(cs *clientSession) bool {
	g.sessionsMu.Lock()
	defer g.sessionsMu.Unlock()
	_, ok := g.sessions[cs]
	return ok
}

// narrowPrincipal applies the bootstrap headers a bridge sends: the token
// must belong to the named principal, and the capabilities listed narrow
// the principal's set (a capability it lacks is never granted).
func narrowPrincipal(p policy.Principal, h http.Header) (policy.Principal, error) {
	if name := h.Get(HeaderPrincipal); name != "" && name != p.Name {
		return p, fmt.Errorf("the token does not belong to principal %q", name)
	}
	vals, ok := h[http.CanonicalHeaderKey(HeaderCapabilities)]
	if !ok {
		return p, nil
	}
	var names []string
	for _, c := range strings.Split(strings.Join(vals, ","), ",") {
		if c = strings.TrimSpace(c); c != "" {
			names = append(names, c)
		}
	}
	narrow, err := policy.ParseSet(names)
	if err != nil {
		return p, fmt.Errorf("%s: %w", HeaderCapabilities, err)
	}
	p.Capabilities = p.Capabilities.Intersect(narrow)
	return p, nil
}

// refuseBeforeInitialize answers a POSTed request that has no
// Mcp-Session-Id and is not initialize (or ping) with HTTP 400 and a
// JSON-RPC -32600 naming the fix; the SDK would answer it with code 0. It
// reports whether it answered.
func refuseBeforeInitialize(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxHTTPBodyBytes+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if err != nil {
		return false
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &head) != nil || len(head.ID) == 0 || string(head.ID) == "null" {
		return false // a batch, a notification or not JSON: the SDK answers
	}
	switch head.Method {
	case "", "initialize", "ping", "server/discover":
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = writeRPCError(w, head.ID, rpcInvalidRequest,
		methodName(head.Method)+" without an MCP session: send initialize first and pass the Mcp-Session-Id it returns", CodeNotInitialized)
	return true
}

func principalFromRequest(r *http.Request) (policy.Principal, bool) {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil {
		return policy.Principal{}, false
	}
	p, ok := ti.Extra[tokenInfoPrincipal].(policy.Principal)
	return p, ok
}

func (g *Gateway) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	status := "ok"
	if !g.eng.Healthy() {
		status = "degraded" // the next session relaunches the browser
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "browserHealthy": g.eng.Healthy(), "version": Version})
}

// Serve serves HTTPHandler on l until ctx ends, then shuts down gracefully:
// every MCP session is closed (its streams end), requests in flight get 5 s
// to finish, and a connection still open then is closed.
func (g *Gateway) Serve(ctx context.Context, l net.Listener) error {
	sl := &silentListener{Listener: l, conns: map[*silentConn]bool{}}
	srv := &http.Server{
		Handler:           g.HTTPHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnState:         sl.state,
	}
	// Shutdown closes the listener before it runs this: no connection
	// joins the silent ones after.
	srv.RegisterOnShutdown(sl.closeSilent)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(sl) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	g.forEachClient(func(cs *clientSession) { cs.closeMCP() })
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// A request still running, or a stream no session close ended:
		// cut it. The stop was asked for and is done, so it is not a
		// failure of serve; the warning tells the operator.
		g.log.Warn("shutdown: connections still open after the deadline were closed")
		err = srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("shutdown http: %w", err)
	}
	return nil
}

// silentListener tracks the connections accepted that have not begun a
// request. Shutdown waits up to 5 s for such a connection, in case its
// first request is on the way; but an HTTP client routinely opens one it
// then never uses (Go's transport dials a spare while a request waits for
// a connection and parks it idle), and shutdown would wait the whole
// deadline for it. On shutdown those that have sent no byte yet are closed
// at once; one that has sent some is left to finish its request.
type silentListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[*silentConn]bool
}

// silentConn is an accepted connection that records whether it sent a byte.
type silentConn struct {
	net.Conn
	spoke atomic.Bool
}

func (c *silentConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.spoke.Store(true)
	}
	return n, err
}

func (l *silentListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &silentConn{Conn: c}
	l.mu.Lock()
	l.conns[sc] = true
	l.mu.Unlock()
	return sc, nil
}

// state drops a connection once it leaves the new state (its first
// request began, or it closed).
func (l *silentListener) state(c net.Conn, st http.ConnState) {
	sc, ok := c.(*silentConn)
	if !ok || st == http.StateNew {
		return
	}
	l.mu.Lock()
	delete(l.conns, sc)
	l.mu.Unlock()
}

// closeSilent closes the tracked connections that never sent a byte.
func (l *silentListener) closeSilent() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if !c.spoke.Load() {
			_ = c.Close()
			delete(l.conns, c)
		}
	}
}
