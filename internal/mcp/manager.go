// Package mcp is Delta's MCP client: it connects the servers of
// DELTA_MCP_SERVERS over stdio and streamable HTTP with the official go-sdk,
// and adapts each of their tools into a tool.Tool named <server>__<tool>.
//
// Boot never waits on a dead server longer than ConnectTimeout: every server
// connects concurrently, and one that fails is reported by Status with its
// error while its tools stay absent. A connected server that loses its
// session (HTTP 404, a stdio child that died) is re-initialised on the next
// call. Replay is decided per call: a call the server provably never
// received is retried; a call that died in flight is retried only when its
// name classifies it as read-only (ReadOnlyName), otherwise the model gets an
// error telling it to verify the state first, never a silent replay.
//
// Every result is framed as untrusted data and passed through Options.Redact,
// so a backend echoing a vault credential shows the model [vault:NAME]; a
// credential written literally in a server's entry is scrubbed the same way
// (literals.go), from results, errors, the status and the server's log lines.
//
// A misbehaving server is contained: a message over MaxMessageBytes is
// refused, a redirect to another origin is not followed, a tool definition
// a model API would refuse is dropped, a stdio server runs in its own
// process group that is stopped whole, and a server that stops answering
// even a ping after a call timed out is restarted on the next call.
package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/tool"
)

// Defaults.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultCallTimeout    = 60 * time.Second
	MaxConnectTimeout     = 60 * time.Second
)

// Options configure a Manager.
type Options struct {
	Servers []config.MCPServer
	// Refresh is the rotating credential of one HTTP server (optional).
	Refresh *config.MCPRefresh
	// Env is the daemon environment stdio children may draw on; only the
	// plumbing (PATH, HOME, SHELL, TMPDIR, LANG, LC_*, TERM) is passed, plus
	// each server's explicit env.
	Env    map[string]string
	Logger *slog.Logger
	// ConnectTimeout bounds each server's connection and discovery at boot
	// and on reconnect (default 10 s, capped at 60 s).
	ConnectTimeout time.Duration
	// CallTimeout is the per-call ceiling (default 60 s).
	CallTimeout time.Duration
	// Resolve returns a vault secret for a {{vault:NAME}} reference; nil
	// means no vault, and every reference fails closed.
	Resolve func(name string) (string, error)
	// Redact scrubs registered secret values from every result text.
	Redact func(string) string
	// HTTPClient is the base client for HTTP servers and the token endpoint
	// (default: a client with http.DefaultTransport).
	HTTPClient *http.Client
	// SaveImage keeps an image a tool returned: it stores the bytes in the
	// workspace, records them as verified for vision models, and returns
	// the marker the model sees in the image's place. name is
	// "<server>__<tool>-<call id>-<n>" (n counts the images of one result).
	// nil, or an error, leaves a note that the image was not shown.
	SaveImage func(name, mime string, data []byte) (marker string, err error)
	// OnToolsAdded receives the tools a connected server revealed later with
	// notifications/tools/list_changed; the daemon adds them to its registry
	// (nil = such notifications are ignored).
	OnToolsAdded func([]tool.Tool)
}

// ServerStatus is one server as /v1/status and /v1/dev/config show it.
type ServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Connected bool   `json:"connected"`
	Protocol  string `json:"protocol,omitempty"`
	Tools     int    `json:"tools"`
	Dropped   int    `json:"dropped,omitempty"` // tools whose names could not be used
	Error     string `json:"error,omitempty"`
	// WaitingFor names the vault secret the server could not connect without.
	WaitingFor string `json:"waiting_for,omitempty"`
}

// Manager owns the connections to every configured MCP server.
type Manager struct {
	o       Options
	log     *slog.Logger
	servers []*server

	mu    sync.Mutex
	tools []tool.Tool

	// ctx lives until Close: background relists run under it.
	ctx    context.Context
	cancel context.CancelFunc
}

// New fills defaults; it connects nothing (see Open).
func New(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	o.ConnectTimeout = min(o.ConnectTimeout, MaxConnectTimeout)
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	m := &Manager{o: o, log: o.Logger}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, c := range o.Servers {
		s := &server{m: m, cfg: c, literals: literalSecrets(c)}
		s.log = slog.New(redactHandler{inner: o.Logger.Handler(), redact: s.redact}).With("mcp_server", c.Name)
		if o.Refresh != nil && o.Refresh.Server == c.Name && c.Transport == config.MCPHTTP {
			s.refresh = newRefresher(*o.Refresh, o.HTTPClient, s.log)
		}
		s.status = ServerStatus{Name: c.Name, Transport: c.Transport}
		m.servers = append(m.servers, s)
	}
	return m
}

// Open connects every server concurrently and discovers its tools. It
// returns after at most ConnectTimeout (plus process teardown of a server
// that did not answer); a server that fails is logged and reported by
// Status, never returned as an error. ctx bounds the whole boot.
func (m *Manager) Open(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(func() {
			if s.cfg.Inferred {
				s.log.Info("mcp transport inferred from entry shape", "transport", s.cfg.Transport)
			}
			s.boot(ctx)
		})
	}
	wg.Wait()
	for _, s := range m.servers {
		m.claim(s, s.adapted())
	}
	return nil
}

// claim registers a server's adapted tools under the names no other server
// took first, and returns those. Names can meet across servers because a
// server name may itself hold "__": server "crm" with tool "notes__get" and
// server "crm__notes" with tool "get" both make crm__notes__get. The first
// in configuration order (or the first connected) keeps it; the other is
// dropped with a warning naming both, and counted in its server's status.
func (m *Manager) claim(s *server, ts []tool.Tool) []tool.Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	owner := make(map[string]string, len(m.tools))
	for _, t := range m.tools {
		owner[t.Spec().Name] = t.(*mcpTool).s.cfg.Name
	}
	var kept []tool.Tool
	for _, t := range ts {
		name := t.Spec().Name
		if other, taken := owner[name]; taken {
			s.log.Warn("mcp tool dropped: another server's tool has the same full name", "tool", t.(*mcpTool).remote, "name", name, "kept_from", other)
			s.setStatus(func(st *ServerStatus) { st.Tools--; st.Dropped++ })
			continue
		}
		owner[name] = s.cfg.Name
		kept = append(kept, t)
	}
	m.tools = append(m.tools, kept...)
	return kept
}

// Tools returns the adapted tools of every server connected at Open (and
// of servers connected later by Retry), in configuration then server order.
func (m *Manager) Tools() []tool.Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]tool.Tool(nil), m.tools...)
}

// Retry connects the servers that are not connected (for instance after
// the vault credential they were waiting for arrived) and returns the tools
// they add; the daemon adds those to its registry.
func (m *Manager) Retry(ctx context.Context) []tool.Tool {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var added []tool.Tool
	for _, s := range m.servers {
		if s.discovered() {
			continue
		}
		wg.Go(func() {
			s.boot(ctx)
			if ts := s.adapted(); len(ts) > 0 {
				mu.Lock()
				added = append(added, m.claim(s, ts)...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return added
}

// Status reports every configured server.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, len(m.servers))
	for i, s := range m.servers {
		out[i] = s.snapshot()
	}
	return out
}

// Close ends every session and stops stdio children, waiting at most until
// ctx is done.
func (m *Manager) Close(ctx context.Context) error {
	m.cancel()
	done := make(chan error, 1)
	go func() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for _, s := range m.servers {
			wg.Go(func() {
				if err := s.close(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		done <- errors.Join(errs...)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

type runTokenKey struct{}

// WithRunToken returns ctx carrying a run's authToken: every HTTP MCP
// request made with it sends Authorization: Bearer tok instead of the
// configured one, and a 401 is then not answered by rotating the shared
// credential.
func WithRunToken(ctx context.Context, tok string) context.Context {
	if tok == "" {
		return ctx
	}
	return context.WithValue(ctx, runTokenKey{}, tok)
}

type lostTokenKey struct{}

// WithLostRunToken marks ctx as belonging to a run that was submitted with
// an authToken the process no longer holds (it restarted since: tokens are
// never stored). HTTP MCP calls made with it are refused, never sent with
// the shared credential instead.
func WithLostRunToken(ctx context.Context) context.Context {
	return context.WithValue(ctx, lostTokenKey{}, true)
}

// RunToken is the run's authToken ctx carries ("" for none, or for one lost
// to a restart), for callers that must scrub it from what a careless server
// echoes back.
func RunToken(ctx context.Context) string { return runToken(ctx) }

func runTokenLost(ctx context.Context) bool {
	lost, _ := ctx.Value(lostTokenKey{}).(bool)
	return lost && runToken(ctx) == ""
}

func runToken(ctx context.Context) string {
	s, _ := ctx.Value(runTokenKey{}).(string)
	return s
}

type callMetaKey struct{}

// WithCallMeta returns ctx whose MCP calls carry meta as the request's
// _meta object (Delta's promotions send their idempotency key this way,
// for a product that deduplicates on it).
func WithCallMeta(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return context.WithValue(ctx, callMetaKey{}, meta)
}

func callMeta(ctx context.Context) sdk.Meta {
	m, _ := ctx.Value(callMetaKey{}).(map[string]any)
	return sdk.Meta(m)
}
