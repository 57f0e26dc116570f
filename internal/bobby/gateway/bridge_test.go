package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/config"
)

// serveProc is a real `bobby serve` process on a loopback port.
type serveProc struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func startServe(t *testing.T, addr string) *serveProc {
	t.Helper()
	cmd := exec.Command(bobbyBin, "serve", "--listen", addr)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(),
		config.EnvBootstrapToken + "=serve-token", config.EnvBootstrapPrincipal + "=agent"}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serveProc{t: t, addr: addr, cmd: cmd}
	t.Cleanup(s.stop)
	waitUntil(t, 30*time.Second, "bobby serve answers /healthz", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// stop ends the process (SIGTERM, as a service manager would) and waits.
func (s *serveProc) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// TestBridgeSurvivesServeRestart: after `bobby serve` restarts, the bridge
// re-initializes once; the call that met the lost session says that earlier
// handles are gone, and the calls after it work.
func TestBridgeSurvivesServeRestart(t *testing.T) {
	addr := freeAddr(t)
	first := startServe(t, addr)
	changed := make(chan struct{}, 8)
	cs := connectStdio(t, stdioCmd(t,
		config.EnvBootstrapURL+"=http://"+addr+MCPPath,
		config.EnvBootstrapToken+"=serve-token"), changed)
	if info := mustOK(t, cs, "runtime_info", nil); info["principal"] != "agent" {
		t.Fatalf("runtime_info = %s", dump(info))
	}

	first.stop()
	startServe(t, addr)

	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "session_list", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("the first call after the restart is a JSON-RPC error, want a result saying what happened: %v", err)
	}
	if text := resultTextOf(t, "session_list", res); !res.IsError || !strings.Contains(text, "gone") {
		t.Errorf("first call after the restart = %s", text)
	}
	for range 2 {
		mustOK(t, cs, "session_list", nil)
	}
	if n := toolNames(t, cs); !n["workflow_start"] {
		t.Errorf("tools/list after the restart = %v", n)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Error("the client was not told to list tools again")
	}
}

// TestBridgeExitsWhenReinitializeFails: a server that lost the session and
// refuses a new one makes the bridge exit non-zero, so the host restarts it.
func TestBridgeExitsWhenReinitializeFails(t *testing.T) {
	var inits atomic.Int32
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch {
		case req.Method == "initialize" && inits.Add(1) == 1:
			w.Header().Set("Mcp-Session-Id", "s1")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}}`, req.ID)
		case req.Method == "initialize":
			http.Error(w, "no more sessions", http.StatusServiceUnavailable)
		case req.Method == "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		default:
			http.Error(w, "session not found", http.StatusNotFound)
		}
	}))
	t.Cleanup(fake.Close)

	cmd := stdioCmd(t, config.EnvBootstrapURL+"="+fake.URL+MCPPath, config.EnvBootstrapToken+"=x")
	stdin, lines := startStdio(t, cmd)
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_list","arguments":{}}}`+"\n")
	var answer2 string
	deadline := time.After(30 * time.Second)
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break read // the bridge exited
			}
			if strings.Contains(line, `"id":2`) {
				answer2 = line
			}
		case <-deadline:
			t.Fatalf("the bridge did not exit; answer to the call = %q", answer2)
		}
	}
	if !strings.Contains(answer2, "re-initializing failed") {
		t.Errorf("answer to the call = %q", answer2)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("bridge exit = %v, want non-zero", err)
	}
}

// TestBridgeBootstrapPrincipal: the bridge forwards the bootstrap principal
// and capabilities; capabilities narrow, never widen.
func TestBridgeBootstrapPrincipal(t *testing.T) {
	_, base := httpGateway(t)
	url := config.EnvBootstrapURL + "=" + base + MCPPath
	caps := config.EnvBootstrapCapabilities

	narrowed := connectStdio(t, stdioCmd(t, url, config.EnvBootstrapToken+"=alice-token", caps+"=page:read"), nil)
	if info := mustOK(t, narrowed, "runtime_info", nil); dump(info["grantedCapabilities"]) != `["page:read"]` {
		t.Errorf("narrowed capabilities = %s", dump(info["grantedCapabilities"]))
	}
	if n := toolNames(t, narrowed); n["navigate"] || n["workflow_start"] {
		t.Errorf("a page:read bridge lists mutating tools: %v", n)
	}
	mustFail(t, narrowed, "session_create", map[string]any{"profile": "default", "executionPolicy": map[string]any{"fingerprint": true}}, CodeCapabilityDenied)

	notWidened := connectStdio(t, stdioCmd(t, url, config.EnvBootstrapToken+"=reader-token", caps+"=browser:mutate,page:read"), nil)
	if info := mustOK(t, notWidened, "runtime_info", nil); dump(info["grantedCapabilities"]) != `["page:read"]` {
		t.Errorf("capabilities widened to %s", dump(info["grantedCapabilities"]))
	}

	named := connectStdio(t, stdioCmd(t, url, config.EnvBootstrapToken+"=alice-token", config.EnvBootstrapPrincipal+"=alice"), nil)
	mustOK(t, named, "runtime_info", nil)
	if err := connectStdioErr(t, stdioCmd(t, url, config.EnvBootstrapToken+"=alice-token", config.EnvBootstrapPrincipal+"=bob")); err == nil {
		t.Error("a bridge named bob connected with alice's token")
	}
	if err := connectStdioErr(t, stdioCmd(t, url, config.EnvBootstrapToken+"=alice-token", caps+"=root")); err == nil {
		t.Error("a bridge with an unknown capability connected")
	}
}
