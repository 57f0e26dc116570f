package subagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/subagent"
	"github.com/deltaharness/delta/internal/tool/tooltest"
)

// fakeDelta writes a shell script standing in for `delta run`.
func fakeDelta(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "delta")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type charges struct {
	mu sync.Mutex
	u  []model.Usage
}

func (c *charges) charge(_ context.Context, runID string, u model.Usage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.u = append(c.u, u)
	return nil
}

func newTool(exe, dir string, tokens int64, cost float64, ch *charges) tool.Tool {
	return subagent.New(subagent.Options{
		Exe: exe, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH"), "MODEL_API_KEY=k"}, Depth: 0,
		Remaining: func(context.Context, string) (int64, float64, error) { return tokens, cost, nil },
		Charge:    ch.charge,
	})
}

func call(ctx context.Context, t *testing.T, tl tool.Tool, task string) (tool.Result, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"task": task})
	return tl.Run(ctx, tool.Call{RunID: "resp_1", CallID: "c1", Args: args})
}

func TestChildGetsTaskBudgetDepthAndOnlyTheGivenEnv(t *testing.T) {
	dir := t.TempDir()
	// The child echoes its task (stdin), working directory and environment,
	// then the usage marker.
	exe := fakeDelta(t, `echo "task=$(cat) cwd=$(pwd) args=$*"; env | sort; echo 'DELTA_USAGE {"input_tokens":50,"output_tokens":5,"cache_read_tokens":0,"cost_usd":0.02}'`)
	var ch charges
	res, err := call(context.Background(), t, newTool(exe, dir, 1000, 1.5, &ch), "-rf look at files")
	if err != nil || res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	for _, want := range []string{"task=-rf look at files", "cwd=" + dir, "args=run", "DELTA_MAX_TOKENS=1000",
		"DELTA_MAX_COST_USD=1.5", "DELTA_SUBAGENT_DEPTH=1", "MODEL_API_KEY=k"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("child output lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "DELTA_USAGE") {
		t.Errorf("the marker leaked into the tool result:\n%s", res.Text)
	}
	for _, line := range strings.Split(res.Text, "\n") {
		k, _, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "task=") || strings.HasPrefix(line, "cwd=") || strings.HasPrefix(line, "args=") {
			continue
		}
		switch k {
		case "PATH", "MODEL_API_KEY", "DELTA_MAX_TOKENS", "DELTA_MAX_COST_USD", "DELTA_SUBAGENT_DEPTH", "PWD", "SHLVL", "_", "OLDPWD":
		default:
			t.Errorf("child environment has %s, which the tool was not given", k)
		}
	}
	if len(ch.u) != 1 || ch.u[0] != (model.Usage{InputTokens: 50, OutputTokens: 5, CostUSD: 0.02}) {
		t.Errorf("charged %+v, want the child's usage once", ch.u)
	}
}

func TestChildOutcomes(t *testing.T) {
	tests := []struct {
		name, body  string
		tokens      int64
		cost        float64
		wantErr     bool
		wantText    string
		wantCharged []model.Usage
	}{
		{"no marker charges zero", `echo plain answer`, 100, 1, false, "plain answer", nil},
		{"malformed marker charges zero", `echo answer; echo 'DELTA_USAGE {"input_tokens":"many"}'`, 100, 1, false, "answer", nil},
		{"failed child still charged", `echo partial; echo 'DELTA_USAGE {"input_tokens":10,"output_tokens":1,"cost_usd":0.5}'; echo boom >&2; exit 3`,
			100, 1, true, "boom", []model.Usage{{InputTokens: 10, OutputTokens: 1, CostUSD: 0.5}}},
		{"charge bounded by the remaining budget", `echo ok; echo 'DELTA_USAGE {"input_tokens":500,"output_tokens":500,"cost_usd":9}'`,
			600, 0.25, false, "ok", []model.Usage{{InputTokens: 500, OutputTokens: 100, CostUSD: 0.25}}},
		{"no budget left", `echo never`, 0, 1, true, "no budget left", nil},
		{"no cost left", `echo never`, 10, 0, true, "no budget left", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ch charges
			res, err := call(context.Background(), t, newTool(fakeDelta(t, tt.body), t.TempDir(), tt.tokens, tt.cost, &ch), "task")
			if err != nil || res.IsError != tt.wantErr || !strings.Contains(res.Text, tt.wantText) {
				t.Fatalf("Run = %+v, %v; want IsError %v and %q", res, err, tt.wantErr, tt.wantText)
			}
			if len(ch.u) != len(tt.wantCharged) || (len(ch.u) == 1 && ch.u[0] != tt.wantCharged[0]) {
				t.Errorf("charged %+v, want %+v", ch.u, tt.wantCharged)
			}
		})
	}
}

func TestBadTask(t *testing.T) {
	var ch charges
	tl := newTool(fakeDelta(t, "echo ran"), t.TempDir(), 100, 1, &ch)
	for _, args := range []string{`{}`, `{"task":"  "}`, `{"task":3}`, `not json`} {
		res, err := tl.Run(context.Background(), tool.Call{RunID: "r", Args: json.RawMessage(args)})
		if err != nil || !res.IsError {
			t.Errorf("args %s: Run = %+v, %v; want an error result", args, res, err)
		}
	}
}

func TestCancelKillsChildGroup(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	exe := fakeDelta(t, `sleep 300 & echo $! > `+pids+`.tmp; echo $$ >> `+pids+`.tmp; mv `+pids+`.tmp `+pids+`; wait`)
	var ch charges
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := call(ctx, t, newTool(exe, t.TempDir(), 100, 1, &ch), "wait forever")
		done <- err
	}()
	procs := waitPIDs(2, func() []string { return []string{pids} })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v, want context.Canceled", err)
	}
	waitDead(t, procs)
}

// waitPIDs waits until the files named by files hold n process ids in all
// (whitespace-separated) and returns them.
func waitPIDs(n int, files func() []string) []int {
	for {
		var procs []int
		for _, f := range files() {
			b, _ := os.ReadFile(f)
			for _, s := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(s)
				procs = append(procs, pid)
			}
		}
		if len(procs) >= n {
			return procs
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitDead fails the test if any of procs is still alive after about five
// seconds: a cancelled call must take its whole process group down.
func waitDead(t *testing.T, procs []int) {
	t.Helper()
	for _, pid := range procs {
		for i := 0; tooltest.Alive(pid); i++ {
			if i > 500 {
				t.Fatalf("process %d outlived the cancelled call", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestChildDiesWithTheDaemon: a `delta run` child does not outlive a
// daemon that is killed outright, so it cannot go on spending or writing
// the workspace unaccounted. The test runs itself as the daemon.
func TestChildDiesWithTheDaemon(t *testing.T) {
	if dir := os.Getenv(tooltest.EnvDaemonDir); dir != "" {
		var ch charges
		_, _ = call(context.Background(), t, newTool(filepath.Join(dir, "delta"), dir, 1000, 1, &ch), "work")
		return
	}
	tooltest.DiesWithDaemon(t, "TestChildDiesWithTheDaemon", "delta")
}
