package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

// Headers a bridge sends with every request so the server applies the
// bootstrap principal and capabilities of the stdio process: the server
// refuses a token of another principal and intersects the principal's
// capabilities with the list (it can narrow, never widen).
const (
	HeaderPrincipal    = "X-Bobby-Principal"
	HeaderCapabilities = "X-Bobby-Capabilities"
)

// BridgeOptions are the bootstrap settings a bridge forwards.
type BridgeOptions struct {
	Token string
	// Principal, when set, must be the name of the token's principal.
	Principal string
	// Capabilities, when CapabilitiesSet, narrow the principal's set.
	Capabilities    []string
	CapabilitiesSet bool
}

// Bridge connects a stdio MCP client to a running `bobby serve`: each
// stdin frame is POSTed to endpoint with the bearer token, responses (JSON
// or SSE) and the GET /v1/mcp notification stream are written to out. It is
// what `bobby stdio` does when AUTOMATION_RUNTIME_BOOTSTRAP_URL is set, so
// several stdio clients can share one browser runtime.
//
// When the server no longer knows the MCP session (HTTP 404: `bobby serve`
// restarted, or closed the session for being idle), the bridge
// re-initializes once with the client's own initialize request. The call
// that met the 404 is answered with an error result saying that every
// workflowHandle, session and page from before is gone (a read-only
// request is retried instead), the client is told to list tools again, and
// later calls go to the new session. When that re-initialize fails too,
// Bridge returns an error, so `bobby stdio` exits non-zero and the host can
// restart it.
func Bridge(ctx context.Context, endpoint string, opts BridgeOptions, in io.Reader, out io.Writer, log *slog.Logger) error {
	if opts.CapabilitiesSet {
		if _, err := policy.ParseSet(opts.Capabilities); err != nil {
			return fmt.Errorf("bridge capabilities: %w", err)
		}
	}
	b := &bridge{endpoint: endpoint, opts: opts, out: &lockedWriter{w: out}, log: log, client: &http.Client{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	b.stop = func(err error) { pr.CloseWithError(err) }
	go func() { pw.CloseWithError(filterFrames(in, pw, b.out, MaxStdioFrameBytes, log)) }()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), MaxStdioFrameBytes+2)
	var wg sync.WaitGroup
	b.wg = &wg
	for sc.Scan() {
		frame := append([]byte(nil), sc.Bytes()...)
		var head struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(frame, &head)
		if head.Method == "initialize" || head.Method == "notifications/initialized" {
			b.remember(head.Method, frame)
			b.post(ctx, frame, head.Method) // ordered: later frames need the session
			if head.Method == "notifications/initialized" {
				b.startSSE(ctx)
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.post(ctx, frame, head.Method)
		}()
	}
	b.endSession()
	cancel()
	wg.Wait()
	if err := b.fatalErr(); err != nil {
		return err
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("bridge stdin: %w", err)
	}
	return nil
}

type bridge struct {
	endpoint string
	opts     BridgeOptions
	out      io.Writer
	log      *slog.Logger
	client   *http.Client
	wg       *sync.WaitGroup
	stop     func(error) // ends the stdin loop

	mu          sync.Mutex
	sessionID   string
	protocol    string
	sseSession  string // the session whose notification stream is open
	initFrame   []byte // the client's initialize, replayed after a 404
	initialized bool   // the client sent notifications/initialized
	fatal       error

	// reinitMu serializes re-initialization: concurrent 404s of one lost
	// session re-initialize once.
	reinitMu sync.Mutex
}

func (b *bridge) remember(method string, frame []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if method == "initialize" {
		b.initFrame = frame
	} else {
		b.initialized = true
	}
}

func (b *bridge) fatalErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fatal
}

func (b *bridge) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.opts.Token)
	if b.opts.Principal != "" {
		req.Header.Set(HeaderPrincipal, b.opts.Principal)
	}
	if b.opts.CapabilitiesSet {
		req.Header.Set(HeaderCapabilities, strings.Join(b.opts.Capabilities, ","))
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	b.mu.Lock()
	if b.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", b.sessionID)
	}
	if b.protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", b.protocol)
	}
	b.mu.Unlock()
	return req, nil
}

// post sends one frame and copies the answer to out. Transport failures
// become JSON-RPC errors for the frame's id, so the client never hangs.
func (b *bridge) post(ctx context.Context, frame []byte, method string) {
	b.postOnce(ctx, frame, method, false)
}

// postOnce is post; retried marks the one retry after a re-initialize, so a
// server that keeps losing sessions never makes the bridge loop.
func (b *bridge) postOnce(ctx context.Context, frame []byte, method string, retried bool) {
	id := frameID(frame)
	fail := func(msg string) {
		if id != nil {
			_ = writeRPCError(b.out, id, -32603, "bridge: "+msg, CodeInternal)
		}
		b.log.Warn("bridge post failed", "method", method, "err", msg)
	}
	status, sid, body, err := b.send(ctx, frame, b.emit)
	if err != nil {
		fail(err.Error())
		return
	}
	if status == http.StatusNotFound && sid != "" && method != "initialize" && !retried {
		b.sessionLost(ctx, frame, method, id, sid)
		return
	}
	if status >= 300 && body != nil {
		if json.Valid(bytes.TrimSpace(body)) && bytes.Contains(body, []byte(`"jsonrpc"`)) {
			b.emit(bytes.TrimSpace(body))
			return
		}
		fail(fmt.Sprintf("HTTP %d: %s", status, strings.TrimSpace(string(body))))
	}
}

// send POSTs one frame, hands every JSON-RPC message of the answer to
// deliver, and returns the HTTP status, the session id the request carried
// and, for an error status, the body.
func (b *bridge) send(ctx context.Context, frame []byte, deliver func([]byte)) (status int, sid string, errBody []byte, err error) {
	req, err := b.request(ctx, http.MethodPost, frame)
	if err != nil {
		return 0, "", nil, err
	}
	sid = req.Header.Get("Mcp-Session-Id")
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, sid, nil, err
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("Mcp-Session-Id"); got != "" {
		b.mu.Lock()
		b.sessionID = got
		b.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		b.copySSE(resp.Body, nil, deliver)
	case resp.StatusCode >= 300:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, sid, body, nil
	default:
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return resp.StatusCode, sid, nil, err
		}
		deliver(bytes.TrimSpace(body))
	}
	return resp.StatusCode, sid, nil, nil
}

// sessionLost handles a 404 for session lost: re-initialize (once for all
// the calls that met it), then answer or retry the frame.
func (b *bridge) sessionLost(ctx context.Context, frame []byte, method string, id json.RawMessage, lost string) {
	if err := b.reinitialize(ctx, lost); err != nil {
		b.log.Error("bridge: the server lost the MCP session and re-initializing failed; exiting so the host can restart bobby", "err", err)
		if id != nil {
			_ = writeRPCError(b.out, id, -32603, "bridge: the server lost the MCP session and re-initializing failed: "+err.Error()+"; bobby stdio exits", CodeInternal)
		}
		b.mu.Lock()
		if b.fatal == nil {
			b.fatal = fmt.Errorf("bridge: re-initialize after the server lost the MCP session: %w", err)
		}
		b.mu.Unlock()
		b.stop(b.fatal)
		return
	}
	if method != "tools/call" {
		// Listing, reading, ping: nothing from the old session in them.
		b.postOnce(ctx, frame, method, true)
		return
	}
	if id == nil {
		return
	}
	msg, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"result": map[string]any{
			"isError": true,
			"content": []any{map[string]any{"type": "text", "text": "rejected: bobby serve lost this MCP session (it restarted or closed the session for being idle); " +
				"the bridge opened a new one. Every workflowHandle, sessionId and pageId from before is gone: start again with workflow_start. This call was not run."}},
			"structuredContent": map[string]any{"status": StatusRejected, "error": map[string]any{
				"code": CodeNotFound, "message": "the MCP session was lost and re-initialized; earlier handles, sessions and pages are gone",
				"repair": repairFor(CodeNotFound),
			}},
		},
	})
	b.emit(msg)
}

// reinitialize replays the client's initialize (and initialized) on a new
// MCP session, unless another call already did for the lost session.
func (b *bridge) reinitialize(ctx context.Context, lost string) error {
	b.reinitMu.Lock()
	defer b.reinitMu.Unlock()
	b.mu.Lock()
	if b.sessionID != lost { // already re-initialized
		b.mu.Unlock()
		return nil
	}
	initFrame, initialized := b.initFrame, b.initialized
	b.sessionID = ""
	b.mu.Unlock()
	if initFrame == nil {
		return errors.New("no initialize to replay")
	}
	var m map[string]any
	if err := json.Unmarshal(initFrame, &m); err != nil {
		return err
	}
	m["id"] = "bobby-bridge-reinitialize"
	replay, _ := json.Marshal(m)
	var answer []byte
	status, _, body, err := b.send(ctx, replay, func(msg []byte) { answer = msg })
	if err != nil {
		return err
	}
	if status >= 300 {
		return fmt.Errorf("initialize: HTTP %d: %s", status, strings.TrimSpace(string(body)))
	}
	var res struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer, &res); err != nil || res.Result == nil {
		if res.Error != nil {
			return fmt.Errorf("initialize: %s", res.Error.Message)
		}
		return fmt.Errorf("initialize: no result in %q", answer)
	}
	b.mu.Lock()
	b.protocol = res.Result.ProtocolVersion
	b.mu.Unlock()
	if initialized {
		if _, _, _, err := b.send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), b.emit); err != nil {
			return err
		}
		b.startSSE(ctx)
	}
	b.log.Warn("bridge: the server lost the MCP session; re-initialized a new one (earlier handles are gone)")
	// The new session starts in the start phase: the client lists again.
	b.emit([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	return nil
}

// emit writes one JSON-RPC message to out, noting the negotiated version.
func (b *bridge) emit(msg []byte) {
	if len(msg) == 0 {
		return
	}
	var res struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &res) == nil && res.Result.ProtocolVersion != "" {
		b.mu.Lock()
		b.protocol = res.Result.ProtocolVersion
		b.mu.Unlock()
	}
	_, _ = b.out.Write(append(append([]byte(nil), msg...), '\n'))
}

// copySSE hands the data of every SSE event to deliver; lastID tracks
// event ids.
func (b *bridge) copySSE(r io.Reader, lastID *string, deliver func([]byte)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				deliver(bytes.TrimSpace(data))
				data = data[:0]
			}
		case strings.HasPrefix(line, "data:"):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		case strings.HasPrefix(line, "id:") && lastID != nil:
			*lastID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		}
	}
	if len(data) > 0 {
		deliver(bytes.TrimSpace(data))
	}
}

// startSSE opens the GET notification stream of the current session,
// reconnecting until ctx ends or the session is gone (a re-initialize
// starts it again).
func (b *bridge) startSSE(ctx context.Context) {
	b.mu.Lock()
	sid := b.sessionID
	if sid == "" || b.sseSession == sid {
		b.mu.Unlock()
		return
	}
	b.sseSession = sid
	b.mu.Unlock()
	current := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.sessionID == sid
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() {
			b.mu.Lock()
			if b.sseSession == sid {
				b.sseSession = ""
			}
			b.mu.Unlock()
		}()
		lastID := ""
		for ctx.Err() == nil && current() {
			req, err := b.request(ctx, http.MethodGet, nil)
			if err != nil {
				return
			}
			req.Header.Set("Mcp-Session-Id", sid)
			if lastID != "" {
				req.Header.Set("Last-Event-ID", lastID)
			}
			resp, err := b.client.Do(req)
			if err == nil {
				switch {
				case resp.StatusCode == http.StatusOK:
				case resp.StatusCode == http.StatusConflict:
					// The previous stream is not released yet: retry below.
					resp.Body.Close()
					resp = nil
				case resp.StatusCode == http.StatusBadRequest && lastID != "":
					// The server no longer keeps the events after lastID:
					// start again from those it keeps, and have the client
					// list tools again, since a list_changed may be lost.
					resp.Body.Close()
					lastID = ""
					b.emit([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
					continue
				default:
					resp.Body.Close()
					return // no stream offered (or session gone): nothing to retry
				}
			}
			if err == nil && resp != nil {
				b.copySSE(resp.Body, &lastID, b.emit)
				resp.Body.Close()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// endSession sends DELETE so the server frees the MCP session.
func (b *bridge) endSession() {
	b.mu.Lock()
	sid := b.sessionID
	b.mu.Unlock()
	if sid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := b.request(ctx, http.MethodDelete, nil)
	if err != nil {
		return
	}
	if resp, err := b.client.Do(req); err == nil {
		resp.Body.Close()
	}
}
