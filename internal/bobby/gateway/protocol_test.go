package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/gatewaytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectHTTPVersion opens an MCP client session offering version ("":
// the SDK's latest, 2026-07-28 in go-sdk v1.8.0).
func connectHTTPVersion(t *testing.T, base, token, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "protocol-test", Version: "1"}, &mcp.ClientOptions{
		// With a handler the SDK opens a subscriptions/listen stream.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	cs, err := client.Connect(testCtx(t), &mcp.StreamableClientTransport{
		Endpoint: base + MCPPath, HTTPClient: &http.Client{Transport: bearer{token}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect as %s offering %q: %v", token, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestProtocolVersionsHTTP: a client offering 2025-11-25 gets an MCP
// session through initialize; a client offering 2026-07-28 (the go-sdk
// client's default) gets 2026-07-28 through server/discover, served
// statelessly on its principal's context: handles work across requests
// and clients of that principal, not across principals, and
// toolset_select, which would change another client's listing, is refused
// with the way to per-session phases while hidden tools stay callable.
func TestProtocolVersionsHTTP(t *testing.T) {
	_, base := httpGateway(t)
	if v := connectHTTPVersion(t, base, "alice-token", "2025-11-25").InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("a client offering 2025-11-25 negotiated %s", v)
	}

	alice := connectHTTPVersion(t, base, "alice-token", "")
	init := alice.InitializeResult()
	if init.ProtocolVersion != "2026-07-28" || init.ServerInfo == nil || init.ServerInfo.Name != "bobby" ||
		init.Capabilities == nil || init.Capabilities.Tools == nil || !init.Capabilities.Tools.ListChanged {
		t.Fatalf("the go-sdk client's default = %s", dump(init))
	}
	if n := toolNames(t, alice); !n["workflow_start"] || !n["intent_complete_form"] || n["click"] {
		t.Errorf("2026-07-28 tools/list (start phase) = %v", n)
	}
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	h := start["workflowHandle"]
	snap := mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h})
	if !strings.Contains(asStr(get(snap, "evidence", "accessibility", "text")), `button "Go"`) {
		t.Errorf("a11y_snapshot by handle over 2026-07-28 = %s", dump(snap))
	}
	// Hidden in the listing, still callable.
	mustOK(t, alice, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Go"}})
	m := mustFail(t, alice, "toolset_select", map[string]any{"phase": "act"}, CodeUnsupported)
	if msg := asStr(get(m, "error", "message")); !strings.Contains(msg, "2025-11-25") || !strings.Contains(msg, "callable") {
		t.Errorf("toolset_select over 2026-07-28: %q", msg)
	}
	if info := mustOK(t, alice, "runtime_info", nil); info["principal"] != "alice" || info["phase"] != "explore" {
		t.Errorf("runtime_info over 2026-07-28 = %s", dump(info))
	}
	// Another 2026-07-28 client of alice shares the context; bob's does not.
	alice2 := connectHTTPVersion(t, base, "alice-token", "")
	mustOK(t, alice2, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "text",
		"selector": "#msg", "matcher": map[string]any{"kind": "exact", "value": "clicked plain"}}})
	bob := connectHTTPVersion(t, base, "bob-token", "")
	mustFail(t, bob, "a11y_snapshot", map[string]any{"workflowHandle": h}, CodeUnknownWorkflowHandle)
	mustFail(t, bob, "a11y_snapshot", map[string]any{"sessionId": start["sessionId"], "pageId": start["pageId"]}, CodeNotFound)
	// A 2025-11-25 session of alice's is its own context.
	legacy := connectHTTP(t, base, "alice-token", nil)
	mustFail(t, legacy, "a11y_snapshot", map[string]any{"workflowHandle": h}, CodeUnknownWorkflowHandle)
	mustOK(t, legacy, "a11y_snapshot", map[string]any{"sessionId": start["sessionId"], "pageId": start["pageId"]})

	do := func(method, body string, header ...string) (int, []byte) {
		t.Helper()
		a := gatewaytest.Do(t, testCtx(t), method, base+MCPPath, body, append([]string{"Authorization", "Bearer alice-token"}, header...)...)
		return a.Status, []byte(a.Body)
	}
	// initialize is the 2025-11-25 handshake: asked for 2026-07-28, it
	// offers the newest version it negotiates.
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	if status, body := do(http.MethodPost, initialize); status != http.StatusOK || !strings.Contains(string(body), `"protocolVersion":"2025-11-25"`) {
		t.Errorf("initialize asking 2026-07-28 = %d %s, want 2025-11-25 offered", status, body)
	}
	// server/discover under 2026-07-28 offers it first, then the
	// initialize-based versions.
	discover := `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}`
	status, body := do(http.MethodPost, discover, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover")
	var disc struct {
		Result struct{ SupportedVersions []string }
	}
	if err := json.Unmarshal(sseData(body), &disc); status != http.StatusOK || err != nil || len(disc.Result.SupportedVersions) < 2 ||
		disc.Result.SupportedVersions[0] != "2026-07-28" || disc.Result.SupportedVersions[1] != "2025-11-25" {
		t.Errorf("server/discover under 2026-07-28 = %d %s", status, body)
	}
	// A 2026-07-28 request lacking the per-request _meta is a clear 400.
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"session_list","arguments":{}}}`
	if status, body := do(http.MethodPost, call, "MCP-Protocol-Version", "2026-07-28"); status != http.StatusBadRequest ||
		!strings.Contains(string(body), "protocolVersion") {
		t.Errorf("2026-07-28 tools/call without _meta = %d %s", status, body)
	}
	// There is no GET stream without a session.
	if status, _ := do(http.MethodGet, "", "MCP-Protocol-Version", "2026-07-28"); status != http.StatusMethodNotAllowed {
		t.Errorf("GET under 2026-07-28 = %d, want 405", status)
	}
	// Without a token, 401 as for every version.
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, base+MCPPath, strings.NewReader(discover))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("2026-07-28 without a bearer: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
}

// sseData returns the data of the first SSE event in body, or body itself
// when it is plain JSON.
func sseData(body []byte) []byte {
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return []byte(d)
		}
	}
	return body
}

// A 2026-07-28 client holds a subscriptions/listen stream on a throwaway
// session that no initialize tracked: Serve's shutdown closes it with the
// MCP sessions, so nothing is left for the deadline to cut.
func TestServeShutdownEndsSessionlessStreams(t *testing.T) {
	var logs syncBuffer
	g, err := New(Options{Config: testConfig(), Runtime: sharedRT, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, l) }()
	cs := connectHTTPVersion(t, "http://"+l.Addr().String(), "alice-token", "")
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28 (the stream under test is its listen stream)", v)
	}
	if _, err := cs.ListTools(testCtx(t), nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after shutdown: %v", err)
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("Serve did not return within a minute of its context ending")
	}
	if strings.Contains(logs.String(), "still open after the deadline") {
		t.Fatalf("the shutdown had to cut connections at its deadline:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
