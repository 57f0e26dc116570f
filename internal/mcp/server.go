package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/version"
)

// server is one configured MCP server and its current session.
type server struct {
	m       *Manager
	cfg     config.MCPServer
	log     *slog.Logger
	refresh *refresher // nil unless this is the rotating-credential server
	// literals scrubs the credentials written literally in the entry
	// (nil: none); see redact.
	literals *strings.Replacer

	// connMu serialises (re)connection, so concurrent callers that find the
	// session gone share one re-initialisation.
	connMu  sync.Mutex
	session *sdk.ClientSession
	// fails counts the connection attempts that failed in a row, and
	// retryAt is when the next may start (both under connMu): a server
	// that cannot start is tried again after a growing pause, so calls in
	// between are answered at once instead of each spawning it again or
	// waiting out ConnectTimeout.
	fails   int
	retryAt time.Time
	lastErr error

	proc atomic.Pointer[proc] // the stdio process of the latest connection

	listMu sync.Mutex // serialises relists, so a tool is added once
	// relisting is set while a relist for notifications runs, and again
	// when one more arrived meanwhile (see relistSoon).
	relisting, relistAgain atomic.Bool
	relistSess             atomic.Pointer[sdk.ClientSession]
	probing                atomic.Bool // a liveness probe runs (see probe)
	mu                     sync.Mutex  // guards status, tools
	status                 ServerStatus
	tools                  []*sdk.Tool // discovered once; nil until the first successful boot
}

// noteWait bounds how long an error waits for a stdio server's exit status
// and last stderr lines.
const noteWait = 200 * time.Millisecond

// lostNote is what the latest stdio process adds to a connection's loss.
func (s *server) lostNote() string {
	if pr := s.proc.Load(); pr != nil {
		return pr.note(noteWait)
	}
	return ""
}

// errBackingOff is the answer of a server between failed connection
// attempts.
var errBackingOff = errors.New("it is down")

// retryPauseTest, when set, replaces retryPause's first second in tests.
var retryPauseTest atomic.Int64

// retryPause is the pause after the n-th failed connection attempt in a
// row: 1 s, doubling, at most 64 s.
func retryPause(n int) time.Duration {
	base := time.Second
	if d := retryPauseTest.Load(); d > 0 {
		base = time.Duration(d)
	}
	return base << min(n-1, 6)
}

// errClosed is the answer of a server whose Manager was closed.
var errClosed = errors.New("the daemon is shutting down: the MCP client is closed")

// credentialError marks a connection that failed for want of a vault
// secret, so the server is retried when it arrives.
type credentialError struct {
	name string
	err  error
}

func (e *credentialError) Error() string { return e.err.Error() }
func (e *credentialError) Unwrap() error { return e.err }

// boot connects and lists the tools once.
func (s *server) boot(ctx context.Context) {
	// current bounds the connection by ConnectTimeout itself, and says so
	// when that is what ended it; the listing gets what is left of it.
	deadline := time.Now().Add(s.m.o.ConnectTimeout)
	sess, err := s.current(ctx)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err == nil {
		var tools []*sdk.Tool
		for t, lerr := range sess.Tools(ctx, nil) {
			if lerr != nil {
				err = fmt.Errorf("list tools: %w", lerr)
				break
			}
			tools = append(tools, t)
		}
		if err == nil {
			s.mu.Lock()
			s.tools = tools
			s.mu.Unlock()
			s.log.Info("mcp server connected", "transport", s.cfg.Transport, "tools", len(tools),
				"protocol", sess.InitializeResult().ProtocolVersion)
			return
		}
		s.drop(sess, err)
	}
	s.log.Warn("mcp server unavailable: its tools are absent", "transport", s.cfg.Transport, "err", err)
}

func (s *server) discovered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools != nil
}

func (s *server) snapshot() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *server) setStatus(f func(st *ServerStatus)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.status)
}

// current returns the live session, connecting one if there is none.
func (s *server) current(ctx context.Context) (*sdk.ClientSession, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	if s.m.ctx.Err() != nil {
		// After Close nothing reconnects: a call still running would
		// otherwise start a server no one stops.
		return nil, errClosed
	}
	if wait := time.Until(s.retryAt); wait > 0 {
		return nil, fmt.Errorf("%w after %d failed connection attempts in a row; the next in %s (the last failed with: %w)",
			errBackingOff, s.fails, wait.Round(100*time.Millisecond), s.lastErr)
	}
	cctx, cancel := context.WithTimeout(ctx, s.m.o.ConnectTimeout)
	defer cancel()
	defer context.AfterFunc(s.m.ctx, cancel)() // Close abandons a connection under way
	sess, used, err := s.connect(cctx)
	if err != nil && s.refresh != nil && runToken(ctx) == "" && isUnauthorized(err) {
		// The access token it sent is stale (or there was none): rotate
		// once, unless a concurrent caller already did, and retry once.
		if rerr := s.refresh.rotate(cctx, used); rerr != nil {
			err = fmt.Errorf("%w (rotation failed: %v)", err, rerr)
		} else {
			sess, _, err = s.connect(cctx)
		}
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer to initialize within %s: %w", s.m.o.ConnectTimeout, err)
		}
		var ce *credentialError
		if !errors.As(err, &ce) && ctx.Err() == nil && s.m.ctx.Err() == nil {
			// A missing secret is retried as soon as it arrives; a call
			// that gave up, or a closing Manager, says nothing of the server.
			s.fails++
			s.lastErr = err
			s.retryAt = time.Now().Add(retryPause(s.fails))
		}
		s.setStatus(func(st *ServerStatus) {
			st.Connected, st.Error, st.WaitingFor = false, s.redact(err.Error()), ""
			if errors.As(err, &ce) {
				st.WaitingFor = ce.name
			}
		})
		return nil, err
	}
	s.session = sess
	s.fails, s.retryAt, s.lastErr = 0, time.Time{}, nil
	s.setStatus(func(st *ServerStatus) {
		st.Connected, st.Error, st.WaitingFor = true, "", ""
		st.Protocol = sess.InitializeResult().ProtocolVersion
	})
	return sess, nil
}

// connect opens a session; used is the rotating access token its first
// request carried.
func (s *server) connect(ctx context.Context) (sess *sdk.ClientSession, used string, err error) {
	var t sdk.Transport
	var pr *proc // a stdio server's process
	switch s.cfg.Transport {
	case config.MCPStdio:
		env, err := s.childEnv()
		if err != nil {
			return nil, "", err
		}
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...) //nolint:noctx // the server lives as long as its session; stdioTransport stops it
		cmd.Env = env
		pr = newProc(&stderrLog{log: s.log, redact: s.redact})
		pr.out.onStray = func(line string) {
			s.log.Warn("mcp stdio server wrote a line on stdout that is not a JSON-RPC message; skipped (logs belong on stderr)", "line", s.redact(line))
		}
		s.proc.Store(pr)
		t = &trackedTransport{inner: &stdioTransport{cmd: cmd, proc: pr}}
	case config.MCPHTTP:
		// Resolve every header once up front: a missing credential is a
		// clear connection error, not a request that goes out without it.
		if _, err := s.headers(); err != nil {
			return nil, "", err
		}
		t = &sdk.StreamableClientTransport{
			Endpoint: s.cfg.URL,
			HTTPClient: &http.Client{Transport: &headerTransport{s: s, base: baseTransport(s.m.o.HTTPClient)}, Timeout: 0,
				CheckRedirect: s.checkRedirect},
			MaxRetries:           2,
			DisableStandaloneSSE: true, // Delta consumes no server notifications
		}
	default:
		return nil, "", fmt.Errorf("unknown transport %q", s.cfg.Transport)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "delta", Version: version.Version}, &sdk.ClientOptions{Logger: s.log,
		ToolListChangedHandler: func(_ context.Context, req *sdk.ToolListChangedRequest) {
			// Not in the handler's goroutine: it must not wait on a request
			// over the connection it is serving.
			s.relistSoon(req.Session)
		}})
	at := &attempt{}
	sess, err = c.Connect(withAttempt(ctx, at), t, nil)
	if p := at.access.Load(); p != nil {
		used = *p
	}
	if err != nil {
		if at.unauthorized.Load() {
			return nil, used, fmt.Errorf("connect %s: %w", s.cfg.Name, errUnauthorized)
		}
		note := ""
		if pr != nil {
			note = pr.note(noteWait)
		}
		return nil, used, fmt.Errorf("connect %s: %w%s", s.cfg.Name, err, note)
	}
	return sess, used, nil
}

// drop forgets sess if it is still the current session and closes it in
// the background (a stdio close can wait for the child).
func (s *server) drop(sess *sdk.ClientSession, cause error) {
	s.connMu.Lock()
	if s.session == sess {
		s.session = nil
		s.setStatus(func(st *ServerStatus) { st.Connected, st.Error = false, s.redact(cause.Error()) })
	}
	s.connMu.Unlock()
	go func() { _ = sess.Close() }()
}

func (s *server) close() error {
	s.connMu.Lock()
	sess := s.session
	s.session = nil
	s.connMu.Unlock()
	s.setStatus(func(st *ServerStatus) { st.Connected = false })
	if sess == nil {
		return nil
	}
	if err := sess.Close(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil // a child that exits non-zero on stdin EOF is not a close failure
		}
		if s.isHTTP() {
			// Ending the session (DELETE) is a courtesy to the server; one
			// that is down or answers badly leaves nothing of Delta's open,
			// so it is no failure of Delta's shutdown.
			s.log.Warn("mcp session not ended on the server", "err", err)
			return nil
		}
		return fmt.Errorf("close mcp server %s: %w", s.cfg.Name, err)
	}
	return nil
}

// isHTTP reports a streamable-HTTP server: only those carry a run's authToken.
func (s *server) isHTTP() bool { return s.cfg.Transport == config.MCPHTTP }
