package gateway

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/config"
)

// TestKeepAliveOnGETStream: a quiet GET /v1/mcp stream carries ": ping"
// comments, and a client whose notification stream carries them still
// gets its list_changed and answers.
func TestKeepAliveOnGETStream(t *testing.T) {
	_, base := httpGatewayWith(t, func(c *config.Config) { c.HTTP.KeepAlive = 20 * time.Millisecond })

	// Through the SDK client, whose GET stream now carries comments.
	changed := make(chan struct{}, 1)
	alice := connectHTTP(t, base, "alice-token", changed)
	time.Sleep(100 * time.Millisecond) // several pings reach the client's GET stream
	mustOK(t, alice, "toolset_select", map[string]any{"phase": "act"})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed on a stream carrying keep-alive comments")
	}
	if !toolNames(t, alice)["click"] {
		t.Fatal("tools/list after the phase change lacks click")
	}

	// On the wire: open a GET stream and read until a ping.
	lines := openGET(t, base)
	got := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if lines.Text() == ": ping" {
				got <- lines.Text()
				return
			}
		}
		close(got)
	}()
	select {
	case _, ok := <-got:
		if !ok {
			t.Fatal("the GET stream ended without a keep-alive comment")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no keep-alive comment on a quiet GET stream")
	}
}

// openGET initializes an MCP session as alice over raw HTTP and opens its
// GET stream; the stream closes at cleanup.
func openGET(t *testing.T, base string) *bufio.Scanner {
	t.Helper()
	do := func(method, body, sid string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(testCtx(t), method, base+MCPPath, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer alice-token")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, "")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	resp = do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	get := do(http.MethodGet, "", sid)
	t.Cleanup(func() { get.Body.Close() })
	if get.StatusCode != http.StatusOK || !strings.HasPrefix(get.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET stream: %d %s", get.StatusCode, get.Header.Get("Content-Type"))
	}
	return bufio.NewScanner(get.Body)
}
