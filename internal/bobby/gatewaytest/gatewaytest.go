// Package gatewaytest holds what the suites that talk to bobby's gateway
// from outside share: a raw MCP POST over Streamable HTTP, for the requests
// an SDK client would never send (no token, a wrong one, a session that
// ended), and a walk through the nested JSON objects a tool answers with.
// It imports no package of the module, so the gateway's own tests and the
// end-to-end suites can both use it.
package gatewaytest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Answer is what the gateway answered one raw request: its status, its
// headers and its body, read whole (the connection is already released).
type Answer struct {
	Status int
	Header http.Header
	Body   string
}

// Post sends body to url as one raw MCP message (JSON, accepting JSON or an
// event stream), with the headers given as name, value pairs — a pair whose
// value is "" is left out — and returns the answer.
func Post(t testing.TB, ctx context.Context, url, body string, header ...string) Answer {
	t.Helper()
	return Do(t, ctx, http.MethodPost, url, body, header...)
}

// Do is Post with another method; a request without a body has no
// Content-Type.
func Do(t testing.TB, ctx context.Context, method, url, body string, header ...string) Answer {
	t.Helper()
	if len(header)%2 != 0 {
		t.Fatalf("gatewaytest.Do: headers come in name, value pairs: %q", header)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // a cut answer is what the caller's checks of it see
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// Bearer is the Authorization value for token, "" (no header) for none.
func Bearer(token string) string {
	if token == "" {
		return ""
	}
	return "Bearer " + token
}

// Get follows path through m's nested objects and returns what it reaches,
// nil where a step is missing or not an object.
func Get(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// Str is v as a string, "" when it is not one.
func Str(v any) string { s, _ := v.(string); return s }
