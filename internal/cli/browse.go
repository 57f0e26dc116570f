package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/model/scripted"
)

// The browse demo's request fields. The product is named by the task, and
// found through the shop's own search form.
const (
	browseProduct  = "Trail Kayak Paddle"
	browseEmail    = "demo@example.com"
	browseQuestion = "Does this paddle float if I drop it in the lake?"
)

// bobby's stdio bootstrap variables (bobby's own config package defines
// them; delta links none of bobby's packages).
const (
	bobbyEnvConfig       = "BOBBY_CONFIG"
	bobbyEnvPrincipal    = "AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL"
	bobbyEnvCapabilities = "AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES"
)

// browseChromium is the browser the demo's bobby config names (bobby's
// default, the Debian chromium package).
const browseChromium = "/usr/bin/chromium"

// checkChromium fails early, with the fix, when the demo's browser is
// missing; bobby would otherwise start and fail on the agent's first call.
func checkChromium() error {
	if _, err := os.Stat(browseChromium); err != nil {
		return fmt.Errorf("delta demo --browse needs Chromium at %s for bobby (apt-get install -y chromium): %w", browseChromium, err)
	}
	return nil
}

// errNoBobby says where `delta demo --browse` looked for bobby and how to
// put it there; nothing is built at run time.
type errNoBobby struct{ next string }

func (e errNoBobby) Error() string {
	return "delta demo --browse needs the bobby binary (the browser MCP server), and it is neither next to delta (" + e.next +
		") nor on PATH: build both with `go build -o bin/ ./cmd/delta ./cmd/bobby` and run `bin/delta demo --browse`, " +
		"or `go install ./cmd/delta ./cmd/bobby` with $(go env GOPATH)/bin on PATH"
}

// findBobby returns the bobby binary beside the running delta executable
// (resolved through symlinks), else the one on PATH.
func findBobby(self string, lookPath func(string) (string, error)) (string, error) {
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	next := filepath.Join(filepath.Dir(self), "bobby")
	if st, err := os.Stat(next); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return next, nil
	}
	if p, err := lookPath("bobby"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
		return p, nil
	}
	return "", errNoBobby{next: next}
}

// browseServers is DELTA_MCP_SERVERS for one bobby stdio child with its
// config and browser profile under stateDir and the capabilities the demo
// needs (navigate and act, read pages, capture and read screenshots).
func browseServers(bobby, stateDir string) (string, error) {
	dir := filepath.Join(stateDir, "bobby")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	cfgPath := filepath.Join(dir, "bobby.toml")
	cfg := fmt.Sprintf("# written by `delta demo --browse`\n[browser]\npath = %q\ndata_dir = %q\n", browseChromium, filepath.Join(dir, "profile"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", cfgPath, err)
	}
	b, err := json.Marshal([]map[string]any{{
		"name":    "bobby",
		"command": []string{bobby, "stdio"},
		"env": map[string]string{
			bobbyEnvConfig:       cfgPath,
			bobbyEnvPrincipal:    "delta-demo",
			bobbyEnvCapabilities: "browser:mutate,page:read,artifact:capture,artifact:read",
		},
	}})
	if err != nil {
		return "", fmt.Errorf("encode DELTA_MCP_SERVERS: %w", err)
	}
	return string(b), nil
}

// waitBobby waits until /v1/status shows the bobby MCP server connected
// and returns how many tools it registered.
func waitBobby(ctx context.Context, cl *daemonClient) (int, error) {
	deadline := time.Now().Add(healthTimeout)
	last := "not listed"
	for {
		var st struct {
			MCP []struct {
				Name      string `json:"name"`
				Connected bool   `json:"connected"`
				Tools     int    `json:"tools"`
				Error     string `json:"error"`
			} `json:"mcp_servers"`
		}
		if err := cl.call(ctx, "GET", "/v1/status", nil, &st); err != nil {
			return 0, fmt.Errorf("read /v1/status: %w", err)
		}
		for _, s := range st.MCP {
			if s.Name != "bobby" {
				continue
			}
			if s.Connected && s.Tools > 0 {
				return s.Tools, nil
			}
			last = "not connected"
			if s.Error != "" {
				last += ": " + s.Error
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("bobby did not connect as delta's MCP server within %s (%s); the daemon log has bobby's output, and `bobby doctor` checks its setup", healthTimeout, last)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runBrowse is steps 4-6 of `delta demo --browse`: the browsing task and
// its events, then the checks a user would make — the shop received the
// question, bobby verified the submission, the report holds the shop's
// ticket, the screenshot is in the workspace.
func (d *demo) runBrowse(ctx context.Context, cl *daemonClient, workspace string) error {
	task := scripted.BrowseTask(d.shop.url, browseProduct, browseEmail, browseQuestion)
	calls := map[string]string{} // call id → tool name
	verified := 0
	if _, err := d.runTask(ctx, cl, task, func(ev streamEvent) {
		var p struct {
			CallID  string `json:"call_id"`
			Name    string `json:"name"`
			IsError bool   `json:"is_error"`
		}
		_ = json.Unmarshal(ev.Payload, &p) // events without these fields leave them empty
		switch ev.Name {
		case "tool.call":
			calls[p.CallID] = p.Name
		case "tool.result":
			if name := firstNonEmpty(p.Name, calls[p.CallID]); name == "bobby__intent_submit_and_verify" && !p.IsError {
				verified++
			}
		}
	}); err != nil {
		return err
	}

	// What the shop itself saw.
	var ours *shopQuestion
	for _, q := range d.shop.questions() {
		if q.Question == browseQuestion && q.Email == browseEmail {
			ours = &q
		}
	}
	if ours == nil {
		return fmt.Errorf("the shop never received the question (it got %d submissions)", len(d.shop.questions()))
	}
	d.say("\nShop")
	d.say("  received the question about %s from %s: ticket %s", ours.Product, ours.Email, ours.Ticket)
	if verified == 0 {
		return errors.New("no intent_submit_and_verify call succeeded: the submission was not verified by bobby")
	}
	d.say("  bobby verified %s (intent_submit_and_verify)", plural(verified, "form submission"))

	report, err := readArtifact(workspace, scripted.BrowseReport)
	if err != nil {
		return err
	}
	if !strings.Contains(string(report), ours.Ticket) {
		return fmt.Errorf("%s does not hold the shop's ticket %s", scripted.BrowseReport, ours.Ticket)
	}
	d.say("\nArtifact %s (%d bytes, %s)", scripted.BrowseReport, len(report), filepath.Join(workspace, scripted.BrowseReport))
	for _, line := range strings.Split(strings.TrimRight(string(report), "\n"), "\n") {
		d.say("  │ %s", line)
	}
	shots := screenshots(workspace)
	if len(shots) == 0 {
		return errors.New("no screenshot was saved in the workspace")
	}
	for _, s := range shots {
		d.say("Screenshot %s", s)
	}

	d.stopped = true
	if err := d.child.stop(stopGrace); err != nil {
		return fmt.Errorf("stop the daemon: %w", err)
	}
	d.say("\nDaemon and bobby stopped cleanly.")
	d.say("Demo passed: the agent found %s, the question was submitted and verified (ticket %s), and %s and the screenshot are in the workspace.",
		ours.Product, ours.Ticket, scripted.BrowseReport)
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// screenshots lists the bobby screenshots delta saved under the
// workspace's .delta/media, as paths relative to the workspace.
func screenshots(workspace string) []string {
	var out []string
	root := filepath.Join(workspace, ".delta", "media")
	_ = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasPrefix(e.Name(), "bobby__") && strings.HasSuffix(e.Name(), ".png") {
			if rel, err := filepath.Rel(workspace, path); err == nil {
				out = append(out, rel)
			}
		}
		return nil
	})
	return out
}
