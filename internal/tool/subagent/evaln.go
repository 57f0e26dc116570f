package subagent

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/tool"
)

// EvalName is the eval_n tool's name.
const EvalName = "eval_n"

// The variant count a call may ask for, and what it gets by default.
const (
	MinVariants     = 2
	MaxVariants     = 4
	DefaultVariants = 3
)

// previewMax is the length of a losing variant's one-line preview.
const previewMax = 160

type evalParams struct {
	Task     string `json:"task" jsonschema:"the self-contained task every variant gets; they see the same workspace but none of this conversation"`
	N        *int   `json:"n,omitempty" jsonschema:"how many variants to run at once, 2 to 4 (default 3)"`
	Criteria string `json:"criteria,omitempty" jsonschema:"what the judge should prefer when it picks the best variant (default: correctness, completeness and clarity)"`
}

// NewEvalN returns the eval_n tool: N concurrent `delta run` children on
// one task, each with an equal share of the parent's remaining budget, then
// one judging call (Options.Judge) that picks the best answer. It is not
// read-only: the children can write the shared workspace. Like
// spawn_subagent it has no tool timeout: the children's budget shares bound it.
func NewEvalN(o Options) tool.Tool {
	o = o.withDefaults()
	return tool.NoTimeout(tool.Func(EvalName, fmt.Sprintf("Run the same self-contained task as %d to %d independent subagents at once (default %d), "+
		"then have a judge model pick the best answer by your criteria. Each variant is a fresh Delta run with its own empty "+
		"conversation, the same workspace and an equal share of your remaining budget; variants cannot delegate further. "+
		"Returns the winning answer in full, the judge's reason and a one-line preview of each other variant. "+
		"Use it only for non-mutating work such as drafting or analysis: the variants run concurrently in one workspace, "+
		"so never ask them to edit files, least of all the same files.", MinVariants, MaxVariants, DefaultVariants), false,
		func(ctx context.Context, c tool.Call, p evalParams) (tool.Result, error) { return o.evalN(ctx, c, p) }))
}

// variant is one child's outcome under its label.
type variant struct {
	label   string
	text    string
	failure string // why it cannot win; "" for a usable answer
	charged model.Usage
}

func (o Options) evalN(ctx context.Context, c tool.Call, p evalParams) (tool.Result, error) {
	task := strings.TrimSpace(p.Task)
	if task == "" {
		return tool.Errorf("task is empty: give the variants a self-contained task"), nil
	}
	n := DefaultVariants
	if p.N != nil {
		n = *p.N
	}
	if n < MinVariants || n > MaxVariants {
		return tool.Errorf("n is %d: run %d to %d variants", n, MinVariants, MaxVariants), nil
	}
	// Held until the judge is charged, so a delegation made meanwhile
	// gets only what this call does not hold.
	tokens, cost, held, release, err := o.claim(ctx, c.RunID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("eval_n: remaining budget of run %s: %w", c.RunID, err)
	}
	defer release()
	// Equal shares, rounded down, so the children together can never spend
	// more than the parent had left.
	shareTokens, shareCost := tokens/int64(n), cost/float64(n)
	if shareTokens <= 0 || shareCost <= 0 {
		return tool.Errorf("no budget left for %d variants (%d tokens, $%.4f remaining%s)", n, max(tokens, 0), max(cost, 0), held.busy()), nil
	}

	vs := make([]variant, n)
	var wg sync.WaitGroup
	for i := range vs {
		vs[i].label = string(rune('A' + i))
		wg.Go(func() {
			ch, err := o.spawn(ctx, EvalName, c.RunID, task, shareTokens, shareCost)
			vs[i].text, vs[i].charged = ch.text, ch.charged
			switch {
			case err != nil:
				vs[i].failure = "could not run: " + err.Error()
			case ch.failed():
				vs[i].failure = fmt.Sprintf("failed (%v)", ch.exitErr)
				if line := preview(lastLine(ch.stderr)); line != "" {
					vs[i].failure += ": " + line
				}
			case ch.text == "":
				vs[i].failure = "finished without an answer"
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return tool.Result{}, fmt.Errorf("eval_n: %w", ctx.Err())
	}

	var ok []variant
	var spent model.Usage
	for _, v := range vs {
		spent = spent.Add(v.charged)
		if v.failure == "" {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "every one of the %d variants failed:", n)
		for _, v := range vs {
			fmt.Fprintf(&b, "\n- %s: %s", v.label, v.failure)
		}
		return tool.Errorf("%s", b.String()), nil
	}
	if len(ok) == 1 {
		return tool.Text(o.renderWinner(vs, ok[0], "it is the only variant that finished, so no judging was needed")), nil
	}
	verdict, why := o.judge(ctx, c.RunID, task, p.Criteria, ok, tokens-spent.Fresh(), cost-spent.CostUSD)
	if ctx.Err() != nil {
		return tool.Result{}, fmt.Errorf("eval_n: %w", ctx.Err())
	}
	if why != "" {
		return tool.Text(o.renderAll(vs, ok, why)), nil
	}
	for _, v := range ok {
		if v.label == verdict.Winner {
			return tool.Text(o.renderWinner(vs, v, verdict.Reason)), nil
		}
	}
	// ParseVerdict only returns shown labels; this is a guard, not a path.
	return tool.Text(o.renderAll(vs, ok, "the judge named no finished variant")), nil
}

// judge asks the judge to pick among ok and charges its usage to the run,
// bounded by what the run has left (the lower of the store's figure and
// this call's own arithmetic). why says why there is no verdict ("" when
// there is one).
func (o Options) judge(ctx context.Context, runID, task, criteria string, ok []variant, tokens int64, cost float64) (Verdict, string) {
	if o.Judge == nil {
		return Verdict{}, "no judge model is configured"
	}
	if t, c, err := o.Remaining(ctx, runID); err == nil {
		tokens, cost = min(tokens, t), min(cost, c)
	}
	if tokens <= 0 || cost <= 0 {
		return Verdict{}, "the variants used up the budget, so there was none left for the judge"
	}
	labels := make([]string, len(ok))
	texts := make([]string, len(ok))
	for i, v := range ok {
		labels[i], texts[i] = v.label, v.text
	}
	resp, err := o.Judge(ctx, judgeRequest(task, criteria, labels, texts))
	if err != nil {
		o.Logger.Warn("eval_n: judge call failed", "run", runID, "err", err)
		return Verdict{}, "the judge call failed: " + clip(err.Error(), 300)
	}
	if resp.Usage != (model.Usage{}) {
		if err := o.Charge(context.WithoutCancel(ctx), runID, Bound(resp.Usage, tokens, cost)); err != nil {
			o.Logger.Warn("eval_n: charge judge usage", "run", runID, "err", err)
		}
	}
	v, err := ParseVerdict(resp.Text, labels)
	if err != nil {
		o.Logger.Warn("eval_n: unusable judge answer", "run", runID, "err", err, "answer", clip(resp.Text, 500))
		return Verdict{}, "the judge's answer was unusable (" + err.Error() + ")"
	}
	return v, ""
}

// renderWinner is the result with a winner: its text in full (up to
// ResultMax), the reason, then a line for every other variant.
func (o Options) renderWinner(all []variant, win variant, reason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "eval_n ran %d variants; the winner is %s.\nReason: %s\n\n=== Variant %s (winner) ===\n%s\n",
		len(all), win.label, reason, win.label, clip(win.text, o.ResultMax))
	b.WriteString("\nThe other variants:\n")
	for _, v := range all {
		switch {
		case v.label == win.label:
		case v.failure != "":
			fmt.Fprintf(&b, "- %s: %s\n", v.label, v.failure)
		default:
			fmt.Fprintf(&b, "- %s: %s\n", v.label, preview(v.text))
		}
	}
	return b.String()
}

// renderAll is the result without a judgement: every finished variant,
// each clipped to its share of ResultMax, and the failed ones.
func (o Options) renderAll(all, ok []variant, why string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "eval_n ran %d variants, but no judgement was available: %s. "+
		"Every variant that finished follows; compare them yourself.\n", len(all), why)
	each := max(o.ResultMax/len(ok), 1)
	for _, v := range ok {
		fmt.Fprintf(&b, "\n=== Variant %s ===\n%s\n", v.label, clip(v.text, each))
	}
	for _, v := range all {
		if v.failure != "" {
			fmt.Fprintf(&b, "\nVariant %s %s\n", v.label, v.failure)
		}
	}
	return b.String()
}

// lastLine is the last non-blank line of s: where `delta run` says why it failed.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n\t ")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// preview is s on one line, cut to previewMax runes.
func preview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= previewMax {
		return s
	}
	return string(r[:previewMax]) + "…"
}
