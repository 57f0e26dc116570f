package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/clip"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/vault"
)

var errUnauthorized = errors.New("401 unauthorized")

func isUnauthorized(err error) bool { return errors.Is(err, errUnauthorized) }

// attempt records, for one request, what the transport saw: whether it may
// have reached the server and whether the server provably refused it.
type attempt struct {
	first        atomic.Bool  // the first POST (the call itself) was seen
	sent         atomic.Bool  // bytes may have reached the server
	refused      atomic.Bool  // the server answered without running it
	unauthorized atomic.Bool  // … with 401
	tooLarge     atomic.Bool  // an answer passed MaxMessageBytes
	status       atomic.Int32 // the HTTP status answered to the call's POST
	access       atomic.Pointer[string]
}

// inDoubt: the server may have run the call.
func (a *attempt) inDoubt() bool { return a.sent.Load() && !a.refused.Load() }

type attemptKey struct{}

func withAttempt(ctx context.Context, a *attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

func attemptFrom(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

func baseTransport(c *http.Client) http.RoundTripper {
	if c != nil && c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// headerTransport applies a server's headers at egress: the rotating
// credential, then the static headers (vault references resolved per
// request), then a run's authToken, which wins.
type headerTransport struct {
	s    *server
	base http.RoundTripper
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.s.sameOrigin(req.URL) {
		// checkRedirect refuses to leave the configured origin; this holds
		// even for a request that got here another way: the server's
		// credentials go to its own origin only.
		return nil, fmt.Errorf("request to %s refused: MCP server %s's credentials go only to %s", origin(req.URL), t.s.cfg.Name, t.s.origin())
	}
	h, err := t.s.headers()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	var access string
	if t.s.refresh != nil {
		if access = t.s.refresh.current(); access != "" {
			req.Header.Set("Authorization", "Bearer "+access)
		}
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if tok := runToken(req.Context()); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	a := attemptFrom(req.Context())
	track := a != nil && req.Method == http.MethodPost && a.first.CompareAndSwap(false, true)
	if track {
		a.access.Store(&access)
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxMessageBytes, a: a}
	}
	if !track {
		return resp, err
	}
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			a.refused.Store(true) // never connected: nothing was sent
		}
		a.sent.Store(true)
		return resp, err
	}
	a.sent.Store(true)
	a.status.Store(int32(resp.StatusCode))
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		// A redirect is an answer without running the call.
		a.refused.Store(true)
	case resp.StatusCode == http.StatusUnauthorized:
		a.unauthorized.Store(true)
		a.refused.Store(true)
	case resp.StatusCode == http.StatusForbidden, resp.StatusCode == http.StatusNotFound,
		resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		a.refused.Store(true)
	}
	return resp, err
}

// cappedBody fails a response body past MaxMessageBytes with errTooLarge
// (the SDK reads a JSON answer whole, and an event stream to its end) and
// marks the request's attempt, since the SDK reports the read error only
// as text.
type cappedBody struct {
	io.ReadCloser
	left int64
	a    *attempt
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if b.a != nil {
			b.a.tooLarge.Store(true)
		}
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// maxRedirects bounds a chain of same-origin redirects, as net/http does.
const maxRedirects = 10

// checkRedirect follows a redirect only within the configured origin
// (scheme, host and port). Following one elsewhere would hand the server's
// headers — its Authorization token — to a host the operator never named,
// since headerTransport sets them on every request it sends.
func (s *server) checkRedirect(req *http.Request, via []*http.Request) error {
	if !s.sameOrigin(req.URL) {
		return fmt.Errorf("MCP server %s redirected to another origin, %s: not followed, so its credentials stay with %s; "+
			"if that address is right, configure it as the server's url", s.cfg.Name, origin(req.URL), s.origin())
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("MCP server %s: stopped after %d redirects", s.cfg.Name, maxRedirects)
	}
	return nil
}

// sameOrigin reports whether u is on the configured URL's origin.
func (s *server) sameOrigin(u *url.URL) bool {
	c, err := url.Parse(s.cfg.URL)
	return err == nil && u != nil && origin(u) == origin(c)
}

func (s *server) origin() string {
	c, err := url.Parse(s.cfg.URL)
	if err != nil {
		return "(unparsable url)"
	}
	return origin(c)
}

// origin is scheme://host:port with the default port made explicit, and no
// user info, path or query (which may hold secrets).
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// headers resolves the configured headers' vault references.
func (s *server) headers() (map[string]string, error) {
	out := make(map[string]string, len(s.cfg.Headers))
	for k, v := range s.cfg.Headers {
		r, err := vault.Expand(v, s.m.o.Resolve)
		if err != nil {
			return nil, credentialErr(v, err)
		}
		out[k] = r
	}
	return out, nil
}

// childEnv is the plumbing of the daemon env plus the entry's explicit env
// (vault references resolved now, at spawn).
func (s *server) childEnv() ([]string, error) {
	var env []string
	for k, v := range s.m.o.Env {
		if config.IsChildPlumbing(k) {
			if _, override := s.cfg.Env[k]; !override {
				env = append(env, k+"="+v)
			}
		}
	}
	for k, v := range s.cfg.Env {
		r, err := vault.Expand(v, s.m.o.Resolve)
		if err != nil {
			return nil, credentialErr(v, err)
		}
		env = append(env, k+"="+r)
	}
	slices.Sort(env)
	return env, nil
}

func credentialErr(template string, err error) error {
	if refs := vault.References(template); len(refs) > 0 {
		return &credentialError{name: refs[0], err: err}
	}
	return err
}

// trackedTransport wraps a stdio transport to learn whether a call's
// request was written to the child.
type trackedTransport struct{ inner sdk.Transport }

func (t *trackedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &trackedConn{Connection: c}, nil
}

type trackedConn struct{ sdk.Connection }

func (c *trackedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if a := attemptFrom(ctx); a != nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && a.first.CompareAndSwap(false, true) && err == nil {
			a.sent.Store(true)
		}
	}
	return err
}

// stderrLog turns a stdio child's stderr into debug log lines, and keeps
// its last lines for the error that reports the server's end.
type stderrLog struct {
	log    *slog.Logger
	redact func(string) string
	mu     sync.Mutex
	buf    bytes.Buffer
	last   []string // the newest stderrTail lines, redacted

	window     time.Time // start of the current second of logging
	logged     int       // lines logged in it
	suppressed int       // lines not logged in it
}

// stderrTail is how many of the last stderr lines an error quotes, each
// clipped to stderrLineMax bytes.
const (
	stderrTail    = 3
	stderrLineMax = 200
)

// A server's stderr is logged at most stderrPerSecond lines a second, each
// clipped to stderrLogMax bytes; the rest is counted in one line, so a
// server that floods its stderr cannot flood the daemon's log.
const (
	stderrPerSecond = 100
	stderrLogMax    = 2 << 10
)

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			break // an unfinished line stays buffered
		}
		w.line(string(w.buf.Next(i + 1)))
	}
	if w.buf.Len() > 64<<10 {
		w.line(w.buf.String()) // a child writing megabytes without a newline
		w.buf.Reset()
	}
	return len(p), nil
}

// flush logs an unfinished last line, once the pipe has ended, and how
// many lines went unlogged.
func (w *stderrLog) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line(w.buf.String())
	w.buf.Reset()
	w.rollover(time.Time{})
}

// rollover starts a new second of logging at now, reporting the lines the
// last one suppressed.
func (w *stderrLog) rollover(now time.Time) {
	if w.suppressed > 0 {
		w.log.Debug("mcp server stderr lines not logged", "lines", w.suppressed, "limit_per_second", stderrPerSecond)
	}
	w.window, w.logged, w.suppressed = now, 0, 0
}

func (w *stderrLog) line(line string) {
	if line = strings.TrimSpace(line); line == "" {
		return
	}
	line = w.redact(line)
	if now := time.Now(); now.Sub(w.window) >= time.Second {
		w.rollover(now)
	}
	if w.logged < stderrPerSecond {
		w.logged++
		logged := line
		if len(logged) > stderrLogMax {
			logged = strings.ToValidUTF8(clip.Bytes(logged, stderrLogMax), "")
		}
		w.log.Debug("mcp server stderr", "line", logged)
	} else {
		w.suppressed++
	}
	w.last = append(w.last, strings.ToValidUTF8(clip.Bytes(line, stderrLineMax), ""))
	if len(w.last) > stderrTail {
		w.last = w.last[len(w.last)-stderrTail:]
	}
}

// tail is the last lines, quoted and joined, "" when there were none.
func (w *stderrLog) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := make([]string, len(w.last))
	for i, l := range w.last {
		q[i] = strconv.Quote(l)
	}
	return strings.Join(q, " ")
}
