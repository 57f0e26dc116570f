// Package subagent is the spawn_subagent tool: it runs the same Delta binary
// as `delta run "<task>"` in the shared workspace, with a default-deny
// environment, the parent's remaining budget and a nesting depth, and charges
// the usage the child reports on its DELTA_USAGE stdout line to the parent run.
package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/tool"
)

// Name is the tool's name.
const Name = "spawn_subagent"

// UsageMarker opens the last stdout line of `delta run`: the run's usage as
// JSON, so a parent can charge what its child spent.
const UsageMarker = "DELTA_USAGE "

// killGrace is how long Wait waits for output pipes held open by a process
// that left the child's group.
const killGrace = 2 * time.Second

// maxOutput bounds what is kept of the child's stdout and stderr each.
const maxOutput = 4 << 20

// Options configures the tool.
type Options struct {
	// Exe is the delta binary the child runs (the daemon passes os.Executable()).
	Exe string
	// Dir is the shared workspace, the child's working directory.
	Dir string
	// Env is the prepared default-deny environment (config.SubagentEnv); the
	// tool appends the remaining budgets and the child's depth.
	Env []string
	// Depth is this process's nesting depth; the child runs at Depth+1.
	Depth int
	// Remaining returns the parent run's unspent fresh-token and dollar budget.
	Remaining func(ctx context.Context, runID string) (tokens int64, costUSD float64, err error)
	// Charge adds the child's usage to the parent run.
	Charge func(ctx context.Context, runID string, u model.Usage) error
	// ResultMax bounds the child's final text in the result (default 20000 bytes).
	ResultMax int
	Logger    *slog.Logger
}

type params struct {
	Task string `json:"task" jsonschema:"the self-contained task for the subagent; it sees the same workspace but none of this conversation"`
}

// New returns the spawn_subagent tool. It is not read-only: the child can
// write the shared workspace, so an interrupted call is never re-run.
func New(o Options) tool.Tool {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ResultMax <= 0 {
		o.ResultMax = 20000
	}
	return tool.Func(Name, "Delegate a self-contained task to a subagent: a fresh Delta run with its own empty conversation, "+
		"the same workspace and your remaining budget. It cannot spawn further subagents. Returns the subagent's final answer. "+
		"Its file and DELTA.md changes are real; do not run it on files you are editing at the same time.", false,
		func(ctx context.Context, c tool.Call, p params) (tool.Result, error) { return o.run(ctx, c, p) })
}

func (o Options) run(ctx context.Context, c tool.Call, p params) (tool.Result, error) {
	task := strings.TrimSpace(p.Task)
	if task == "" {
		return tool.Errorf("task is empty: give the subagent a self-contained task"), nil
	}
	tokens, cost, err := o.Remaining(ctx, c.RunID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("spawn_subagent: remaining budget of run %s: %w", c.RunID, err)
	}
	if tokens <= 0 || cost <= 0 {
		return tool.Errorf("no budget left for a subagent (%d tokens, $%.4f remaining)", max(tokens, 0), max(cost, 0)), nil
	}
	env := append(append([]string(nil), o.Env...),
		"DELTA_MAX_TOKENS="+strconv.FormatInt(tokens, 10),
		"DELTA_MAX_COST_USD="+strconv.FormatFloat(cost, 'f', -1, 64),
		"DELTA_SUBAGENT_DEPTH="+strconv.Itoa(o.Depth+1),
	)
	// `delta run` reads the task from stdin when given no argument: a task
	// starting with "-" cannot be mistaken for a flag, and its size is not
	// bounded by the argument limit.
	cmd := exec.Command(o.Exe, "run")
	cmd.Stdin = strings.NewReader(task)
	cmd.Dir = o.Dir
	cmd.Env = env
	var stdout, stderr capped
	stdout.max, stderr.max = maxOutput, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		return tool.Result{}, fmt.Errorf("spawn_subagent: start %s: %w", o.Exe, err)
	}
	pgid := cmd.Process.Pid
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	waitErr := cmd.Wait()
	stop()
	_ = syscall.Kill(-pgid, syscall.SIGKILL)

	text, u, ok := ParseOutput(stdout.String())
	if !ok {
		// Fail open as zero, as the guide says, but say so.
		o.Logger.Warn("spawn_subagent: child printed no valid DELTA_USAGE line; charging zero", "run", c.RunID)
	} else {
		u = Bound(u, tokens, cost)
		if err := o.Charge(context.WithoutCancel(ctx), c.RunID, u); err != nil {
			o.Logger.Warn("spawn_subagent: charge child usage", "run", c.RunID, "err", err)
		}
	}
	if ctx.Err() != nil {
		return tool.Result{}, fmt.Errorf("spawn_subagent: %w", ctx.Err())
	}
	text = clip(strings.TrimSpace(text), o.ResultMax)
	var exit *exec.ExitError
	switch {
	case waitErr == nil, errors.Is(waitErr, exec.ErrWaitDelay):
		if text == "" {
			return tool.Text("(the subagent finished without a final answer)"), nil
		}
		return tool.Text(text), nil
	case errors.As(waitErr, &exit):
		return tool.Errorf("the subagent failed (%v): %s\n%s", exit.ProcessState, text,
			clip(strings.TrimSpace(stderr.String()), 2000)), nil
	default:
		return tool.Result{}, fmt.Errorf("spawn_subagent: wait: %w", waitErr)
	}
}

// usageJSON is the marker's payload.
type usageJSON struct {
	InputTokens     *int64   `json:"input_tokens"`
	OutputTokens    *int64   `json:"output_tokens"`
	CacheReadTokens int64    `json:"cache_read_tokens"`
	CostUSD         *float64 `json:"cost_usd"`
}

// FormatUsage renders the marker line (without a newline) for u.
func FormatUsage(u model.Usage) string {
	b, _ := json.Marshal(map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_tokens": u.CacheReadTokens, "cost_usd": u.CostUSD,
	})
	return UsageMarker + string(b)
}

// ParseOutput splits a child's stdout into its final text and the usage on
// its last non-blank line. ok is false when that line is not a well-formed
// marker (missing, truncated, negative or non-finite numbers); the text is
// then the whole output.
func ParseOutput(out string) (text string, u model.Usage, ok bool) {
	trimmed := strings.TrimRight(out, "\r\n\t ")
	i := strings.LastIndexByte(trimmed, '\n')
	last, before := trimmed[i+1:], ""
	if i >= 0 {
		before = trimmed[:i]
	}
	rest, found := strings.CutPrefix(strings.TrimSpace(last), UsageMarker)
	if !found {
		return out, model.Usage{}, false
	}
	var j usageJSON
	dec := json.NewDecoder(strings.NewReader(rest))
	if err := dec.Decode(&j); err != nil || dec.More() || j.InputTokens == nil || j.OutputTokens == nil || j.CostUSD == nil {
		return before, model.Usage{}, false
	}
	if *j.InputTokens < 0 || *j.OutputTokens < 0 || j.CacheReadTokens < 0 || j.CacheReadTokens > *j.InputTokens ||
		*j.CostUSD < 0 || math.IsNaN(*j.CostUSD) || math.IsInf(*j.CostUSD, 0) {
		return before, model.Usage{}, false
	}
	return before, model.Usage{InputTokens: *j.InputTokens, OutputTokens: *j.OutputTokens,
		CacheReadTokens: j.CacheReadTokens, CostUSD: *j.CostUSD}, true
}

// Bound holds a child's usage to the parent's remaining budget: fresh tokens
// (output first, then fresh input) to tokens, dollars to costUSD.
func Bound(u model.Usage, tokens int64, costUSD float64) model.Usage {
	tokens = max(tokens, 0)
	if u.Fresh() > tokens {
		fresh := u.InputTokens - u.CacheReadTokens
		if fresh > tokens {
			u.InputTokens = u.CacheReadTokens + tokens
			u.OutputTokens = 0
		} else {
			u.OutputTokens = tokens - fresh
		}
	}
	u.CostUSD = min(u.CostUSD, max(costUSD, 0))
	return u
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: %d of %d bytes shown]", cut, len(s))
}

// capped keeps the first max bytes written, plus the last 4 KiB, so the
// usage line survives a child that floods stdout.
type capped struct {
	buf  bytes.Buffer
	tail []byte
	max  int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 4096 {
		c.tail = append([]byte(nil), c.tail[len(c.tail)-4096:]...)
	}
	return len(p), nil
}

func (c *capped) String() string {
	if c.buf.Len() < c.max {
		return c.buf.String()
	}
	return c.buf.String() + "\n" + string(c.tail)
}
