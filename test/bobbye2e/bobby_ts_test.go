// Package bobbye2e drives the real bobby binary with the official MCP
// clients over stdio and over streamable HTTP, against fixture pages served
// from loopback by the test: the TypeScript SDK (`@modelcontextprotocol/sdk`,
// installed into test/peers; the assertions live in
// test/peers/bobby_client.mjs) and the go-sdk (bobby_go_test.go: one table
// of steps over every tool family, each transport with protocol 2025-11-25
// and 2026-07-28). It also restarts `bobby serve` to read a persisted popup
// checkpoint back (checkpoint_test.go) and rotates a token with SIGHUP.
package bobbye2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var bobbyBin string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "bobbye2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bobbyBin = filepath.Join(dir, "bobby")
	build := exec.Command("go", "build", "-o", bobbyBin, "github.com/deltaharness/delta/cmd/bobby")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cmd/bobby:", err)
		return 1
	}
	return m.Run()
}

// peers returns test/peers when its node_modules holds the MCP SDK and node
// is on PATH; otherwise it skips locally and fails in CI.
func peers(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "peers"))
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing = "test/peers/node_modules (run: cd test/peers && npm install --no-audit --no-fund)"
	} else if _, err := exec.LookPath("node"); err != nil {
		missing = "node on PATH"
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s is missing", missing)
		}
		t.Skipf("%s is missing", missing)
	}
	return dir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serve starts `bobby serve` with a config declaring one principal whose
// credential expires at expires, and returns its MCP URL once /healthz
// answers. The process gets SIGTERM at cleanup.
func serve(t *testing.T, token string, expires time.Time) string {
	t.Helper()
	return startServe(t, func(addr, dir string) string {
		return serveTOML(addr, dir, "tsclient", token, expires)
	}).mcpURL
}

// serveTOML is a config listening on addr with one principal.
func serveTOML(addr, dir, name, token string, expires time.Time) string {
	sum := sha256.Sum256([]byte(token))
	return fmt.Sprintf(`[http]
listen = %q

[browser]
data_dir = %q

[[principals]]
name = %q
token_sha256 = %q
capabilities = ["browser:mutate", "page:read"]
expires_at = %s
`, addr, filepath.Join(dir, "data"), name, hex.EncodeToString(sum[:]), expires.UTC().Format(time.RFC3339))
}

// served is a running `bobby serve`.
type served struct {
	mcpURL, addr, dir, cfgPath, logPath string
	proc                                *os.Process
	// stop sends SIGTERM and waits for the exit (at most once; cleanup
	// calls it too), failing the test on an unclean one.
	stop func()
}

// startServe starts `bobby serve` with the config cfgFor writes for its
// listen address and folder, and returns once /healthz answers. The
// process gets SIGTERM at cleanup.
func startServe(t *testing.T, cfgFor func(addr, dir string) string) served {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := cfgFor(addr, dir)
	cfgPath := filepath.Join(dir, "bobby.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bobbyBin, "serve", "--config", cfgPath)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bobby serve: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("bobby serve exited with %v after SIGTERM; log:\n%s", err, readFile(logPath))
				}
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Errorf("bobby serve ignored SIGTERM for 15 s; log:\n%s", readFile(logPath))
			}
		})
	}
	t.Cleanup(stop)
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("bobby serve exited early: %v; log:\n%s", err, readFile(logPath))
		default:
		}
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return served{mcpURL: base + "/v1/mcp", addr: addr, dir: dir, cfgPath: cfgPath, logPath: logPath, proc: cmd.Process, stop: stop}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("bobby serve never became healthy; log:\n%s", readFile(logPath))
	return served{}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestTypeScriptClient runs bobby_client.mjs: the official TS SDK client over
// stdio (spawning the binary with AUTOMATION_RUNTIME_BOOTSTRAP_*) and over
// streamable HTTP (bearer header) — initialize, tools/list with the form-loop
// four in explore, runtime_info, workflow_start + a11y_snapshot on the
// fixture, toolset_select → list_changed, a phase-hidden tool still callable,
// the tool families of families.html (obstruction, popup, emulate, cookies,
// network log, extract, state wait, neighbors, follow), and schemaViolation
// tool errors.
func TestTypeScriptClient(t *testing.T) {
	dir := peers(t)
	fixtures := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	t.Cleanup(fixtures.Close)

	token := "ts-" + rand.Text()
	expires := time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second)
	mcpURL := serve(t, token, expires)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "bobby_client.mjs")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"BOBBY_BIN=" + bobbyBin,
		"BOBBY_STDIO_HOME=" + t.TempDir(),
		"BOBBY_HTTP_URL=" + mcpURL,
		"BOBBY_HTTP_TOKEN=" + token,
		"BOBBY_HTTP_EXPIRES=" + expires.UTC().Format(time.RFC3339),
		"FIXTURE_URL=" + fixtures.URL + "/index.html",
	}
	out, err := cmd.CombinedOutput()
	t.Logf("bobby_client.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("bobby_client.mjs: %v", err)
	}
	for _, want := range []string{"stdio: ok", "http: ok"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
