// Package subagent holds the two delegation tools, spawn_subagent and
// eval_n. Both run the same Delta binary as `delta run` children in the
// shared workspace, with a default-deny environment, a share of the parent's
// remaining budget and a nesting depth, and charge the usage each child
// reports on its DELTA_USAGE stdout line to the parent run. eval_n runs N
// such children on one task and asks a judge model to pick the best answer.
package subagent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/tool"
)

// Name is the spawn_subagent tool's name.
const Name = "spawn_subagent"

// Options configures both tools.
type Options struct {
	// Exe is the delta binary the child runs (the daemon passes os.Executable()).
	Exe string
	// Dir is the shared workspace, the child's working directory.
	Dir string
	// Env is the prepared default-deny environment (config.SubagentEnv); the
	// tool appends the child's budget and depth.
	Env []string
	// Depth is this process's nesting depth; the child runs at Depth+1.
	Depth int
	// Remaining returns the parent run's unspent fresh-token and dollar budget.
	Remaining func(ctx context.Context, runID string) (tokens int64, costUSD float64, err error)
	// Charge adds a child's (or the judge's) usage to the parent run.
	Charge func(ctx context.Context, runID string, u model.Usage) error
	// Judge makes eval_n's judging call (the daemon passes the cascade's
	// utility lane). Nil means no judgement: eval_n returns every variant.
	Judge func(ctx context.Context, req model.Request) (model.Response, error)
	// ResultMax bounds the child's final text in the result (default 20000 bytes).
	ResultMax int
	Logger    *slog.Logger

	holds *holds // shared by the tools Tools returns; each New makes its own otherwise
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ResultMax <= 0 {
		o.ResultMax = 20000
	}
	if o.holds == nil {
		o.holds = &holds{runs: map[string]hold{}}
	}
	return o
}

type params struct {
	Task string `json:"task" jsonschema:"the self-contained task for the subagent; it sees the same workspace but none of this conversation"`
}

// New returns the spawn_subagent tool. It is not read-only: the child can
// write the shared workspace, so an interrupted call is never re-run. It has
// no tool timeout: the child is bounded by the budget it is given, and
// cancelling the parent's run kills it.
func New(o Options) tool.Tool {
	o = o.withDefaults()
	return tool.NoTimeout(tool.Func(Name, "Delegate a self-contained task to a subagent: a fresh Delta run with its own empty conversation, "+
		"the same workspace and your remaining budget. It cannot spawn further subagents. Returns the subagent's final answer. "+
		"Its file and DELTA.md changes are real; do not run it on files you are editing at the same time.", false,
		func(ctx context.Context, c tool.Call, p params) (tool.Result, error) { return o.run(ctx, c, p) }))
}

func (o Options) run(ctx context.Context, c tool.Call, p params) (tool.Result, error) {
	task := strings.TrimSpace(p.Task)
	if task == "" {
		return tool.Errorf("task is empty: give the subagent a self-contained task"), nil
	}
	tokens, cost, held, release, err := o.claim(ctx, c.RunID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("spawn_subagent: remaining budget of run %s: %w", c.RunID, err)
	}
	defer release()
	if tokens <= 0 || cost <= 0 {
		return tool.Errorf("no budget left for a subagent (%d tokens, $%.4f remaining%s)", max(tokens, 0), max(cost, 0), held.busy()), nil
	}
	ch, err := o.spawn(ctx, Name, c.RunID, task, tokens, cost)
	if err != nil {
		return tool.Result{}, err
	}
	text := clip(ch.text, o.ResultMax)
	if ch.failed() {
		return tool.Errorf("the subagent failed (%v): %s\n%s", ch.exitErr, text, clip(ch.stderr, 2000)), nil
	}
	if text == "" {
		return tool.Text("(the subagent finished without a final answer)"), nil
	}
	return tool.Text(text), nil
}
