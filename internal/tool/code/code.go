// Package code is the code tool: it hands a task to an external coding CLI
// (Codex by default) running in the workspace folder.
//
// The command line comes from DELTA_CODE_CLI, split on spaces with no shell
// or quote parsing. Unset, it is DefaultCLI with --disable apps --disable
// plugins appended, so the CLI's own account connectors cannot act for the
// agent; a value the operator sets is used verbatim. The task is the last
// argument. The process gets its own process group and no harness timeout:
// cancelling the call kills the whole group, grandchildren included, and so
// does the CLI's own exit, so nothing it started outlives the call. Output
// (stdout and stderr, interleaved) is bounded, keeping its beginning and end.
//
// A CLI whose executable cannot be found is reported by Omitted, for
// /v1/status and the boot line, and every call returns an error result.
// The tool is not read-only.
package code

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

// Name is the tool's name, as the model sees it.
const Name = "code"

// DefaultCLI is the command used when DELTA_CODE_CLI is unset; DefaultFlags
// are appended to it, and only to it.
const (
	DefaultCLI   = "codex exec --sandbox workspace-write --skip-git-repo-check"
	DefaultFlags = "--disable apps --disable plugins"
)

// DefaultMaxOutput bounds the output kept from one call, in bytes.
const DefaultMaxOutput = 64 << 10

// killGrace is how long Wait waits for pipes after the group is killed, in
// case a process escaped the group (setsid) still holding them.
const killGrace = 5 * time.Second

//go:embed code.md
var doc string

// Config configures the code tool.
type Config struct {
	// CLI is DELTA_CODE_CLI as set; empty means the default command.
	CLI string
	// Env is the CLI's environment; nil inherits the daemon's.
	Env []string
	// MaxOutput bounds the output kept, in bytes (DefaultMaxOutput if zero).
	MaxOutput int
	// LookPath finds the executable; nil means exec.LookPath.
	LookPath func(file string) (string, error)
}

// Tool is the code tool.
type Tool struct {
	tool.Tool
	ws      *workspace.Root
	argv    []string
	path    string // resolved executable, "" when missing
	omitted string // why the tool cannot run, "" when it can
	cfg     Config
}

// Command turns a DELTA_CODE_CLI value into argv: split on runs of spaces,
// no quoting; empty means DefaultCLI plus DefaultFlags.
func Command(value string) []string {
	if strings.TrimSpace(value) == "" {
		return strings.Fields(DefaultCLI + " " + DefaultFlags)
	}
	return strings.Fields(value)
}

// New builds the code tool, resolving the executable now.
func New(ws *workspace.Root, cfg Config) *Tool {
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.LookPath == nil {
		cfg.LookPath = exec.LookPath
	}
	t := &Tool{ws: ws, argv: Command(cfg.CLI), cfg: cfg}
	p, err := cfg.LookPath(t.argv[0])
	if err != nil {
		src := "the default coding CLI"
		if strings.TrimSpace(cfg.CLI) != "" {
			src = "DELTA_CODE_CLI"
		}
		why := err.Error()
		var ee *exec.Error
		if errors.As(err, &ee) {
			why = ee.Err.Error()
		}
		t.omitted = fmt.Sprintf("%s executable %q cannot be used: %s", src, t.argv[0], why)
	} else {
		t.path = p
	}
	t.Tool = tool.Func(Name, strings.TrimSpace(doc), false, t.run)
	return t
}

// Untimed reports that the engine must not apply its tool timeout: a coding
// CLI legitimately works for many minutes, and cancelling the run still
// kills its process group.
func (t *Tool) Untimed() bool { return true }

// Omitted reports that the CLI cannot run and why, for /v1/status and boot.
func (t *Tool) Omitted() (reason string, omitted bool) {
	return t.omitted, t.omitted != ""
}

// Argv is the command line a call runs, before the task argument.
func (t *Tool) Argv() []string { return append([]string(nil), t.argv...) }

type params struct {
	Prompt string `json:"prompt" jsonschema:"the complete, self-contained task for the coding agent"`
}

func (t *Tool) run(ctx context.Context, _ tool.Call, p params) (tool.Result, error) {
	if t.omitted != "" {
		return tool.Errorf("the code tool is not available: %s; the operator must install it or set DELTA_CODE_CLI", t.omitted), nil
	}
	if strings.TrimSpace(p.Prompt) == "" {
		return tool.Errorf("prompt is empty; describe the coding task completely"), nil
	}
	if strings.IndexByte(p.Prompt, 0) >= 0 {
		return tool.Errorf("prompt contains a NUL byte, which cannot be passed to a program"), nil
	}

	out := newBounded(t.cfg.MaxOutput)
	cmd := exec.Command(t.path, append(t.argv[1:], p.Prompt)...) //nolint:noctx // ctx kills the whole process group below, which CommandContext cannot
	cmd.Args[0] = t.argv[0]
	cmd.Dir = t.ws.Dir()
	cmd.Env = t.cfg.Env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		return tool.Errorf("cannot start %s: %v", t.argv[0], err), nil
	}
	pgid := cmd.Process.Pid
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	err := cmd.Wait()
	stop()
	// The leader is gone; whatever it left running in its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)

	if ctx.Err() != nil {
		return tool.Result{}, fmt.Errorf("code: %w", ctx.Err())
	}
	text := out.String()
	if strings.TrimSpace(text) == "" {
		text = "[no output]"
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return tool.Text(text), nil
	case errors.As(err, &exit):
		return tool.Errorf("%s exited with %v:\n%s", t.argv[0], exit.ProcessState, text), nil
	case errors.Is(err, exec.ErrWaitDelay):
		return tool.Text(text + "\n[a process the CLI started outside its group kept the output open; it was not waited for]"), nil
	default:
		return tool.Result{}, fmt.Errorf("code: wait for %s: %w", t.argv[0], err)
	}
}

// bounded keeps the first and last half of max bytes written to it and
// counts what fell between. It is safe for concurrent use (stdout and stderr
// copy goroutines share it).
type bounded struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte // ring of the most recent bytes once head is full
	dropped int64
}

func newBounded(max int) *bounded { return &bounded{max: max} }

func (b *bounded) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	half := b.max / 2
	if room := half - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - (b.max - half); over > 0 {
		b.dropped += int64(over)
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return n, nil
}

func (b *bounded) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped == 0 {
		return strings.ToValidUTF8(string(b.head)+string(b.tail), "\uFFFD")
	}
	return strings.ToValidUTF8(string(b.head), "\uFFFD") +
		fmt.Sprintf("\n[… %d bytes of output omitted …]\n", b.dropped) +
		strings.ToValidUTF8(string(b.tail), "\uFFFD")
}
