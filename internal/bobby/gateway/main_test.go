package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/gatewaytest"
	"github.com/deltaharness/delta/internal/bobby/pagetest"
	"github.com/deltaharness/delta/internal/bobby/policy"
)

// One Chromium and one fixture server serve the whole test binary; each
// test builds its own Gateway over the shared runtime (a Gateway closes only
// the browser sessions it created).
var (
	sharedRT *browser.Runtime
	fixtures *httptest.Server
	bobbyBin string // the built cmd/bobby, for the stdio tests
	stateDir string // the gateways' [browser] data_dir (checkpoints)
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

// flagRun is the -test.run pattern ("" when all tests run).
func flagRun() string {
	if f := flag.Lookup("test.run"); f != nil {
		return f.Value.String()
	}
	return ""
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gateway-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	stateDir = filepath.Join(dir, "state")
	stop := make(chan struct{})
	fixtures = httptest.NewServer(fixtureHandler(stop))
	defer func() { close(stop); fixtures.Close() }()

	bobbyBin = filepath.Join(dir, "bobby")
	build := exec.Command("go", "build", "-o", bobbyBin, "github.com/deltaharness/delta/cmd/bobby")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cmd/bobby:", err)
		return 1
	}

	sharedRT = browser.New(browser.Options{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	if err := sharedRT.Open(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "the gateway tests need Chromium (apt-get install -y chromium):", err)
		return 1
	}
	code := m.Run()
	// TestOutputParity, in effect: every result the tests produced matches
	// the output schemas its tool advertises. Only a full run has them all.
	if code == 0 && !testing.Short() && flagRun() == "" {
		n, failures := checkOutputParity()
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "output schema parity: %d results validated\n", n)
		}
		if len(failures) > 0 {
			fmt.Fprintln(os.Stderr, "output schema parity failed:")
			for _, f := range failures {
				fmt.Fprintln(os.Stderr, " ", f)
			}
			code = 1
		}
	}
	if err := closeSharedFirefox(); err != nil {
		fmt.Fprintln(os.Stderr, "close shared firefox:", err)
		code = 1
	}
	if err := sharedRT.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "close shared runtime:", err)
		code = 1
	}
	return code
}

func fixtureHandler(stop <-chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(pagetest.Dir("testdata")))
	mux.HandleFunc("/slow", pagetest.Slow(stop))
	mux.HandleFunc("/slowpage", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Slow</title><p id="s">loading</p><script>
			fetch('/slow?ms=700').then(r => r.text()).then(t => document.getElementById('s').textContent = t);
		</script>`)
	})
	mux.Handle("/b/", http.StripPrefix("/b", http.FileServer(http.Dir("../browser/testdata"))))
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		bytesHits.Add(1)
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		n = min(n, 1<<20)
		for i := 0; i < n; i += 1024 {
			w.Write(bytes.Repeat([]byte("b"), min(1024, n-i)))
		}
	})
	mux.HandleFunc("/attachment", func(w http.ResponseWriter, r *http.Request) {
		// A response the browser saves rather than shows.
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Disposition", `attachment; filename="hello.txt"`)
		fmt.Fprint(w, "hello world")
	})
	mux.HandleFunc("/fail500", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal error", http.StatusInternalServerError)
	})
	mux.HandleFunc("/order500", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Order</title><main>
			<form action="/fail500" method="post"><label>Item <input name="item"></label><button type="submit">Send order</button></form>
			<a href="#" style="padding:4px;background:#36c;color:#fff">Send message</a></main>`)
	})
	return mux
}

var allCaps = func() []string {
	var out []string
	for _, c := range policy.All {
		out = append(out, string(c))
	}
	return out
}()

// testConfig has four principals: alice and bob with every capability,
// reader with page:read only, and old whose credential expired.
func testConfig() config.Config {
	cfg := config.Default()
	cfg.Browser.DataDir = stateDir
	cfg.Profiles["mobile"] = config.Profile{}
	cfg.Principals = []config.Principal{
		{Name: "alice", TokenSHA256: policy.HashTokenHex("alice-token"), Capabilities: allCaps},
		{Name: "bob", TokenSHA256: policy.HashTokenHex("bob-token"), Capabilities: allCaps},
		{Name: "reader", TokenSHA256: policy.HashTokenHex("reader-token"), Capabilities: []string{"page:read"}},
		{Name: "old", TokenSHA256: policy.HashTokenHex("old-token"), Capabilities: allCaps, ExpiresAt: time.Now().Add(-time.Hour)},
	}
	return cfg
}

func newGateway(t *testing.T, cfg config.Config) *Gateway {
	t.Helper()
	g, err := New(Options{Config: cfg, Runtime: sharedRT, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := g.Open(context.Background()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := g.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return g
}

// httpGateway serves a fresh Gateway on a loopback listener.
func httpGateway(t *testing.T) (*Gateway, string) {
	t.Helper()
	return httpGatewayWith(t, nil)
}

// aliceClient is alice's MCP client session on a fresh HTTP gateway.
func aliceClient(t *testing.T) *mcp.ClientSession {
	t.Helper()
	_, base := httpGateway(t)
	return connectHTTP(t, base, "alice-token", nil)
}

// httpGatewayWith is httpGateway with a modified testConfig.
func httpGatewayWith(t *testing.T, mod func(*config.Config)) (*Gateway, string) {
	t.Helper()
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	g := newGateway(t, cfg)
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	return g, srv.URL
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connectHTTP opens an MCP client session as the token's principal.
// listChanged, when non-nil, receives one value per tools/list_changed.
func connectHTTP(t *testing.T, base, token string, listChanged chan<- struct{}) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if listChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case listChanged <- struct{}{}:
			default:
			}
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, opts)
	// These tests are about MCP sessions (phases, list_changed, revocation),
	// which 2026-07-28 does not have: they pin 2025-11-25 (protocol_test.go
	// covers 2026-07-28).
	cs, err := client.Connect(testCtx(t), &mcp.StreamableClientTransport{
		Endpoint: base + MCPPath, HTTPClient: &http.Client{Transport: bearer{token}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersions[0]})
	if err != nil {
		t.Fatalf("connect as %s: %v", token, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and decodes its structured content.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res, structured(t, name, res)
}

// structured records a tool result's structured content for the schema
// check and decodes it, failing the test unless it is an object.
func structured(t *testing.T, name string, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("%s structured content: %v", name, err)
	}
	recordResult(name, b)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		t.Fatalf("%s: structuredContent is not an object: %s", name, b)
	}
	return m
}

// mustOK calls a tool and fails the test unless the result is completed.
func mustOK(t *testing.T, cs *mcp.ClientSession, name string, args any) map[string]any {
	t.Helper()
	res, m := callTool(t, cs, name, args)
	if res.IsError || m["status"] != StatusCompleted {
		t.Fatalf("%s(%v) failed: %s", name, args, dump(m))
	}
	return m
}

// mustFail calls a tool and checks it fails with the error code.
func mustFail(t *testing.T, cs *mcp.ClientSession, name string, args any, code string) map[string]any {
	t.Helper()
	res, m := callTool(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded, want %s: %s", name, args, code, dump(m))
	}
	if got := errCode(m); got != code {
		t.Fatalf("%s(%v) error code %q, want %q: %s", name, args, got, code, dump(m))
	}
	return m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 2000 {
		b = append(b[:2000], "…"...)
	}
	return string(b)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	res, err := cs.ListTools(testCtx(t), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := map[string]bool{}
	for _, tool := range res.Tools {
		names[tool.Name] = true
	}
	return names
}

func get(m map[string]any, path ...string) any { return gatewaytest.Get(m, path...) }

func asStr(v any) string { return gatewaytest.Str(v) }
