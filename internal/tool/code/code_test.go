package code_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/code"
	"github.com/deltaharness/delta/internal/tool/tooltest"
	"github.com/deltaharness/delta/internal/workspace"
)

func TestCommand(t *testing.T) {
	tests := []struct {
		value string
		want  []string
	}{
		{"", []string{"codex", "exec", "--sandbox", "workspace-write", "--skip-git-repo-check", "--disable", "apps", "--disable", "plugins"}},
		{"   ", []string{"codex", "exec", "--sandbox", "workspace-write", "--skip-git-repo-check", "--disable", "apps", "--disable", "plugins"}},
		{"claude --print", []string{"claude", "--print"}},
		{"codex exec --sandbox workspace-write", []string{"codex", "exec", "--sandbox", "workspace-write"}}, // verbatim: nothing appended
		{`my-cli  "quoted arg"`, []string{"my-cli", `"quoted`, `arg"`}},                                     // no quote parsing
	}
	for _, tt := range tests {
		if got := code.Command(tt.value); !slices.Equal(got, tt.want) {
			t.Errorf("Command(%q) = %q, want %q", tt.value, got, tt.want)
		}
	}
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-cli")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func workspaceDir(t *testing.T) *workspace.Root {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func run(ctx context.Context, t *testing.T, tl tool.Tool, args string) (tool.Result, error) {
	t.Helper()
	return tl.Run(ctx, tool.Call{Args: json.RawMessage(args)})
}

func TestRunsInWorkspaceWithArguments(t *testing.T) {
	ws := workspaceDir(t)
	cli := script(t, `echo "cwd=$(pwd)"; for a in "$@"; do echo "arg=[$a]"; done; echo "to stderr" >&2; echo made > out.txt`)
	tl := code.New(ws, code.Config{CLI: cli + " --flag  value"})
	if tl.ReadOnly() {
		t.Fatal("code must not be read-only")
	}
	if reason, omitted := tl.Omitted(); omitted {
		t.Fatalf("Omitted = %q", reason)
	}
	res, err := run(context.Background(), t, tl, `{"prompt":"fix the bug; don't \"quote\" me"}`)
	if err != nil || res.IsError {
		t.Fatalf("Run = %q, %v", res.Text, err)
	}
	want := "cwd=" + ws.Dir() + "\narg=[--flag]\narg=[value]\narg=[fix the bug; don't \"quote\" me]\n"
	if !strings.HasPrefix(res.Text, want) || !strings.Contains(res.Text, "to stderr") {
		t.Fatalf("output = %q, want prefix %q and stderr", res.Text, want)
	}
	if b, err := os.ReadFile(filepath.Join(ws.Dir(), "out.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the CLI's file in the workspace = %q, %v", b, err)
	}
}

func TestFailureAndBounds(t *testing.T) {
	ws := workspaceDir(t)
	res, err := run(context.Background(), t, code.New(ws, code.Config{CLI: script(t, "echo broken; exit 3")}), `{"prompt":"x"}`)
	if err != nil || !res.IsError || !strings.Contains(res.Text, "exit status 3") || !strings.Contains(res.Text, "broken") {
		t.Fatalf("failing CLI = %q, %v", res.Text, err)
	}
	noisy := script(t, `i=0; while [ $i -lt 2000 ]; do echo "line $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; i=$((i+1)); done`)
	res, err = run(context.Background(), t, code.New(ws, code.Config{CLI: noisy, MaxOutput: 4096}), `{"prompt":"x"}`)
	if err != nil || res.IsError {
		t.Fatalf("noisy CLI = %q, %v", res.Text, err)
	}
	if len(res.Text) > 4200 || !strings.HasPrefix(res.Text, "line 0 ") || !strings.Contains(res.Text, "bytes of output omitted") || !strings.HasSuffix(res.Text, "line 1999 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n") {
		t.Fatalf("bounded output (%d bytes) = %q…%q", len(res.Text), res.Text[:80], res.Text[len(res.Text)-80:])
	}
}

func TestBadInputs(t *testing.T) {
	ws := workspaceDir(t)
	ok := code.New(ws, code.Config{CLI: script(t, "echo ran")})
	missing := code.New(ws, code.Config{CLI: "/nonexistent/definitely-not-a-cli --print"})
	defaultMissing := code.New(ws, code.Config{LookPath: func(string) (string, error) { return "", errors.New("not installed") }})
	tests := []struct {
		name string
		tl   tool.Tool
		args string
		want string
	}{
		{"missing prompt", ok, `{}`, `missing required field "prompt"`},
		{"empty prompt", ok, `{"prompt":"  "}`, "prompt is empty"},
		{"nul in prompt", ok, `{"prompt":"a\u0000b"}`, "NUL byte"},
		{"wrong type", ok, `{"prompt":["a"]}`, `field "prompt": expected string`},
		{"missing executable", missing, `{"prompt":"x"}`, `DELTA_CODE_CLI executable "/nonexistent/definitely-not-a-cli" cannot be used`},
		{"default missing", defaultMissing, `{"prompt":"x"}`, `the default coding CLI executable "codex" cannot be used: not installed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := run(context.Background(), t, tt.tl, tt.args)
			if err != nil || !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("Run = %q, %v; want an error naming %q", res.Text, err, tt.want)
			}
		})
	}
	if reason, omitted := missing.Omitted(); !omitted || !strings.Contains(reason, "definitely-not-a-cli") {
		t.Errorf("Omitted() = %q, %v", reason, omitted)
	}
}

func TestCancelKillsProcessGroup(t *testing.T) {
	ws := workspaceDir(t)
	pids := filepath.Join(t.TempDir(), "pids")
	// The CLI starts a grandchild that would outlive it, records both pids,
	// then waits forever.
	cli := script(t, `sleep 300 & echo $! > `+pids+`.tmp; echo $$ >> `+pids+`.tmp; mv `+pids+`.tmp `+pids+`; echo started; wait`)
	tl := code.New(ws, code.Config{CLI: cli})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, t, tl, `{"prompt":"x"}`)
		done <- err
	}()
	var procs []int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pids); err == nil {
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				procs = append(procs, n)
			}
			break
		}
	}
	if len(procs) != 2 {
		t.Fatalf("the CLI never recorded its pids (%v)", procs)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call = %v, want context.Canceled", err)
	}
	for _, pid := range procs {
		gone := false
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if !tooltest.Alive(pid) {
				gone = true
				break
			}
		}
		if !gone {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d survived the cancellation", pid)
		}
	}
}

func TestExitKillsLeftovers(t *testing.T) {
	ws := workspaceDir(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cli := script(t, `sleep 300 >/dev/null 2>&1 & echo $! > `+pidFile+`; echo done`)
	res, err := run(context.Background(), t, code.New(ws, code.Config{CLI: cli}), `{"prompt":"x"}`)
	if err != nil || res.IsError {
		t.Fatalf("Run = %q, %v", res.Text, err)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(10 * time.Second); tooltest.Alive(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 || tooltest.Alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("background process %d outlived the call", pid)
	}
}

// TestCLIDiesWithTheDaemon: when the daemon itself dies (kill -9, an OOM
// kill), the coding CLI it started dies too, instead of working on in the
// workspace with no one to hear its answer. The test runs itself as the
// daemon: a child test process that calls the tool and is then killed.
func TestCLIDiesWithTheDaemon(t *testing.T) {
	if dir := os.Getenv(tooltest.EnvDaemonDir); dir != "" {
		ws, err := workspace.Open(filepath.Join(dir, "ws"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = run(context.Background(), t, code.New(ws, code.Config{CLI: filepath.Join(dir, "cli")}), `{"prompt":"x"}`)
		return
	}
	tooltest.DiesWithDaemon(t, "TestCLIDiesWithTheDaemon", "cli")
}
