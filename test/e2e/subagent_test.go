package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/test/daemontest"
)

// childTask marks the subagent's task, so one script can play both models.
const childTask = "CHILD-TASK: name the answer"

func isChild(req modeltest.ChatRequest) bool {
	for _, m := range req.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "CHILD-TASK") {
			return true
		}
	}
	return false
}

// childCalls is the model calls of reqs that a subagent made (isChild).
func childCalls(reqs []modeltest.ChatRequest) []modeltest.ChatRequest {
	var children []modeltest.ChatRequest
	for _, req := range reqs {
		if isChild(req) {
			children = append(children, req)
		}
	}
	return children
}

// subagentScript: the parent delegates once, then repeats the child's answer;
// the child answers plainly. Usage is fixed so the totals can be checked.
func subagentScript(req modeltest.ChatRequest) modeltest.Reply {
	if isChild(req) {
		return modeltest.Reply{Text: "child answer 42",
			Usage: &modeltest.Usage{PromptTokens: 1000, CompletionTokens: 200, Cost: modeltest.USD(0.01)}}
	}
	u := &modeltest.Usage{PromptTokens: 100, CompletionTokens: 10, Cost: modeltest.USD(0.001)}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			return modeltest.Reply{Text: "parent saw: " + m.Content, Usage: u}
		}
	}
	args, _ := json.Marshal(map[string]string{"task": childTask})
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_sub", Name: "spawn_subagent", Arguments: string(args)}}, Usage: u}
}

func TestSubagentThroughDeltaRun(t *testing.T) {
	fake := startScript(t, subagentScript)
	canaries := map[string]string{
		"DELTA_CONTROL_TOKEN": "canary-control-token",
		"DELTA_INSPECT_TOKEN": "canary-inspect-token",
		"EXA_API_KEY":         "canary-exa-key",
		"DELTA_VAULT_KEY":     "canary-vault-key-0123456789",
		"OPENAI_API_KEY":      "canary-openai-key",
		"OPENROUTER_API_KEY":  "canary-openrouter-key",
		"DELTA_MCP_SERVERS":   `[{"name":"canary-mcp","command":["canary-mcp-binary"]}]`,
		"MODEL_HEADERS":       `{"X-Canary":"canary-header-value"}`,
	}
	var env []string
	for k, v := range canaries {
		env = append(env, k+"="+v)
	}
	out, _ := runOK(t, deltaRun(t, fake, "delegate the question", env...))
	got := usageMarker(t, out)
	// Two parent calls (100 in / 10 out / $0.001 each) plus the child's one
	// (1000 / 200 / $0.01).
	if got.Input != 1200 || got.Output != 220 || got.Cost < 0.0119 || got.Cost > 0.0121 {
		t.Errorf("parent usage = %+v, want 1200 in, 220 out, $0.012 (child usage charged to the parent)", got)
	}
	if !strings.Contains(string(out), "parent saw: child answer 42") {
		t.Errorf("the child's answer did not come back as the tool result; stdout:\n%s", out)
	}

	children := childCalls(fake.Requests())
	for _, req := range children {
		for _, tl := range req.Tools {
			if tl.Name == "spawn_subagent" {
				t.Errorf("the child was offered spawn_subagent: nesting must stop at one level")
			}
		}
		if got := req.Header.Get("Authorization"); got != "Bearer fake-key" {
			t.Errorf("child Authorization = %q, want the one static primary key", got)
		}
		for name, vals := range req.Header {
			for _, v := range vals {
				for cname, cv := range canaries {
					if strings.Contains(v, cv) || strings.Contains(v, "canary") {
						t.Errorf("child request header %s carries the parent's %s", name, cname)
					}
				}
			}
		}
	}
	if len(children) != 1 {
		t.Errorf("child model calls = %d, want 1", len(children))
	}
}

// TestSubagentUsageBoundByParentBudget: the child's reported spend is charged
// only up to what the parent had left when it spawned the child.
func TestSubagentUsageBoundByParentBudget(t *testing.T) {
	fake := startScript(t, subagentScript)
	out, _ := deltaRun(t, fake, "delegate the question", "DELTA_MAX_COST_USD=0.005").Output() // the parent may end over budget; the marker is printed either way
	got := usageMarker(t, out)
	// The parent had $0.004 left after its first call; the child reported
	// $0.01. Charged: 0.001 + 0.004 (+ at most the parent's closing call).
	if got.Cost > 0.0061 || got.Cost < 0.0049 {
		t.Errorf("parent cost = $%.4f, want the child's $0.01 bounded to the $0.004 left", got.Cost)
	}
}

// runUsage is the usage `delta run` reports in its DELTA_USAGE marker.
type runUsage struct {
	Input  int64   `json:"input_tokens"`
	Output int64   `json:"output_tokens"`
	Cache  int64   `json:"cache_read_tokens"`
	Cost   float64 `json:"cost_usd"`
}

// usageMarker reads the DELTA_USAGE marker that must be the last line of
// a `delta run`'s stdout.
func usageMarker(t *testing.T, out []byte) runUsage {
	t.Helper()
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	last := lines[len(lines)-1]
	payload, ok := strings.CutPrefix(last, "DELTA_USAGE ")
	if !ok {
		t.Fatalf("last stdout line is not the usage marker: %q\nstdout:\n%s", last, out)
	}
	var u runUsage
	if err := json.Unmarshal([]byte(payload), &u); err != nil {
		t.Fatalf("marker payload %q: %v", payload, err)
	}
	return u
}

// deltaRun is `delta run input` in a fresh bundle's workspace, its model
// the scripted fake, with extra set; nothing else of the test's
// environment reaches it.
func deltaRun(t *testing.T, fake *modeltest.Server, input string, extra ...string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	daemontest.Init(t, deltaBin, filepath.Join(dir, "ws"))
	cmd := exec.Command(deltaBin, "run", input)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"DELTA_WORKSPACE=" + filepath.Join(dir, "ws"),
		"MODEL_BASE_URL=" + fake.URL(), "MODEL_API_KEY=fake-key", "DELTA_MODEL_PRIMARY=scripted/demo",
	}, extra...)
	return cmd
}

// runOK runs cmd and returns its stdout and stderr, failing the test with
// both when it does not exit 0.
func runOK(t *testing.T, cmd *exec.Cmd) ([]byte, string) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("delta run: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return out, stderr.String()
}

// TestSubagentKeepsTheParentsToolAllowlist: an operator who narrowed the
// agent with DELTA_ALLOWED_TOOLS gets a child narrowed the same way, so
// delegating is no way around the allowlist.
func TestSubagentKeepsTheParentsToolAllowlist(t *testing.T) {
	fake := startScript(t, subagentScript)
	runOK(t, deltaRun(t, fake, "delegate the question", "DELTA_ALLOWED_TOOLS=read_file,spawn_subagent"))
	children := childCalls(fake.Requests())
	for _, req := range children {
		for _, tl := range req.Tools {
			if tl.Name != "read_file" {
				t.Errorf("the child was offered %s, which the parent's DELTA_ALLOWED_TOOLS=read_file,spawn_subagent leaves out", tl.Name)
			}
		}
	}
	if len(children) != 1 {
		t.Errorf("child model calls = %d, want 1", len(children))
	}
}

// TestParallelSubagentsShareOneBudget: two spawn_subagent calls in one turn
// run at once; together they may spend only what the parent had left, not
// that amount each.
func TestParallelSubagentsShareOneBudget(t *testing.T) {
	fake := startScript(t, func(req modeltest.ChatRequest) modeltest.Reply {
		if isChild(req) {
			return modeltest.Reply{Text: "child answer", Usage: &modeltest.Usage{PromptTokens: 1000, CompletionTokens: 200, Cost: modeltest.USD(0.015)}}
		}
		u := &modeltest.Usage{PromptTokens: 100, CompletionTokens: 10, Cost: modeltest.USD(0.001)}
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return modeltest.Reply{Text: "done", Usage: u}
			}
		}
		args, _ := json.Marshal(map[string]string{"task": childTask})
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{
			{ID: "call_a", Name: "spawn_subagent", Arguments: string(args)},
			{ID: "call_b", Name: "spawn_subagent", Arguments: string(args)},
		}, Usage: u}
	})
	out, _ := deltaRun(t, fake, "delegate twice", "DELTA_MAX_COST_USD=0.02").Output() // the parent may end over budget; the marker is printed either way
	got := usageMarker(t, out)
	// $0.001 spent, $0.019 left: one child's $0.015 fits, two do not. The
	// parent's closing call may add $0.001 past the ceiling.
	if got.Cost > 0.0211 {
		t.Errorf("parent cost = $%.4f with DELTA_MAX_COST_USD=0.02: parallel children each spent the whole remaining budget", got.Cost)
	}
}
