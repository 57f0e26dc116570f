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
)

// Bridge connects a stdio MCP client to a running `bobby serve`: each
// stdin frame is POSTed to endpoint with the bearer token, responses (JSON
// or SSE) and the GET /v1/mcp notification stream are written to out. It is
// what `bobby stdio` does when AUTOMATION_RUNTIME_BOOTSTRAP_URL is set, so
// several stdio clients can share one browser runtime.
func Bridge(ctx context.Context, endpoint, token string, in io.Reader, out io.Writer, log *slog.Logger) error {
	b := &bridge{endpoint: endpoint, token: token, out: &lockedWriter{w: out}, log: log, client: &http.Client{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(filterFrames(in, pw, b.out, MaxStdioFrameBytes, log)) }()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), MaxStdioFrameBytes+2)
	var wg sync.WaitGroup
	for sc.Scan() {
		frame := append([]byte(nil), sc.Bytes()...)
		var head struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(frame, &head)
		if head.Method == "initialize" || head.Method == "notifications/initialized" {
			b.post(ctx, frame, head.Method) // ordered: later frames need the session
			if head.Method == "notifications/initialized" {
				b.startSSE(ctx, &wg)
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
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("bridge stdin: %w", err)
	}
	return nil
}

type bridge struct {
	endpoint, token string
	out             io.Writer
	log             *slog.Logger
	client          *http.Client

	mu         sync.Mutex
	sessionID  string
	protocol   string
	sseStarted bool
}

func (b *bridge) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
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
	id := frameID(frame)
	fail := func(msg string) {
		if id != nil {
			_ = writeRPCError(b.out, id, -32603, "bridge: "+msg, CodeInternal)
		}
		b.log.Warn("bridge post failed", "method", method, "err", msg)
	}
	req, err := b.request(ctx, http.MethodPost, frame)
	if err != nil {
		fail(err.Error())
		return
	}
	resp, err := b.client.Do(req)
	if err != nil {
		fail(err.Error())
		return
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		b.mu.Lock()
		b.sessionID = sid
		b.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		b.copySSE(resp.Body, nil)
	case resp.StatusCode >= 300:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Valid(bytes.TrimSpace(body)) && bytes.Contains(body, []byte(`"jsonrpc"`)) {
			b.emit(bytes.TrimSpace(body))
			return
		}
		fail(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body))))
	default:
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			fail(err.Error())
			return
		}
		b.emit(bytes.TrimSpace(body))
	}
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

// copySSE forwards the data of every SSE event; lastID tracks event ids.
func (b *bridge) copySSE(r io.Reader, lastID *string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				b.emit(bytes.TrimSpace(data))
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
		b.emit(bytes.TrimSpace(data))
	}
}

// startSSE opens the GET notification stream once, reconnecting until ctx ends.
func (b *bridge) startSSE(ctx context.Context, wg *sync.WaitGroup) {
	b.mu.Lock()
	if b.sseStarted || b.sessionID == "" {
		b.mu.Unlock()
		return
	}
	b.sseStarted = true
	b.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		lastID := ""
		for ctx.Err() == nil {
			req, err := b.request(ctx, http.MethodGet, nil)
			if err != nil {
				return
			}
			if lastID != "" {
				req.Header.Set("Last-Event-ID", lastID)
			}
			resp, err := b.client.Do(req)
			if err == nil {
				if resp.StatusCode != http.StatusOK {
					resp.Body.Close()
					return // no stream offered (or session gone): nothing to retry
				}
				b.copySSE(resp.Body, &lastID)
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
