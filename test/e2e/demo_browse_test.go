package e2e

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/test/daemontest"
)

// TestDemoBrowse runs `delta demo --browse` as a user would, as a real
// child process with bobby built next to delta and no model credential:
// the scripted browsing agent drives bobby over stdio MCP through the
// demo's own shop, and the run leaves report.md (with the live page's price,
// SKU and the shop's ticket) and the screenshot PNG in the bundle, with the
// question submission verified by bobby.
func TestDemoBrowse(t *testing.T) {
	needBobby(t) // builds bobby next to deltaBin, where the demo looks first
	dir := filepath.Join(t.TempDir(), "demo")
	env := daemontest.HostEnv("BOBBY_CONFIG")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, deltaBin, "demo", "--browse", "--dir", dir)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("delta demo --browse: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := strings.Join(strings.Fields(stdout.String()), " ")
	for _, want := range []string{
		"model scripted browsing agent (no MODEL_API_KEY/OPENROUTER_API_KEY set)",
		"bobby " + filepath.Join(filepath.Dir(deltaBin), "bobby") + " (delta's stdio MCP server",
		"tool.call bobby__workflow_start",
		"tool.result bobby__intent_submit_and_verify ok",
		"tool.result bobby__screenshot ok",
		"tool.call write_file report.md",
		"run.finished done",
		"received the question about Trail Kayak Paddle from demo@example.com",
		"bobby verified 2 form submissions",
		"Demo passed",
	} {
		if !strings.Contains(out, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout.String())
		}
	}

	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatalf("report.md: %v\nstdout:\n%s", err, stdout.String())
	}
	// The ticket the shop made up, as the demo printed it, is in the report.
	ticket := regexp.MustCompile(`ticket (Q-[0-9a-f]{8})`).FindStringSubmatch(stdout.String())
	if ticket == nil {
		t.Fatalf("the demo printed no shop ticket:\n%s", stdout.String())
	}
	for _, want := range []string{"# Trail Kayak Paddle", "Shop ticket: " + ticket[1], "Submission: verified by button \"Send question\""} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}
	if !regexp.MustCompile(`- Price: \$\d+\.\d\d\n- SKU: TKP-\d{6}\n`).Match(report) {
		t.Errorf("report.md lacks the live page's price and SKU:\n%s", report)
	}

	// The screenshot the report names is a PNG in the workspace.
	shot := regexp.MustCompile(`Screenshot: (\S+\.png)`).FindSubmatch(report)
	if shot == nil {
		t.Fatalf("report.md names no screenshot:\n%s", report)
	}
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(string(shot[1]))))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width == 0 || cfg.Height == 0 {
		t.Errorf("screenshot %s: %v (%dx%d)", shot[1], err, cfg.Width, cfg.Height)
	}
}
