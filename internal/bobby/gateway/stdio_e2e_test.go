package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/config"
)

// stdioCmd runs the built bobby binary with a clean environment plus env.
func stdioCmd(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bobbyBin, "stdio")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}, env...)
	return cmd
}

// startStdio starts cmd, a bobby stdio, to be driven with raw frames: the
// frames go to stdin, and its stdout's lines (up to 16 MiB each) come on
// lines, closed when it exits. At cleanup stdin closes and the process is
// ended and waited for.
func startStdio(t *testing.T, cmd *exec.Cmd) (stdin io.WriteCloser, lines <-chan string) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := make(chan string, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	return stdin, out
}

func connectStdio(t *testing.T, cmd *exec.Cmd, listChanged chan<- struct{}) *mcp.ClientSession {
	t.Helper()
	return connectStdioVersion(t, cmd, listChanged, "")
}

// connectStdioVersion is connectStdio offering version ("": the SDK's
// latest).
func connectStdioVersion(t *testing.T, cmd *exec.Cmd, listChanged chan<- struct{}, version string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if listChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { listChanged <- struct{}{} }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, opts)
	cs, err := client.Connect(testCtx(t), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect to bobby stdio: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestStdioBinary: one `bobby stdio` process is one context for life, so
// it speaks 2026-07-28 (server/discover, no initialize; list changes
// through subscriptions/listen) as fully as 2025-11-25 (initialize).
func TestStdioBinary(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) { testStdioBinary(t, version) })
	}
}

func testStdioBinary(t *testing.T, version string) {
	changed := make(chan struct{}, 4)
	cs := connectStdioVersion(t, stdioCmd(t,
		config.EnvBootstrapPrincipal+"=agent",
		config.EnvBootstrapCapabilities+"=browser:mutate,page:read"), changed, version)
	if v := cs.InitializeResult().ProtocolVersion; v != version {
		t.Errorf("negotiated %s, want %s", v, version)
	}
	names := toolNames(t, cs)
	if !names["navigate"] || names["screenshot"] {
		t.Errorf("stdio tools for browser:mutate+page:read: %v", names)
	}
	info := mustOK(t, cs, "runtime_info", nil)
	if info["principal"] != "agent" || get(info, "browser", "version") == nil {
		t.Errorf("runtime_info = %s", dump(info))
	}
	start := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	snap := mustOK(t, cs, "a11y_snapshot", map[string]any{"workflowHandle": start["workflowHandle"], "interesting": true})
	if !strings.Contains(asStr(get(snap, "evidence", "accessibility", "text")), `button "Go"`) {
		t.Errorf("snapshot over stdio = %s", dump(snap))
	}
	mustOK(t, cs, "toolset_select", map[string]any{"phase": "verify"})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed over stdio")
	}
	if n := toolNames(t, cs); !n["inspect"] || n["navigate"] {
		t.Errorf("verify tools: %v", n)
	}
}

// TestStdioFrames drives the binary with raw frames: an oversize frame and a
// garbage line get JSON-RPC errors and the session keeps answering.
func TestStdioFrames(t *testing.T) {
	cmd := stdioCmd(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, lines := startStdio(t, cmd)
	next := func() map[string]any {
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("bobby exited; stderr: %s", stderr.String())
				}
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil {
					return m
				}
			case <-deadline:
				t.Fatal("no answer")
			}
		}
	}
	send := func(s string) {
		if _, err := stdin.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_list","arguments":{"pad":"` + strings.Repeat("x", MaxStdioFrameBytes) + `"}}}`)
	if m := next(); m["id"] != 2.0 || get(m, "error", "code") != -32600.0 || get(m, "error", "data", "reason") != CodeFrameTooLarge {
		t.Fatalf("oversize frame answer: %v", m)
	}
	send(`this is not json`)
	if m := next(); get(m, "error", "code") != -32700.0 {
		t.Fatalf("garbage answer: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"session_list","arguments":{}}}`)
	if m := next(); m["id"] != 3.0 || get(m, "result", "structuredContent", "status") != "completed" {
		t.Fatalf("session still usable? %v", m)
	}
}

// TestBridge runs `bobby stdio` as a bridge to a `bobby serve`-style HTTP
// gateway (AUTOMATION_RUNTIME_BOOTSTRAP_URL), including notifications.
func TestBridge(t *testing.T) {
	_, base := httpGateway(t)
	changed := make(chan struct{}, 4)
	cs := connectStdio(t, stdioCmd(t,
		config.EnvBootstrapURL+"="+base+MCPPath,
		config.EnvBootstrapToken+"=alice-token"), changed)
	// The bridge forwards frames to one MCP session over HTTP, so a client
	// offering 2026-07-28 (the SDK's default) falls back to initialize.
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("through the bridge the client negotiated %s, want 2025-11-25", v)
	}
	if info := mustOK(t, cs, "runtime_info", nil); info["principal"] != "alice" {
		t.Errorf("bridged principal = %v", info["principal"])
	}
	mustOK(t, cs, "toolset_select", map[string]any{"phase": "intent"})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed through the bridge")
	}
	mustFail(t, cs, "session_create", map[string]any{}, CodeSchemaViolation)
	bad := connectStdioErr(t, stdioCmd(t, config.EnvBootstrapURL+"="+base+MCPPath, config.EnvBootstrapToken+"=wrong"))
	if bad == nil {
		t.Error("bridge with a bad token connected")
	}
}

func connectStdioErr(t *testing.T, cmd *exec.Cmd) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err == nil {
		cs.Close()
	}
	return err
}
