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
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/test/bobbytest"
)

var bobbyBin string

func TestMain(m *testing.M) { os.Exit(bobbytest.Main(m, "bobbye2e-bin-", &bobbyBin)) }

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

// serve starts `bobby serve` with a config declaring one principal whose
// credential expires at expires, and returns its MCP URL once /healthz
// answers. The process gets SIGTERM at cleanup.
func serve(t *testing.T, token string, expires time.Time) string {
	t.Helper()
	return bobbytest.Serve(t, bobbyBin, func(addr, dir string) string {
		return serveTOML(addr, dir, "tsclient", token, expires)
	}).MCPURL
}

// serveTOML is a config listening on addr with one principal.
func serveTOML(addr, dir, name, token string, expires time.Time) string {
	return bobbytest.Config(addr, dir, bobbytest.Principal{
		Name: name, Token: token, Capabilities: []string{"browser:mutate", "page:read"}, Expires: expires,
	})
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
