package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemonClient talks to a Delta daemon on this machine. The control token
// goes on /v1/* requests, the inspect token on /v1/dev/* (two distinct gates).
type daemonClient struct {
	base    string // "http://127.0.0.1:8080", no trailing slash
	control string
	inspect string
	http    *http.Client
	poll    time.Duration // how often a follower re-checks task status
}

// maxAnswerBytes bounds a JSON answer read into memory.
const maxAnswerBytes = 64 << 20

func newDaemonClient(host string, port int, control, inspect string) *daemonClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // loopback only: never route through a configured proxy
	return &daemonClient{
		base:    "http://" + net.JoinHostPort(host, strconv.Itoa(port)),
		control: control,
		inspect: inspect,
		http:    &http.Client{Transport: t},
		poll:    time.Second,
	}
}

// errNoDaemon is a connection refused: nothing listens at the address.
var errNoDaemon = errors.New("no Delta daemon answers")

// apiError is a non-2xx answer, with the server's own message when it sent
// the {"error":{"message":…}} envelope.
type apiError struct {
	Method  string
	Path    string
	Status  int
	Message string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
		s += " (" + tokenHint(e.Path) + ")"
	}
	return s
}

func tokenHint(path string) string {
	if strings.HasPrefix(path, "/v1/dev/") {
		return "set DELTA_INSPECT_TOKEN in this shell to the daemon's inspection token"
	}
	return "set DELTA_CONTROL_TOKEN in this shell to the daemon's control token"
}

func (c *daemonClient) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	tok := c.control
	if strings.HasPrefix(path, "/v1/dev/") {
		tok = c.inspect
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return req, nil
}

func (c *daemonClient) send(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w at %s (is it running? `delta dev` prints its port; pass it with --port)", errNoDaemon, c.base)
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, readAPIError(req.Method, req.URL.Path, resp)
	}
	return resp, nil
}

func readAPIError(method, path string, resp *http.Response) error {
	e := &apiError{Method: method, Path: path, Status: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && env.Error.Message != "" {
		e.Message = env.Error.Message
	} else if t := strings.TrimSpace(string(b)); t != "" && len(t) <= 300 && !strings.ContainsAny(t, "<{") {
		e.Message = t // a short plain-text reason (e.g. from a proxy) still helps
	}
	return e
}

// call sends a JSON request and decodes a JSON answer into out (if non-nil).
func (c *daemonClient) call(ctx context.Context, method, path string, body, out any) error {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if len(b) > maxAnswerBytes {
		return fmt.Errorf("%s %s: answer larger than %d bytes", method, path, maxAnswerBytes)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// stream opens an SSE endpoint and hands each frame to fn until fn says
// stop, the stream ends (io.EOF), ctx is done, or reading fails.
func (c *daemonClient) stream(ctx context.Context, path string, fn func(frame) (stop bool, err error)) error {
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "text/event-stream") {
		return fmt.Errorf("GET %s: expected an event stream, got %s", pathOnly(path), ct)
	}
	r := newSSEReader(resp.Body)
	for {
		f, err := r.Next()
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			return err
		}
		stop, err := fn(f)
		if err != nil || stop {
			return err
		}
	}
}

func pathOnly(p string) string {
	if u, err := url.Parse(p); err == nil {
		return u.Path
	}
	return p
}

// checkLoopback accepts "localhost" and loopback IP literals only: send and
// watch are local clients and must never carry tokens to another machine.
func checkLoopback(host string) error {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--host %q is not a loopback address: delta connects to this machine only (use 127.0.0.1, ::1 or localhost)", host)
}

// compactJSON renders a frame's data as one line: compacted when it is
// JSON, else with its line breaks escaped so JSON Lines stay one per line.
func compactJSON(data string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(data)) == nil {
		return b.String()
	}
	q, _ := json.Marshal(data)
	return string(q)
}
