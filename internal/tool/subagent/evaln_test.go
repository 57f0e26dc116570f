package subagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/subagent"
)

// judge is a scripted judge that records what it was asked.
type judge struct {
	mu    sync.Mutex
	reqs  []model.Request
	reply func(prompt string) (model.Response, error)
}

func (j *judge) call(_ context.Context, req model.Request) (model.Response, error) {
	j.mu.Lock()
	j.reqs = append(j.reqs, req)
	j.mu.Unlock()
	return j.reply(req.Messages[0].Content)
}

func (j *judge) calls() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.reqs)
}

// prompt is the user message of the only judging call.
func (j *judge) prompt(t *testing.T) string {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.reqs) != 1 {
		t.Fatalf("judge called %d times, want once", len(j.reqs))
	}
	return j.reqs[0].Messages[0].Content
}

// picks answers every judging call with winner w.
func picks(w string, u model.Usage) func(string) (model.Response, error) {
	return func(string) (model.Response, error) {
		return model.Response{Text: "After comparing them:\n```json\n{\"winner\": \"" + w + "\", \"reason\": \"" + w + " is the most complete\"}\n```", Usage: u}, nil
	}
}

// shownVariants is what the judge's prompt holds under each label.
func shownVariants(prompt string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)=== Variant ([A-D]) ===\n(.*?)\n=== end of Variant ([A-D]) ===`).FindAllStringSubmatch(prompt, -1) {
		out[m[1]] = m[2]
	}
	return out
}

type evalEnv struct {
	exe    string
	tokens int64
	cost   float64
	judge  *judge
	ch     *charges
	log    *bytes.Buffer
}

func (e evalEnv) tool() tool.Tool {
	var judgeFn func(context.Context, model.Request) (model.Response, error)
	if e.judge != nil {
		judgeFn = e.judge.call
	}
	return subagent.NewEvalN(subagent.Options{
		Exe: e.exe, Dir: filepath.Dir(e.exe), Env: []string{"PATH=" + os.Getenv("PATH")},
		Remaining: func(context.Context, string) (int64, float64, error) { return e.tokens, e.cost, nil },
		Charge:    e.ch.charge, Judge: judgeFn,
		Logger: slog.New(slog.NewTextHandler(e.log, nil)),
	})
}

func runEval(ctx context.Context, t *testing.T, tl tool.Tool, args string) (tool.Result, error) {
	t.Helper()
	return tl.Run(ctx, tool.Call{RunID: "resp_parent", CallID: "c1", Args: json.RawMessage(args)})
}

// answering is a child that answers with its pid and the budget and depth it
// was given, then reports fixed usage.
const answering = `cat >/dev/null; echo "answer from pid $$ tokens=$DELTA_MAX_TOKENS cost=$DELTA_MAX_COST_USD depth=$DELTA_SUBAGENT_DEPTH"; ` +
	`echo 'DELTA_USAGE {"input_tokens":100,"output_tokens":20,"cache_read_tokens":0,"cost_usd":0.05}'`

func TestEvalNBadInput(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	j := &judge{reply: picks("A", model.Usage{})}
	env := evalEnv{exe: fakeDelta(t, "touch "+marker+"; echo ran"), tokens: 1000, cost: 1, judge: j, ch: &charges{}, log: &bytes.Buffer{}}
	tl := env.tool()
	for _, tc := range []struct{ name, args, want string }{
		{"no task", `{}`, `missing required field "task"`},
		{"blank task", `{"task":"  \n"}`, "task is empty"},
		{"task not a string", `{"task":3}`, `"task"`},
		{"not json", `not json`, "not valid JSON"},
		{"array", `[1]`, "must be a JSON object"},
		{"n too small", `{"task":"x","n":1}`, "n is 1"},
		{"n zero", `{"task":"x","n":0}`, "n is 0"},
		{"n too large", `{"task":"x","n":5}`, "n is 5"},
		{"n negative", `{"task":"x","n":-2}`, "n is -2"},
		{"n a string", `{"task":"x","n":"3"}`, `"n"`},
		{"n fractional", `{"task":"x","n":2.5}`, `"n"`},
		{"criteria not a string", `{"task":"x","criteria":["short"]}`, `"criteria"`},
		{"unknown field", `{"task":"x","prompt":"y"}`, `"prompt"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runEval(context.Background(), t, tl, tc.args)
			if err != nil || !res.IsError || !strings.Contains(res.Text, tc.want) {
				t.Fatalf("Run(%s) = %+v, %v; want an error result mentioning %q", tc.args, res, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a child ran for invalid arguments")
	}
	if j.calls() != 0 || len(env.ch.u) != 0 {
		t.Errorf("judge calls %d, charges %v; want none", j.calls(), env.ch.u)
	}
}

func TestEvalNSplitsBudgetChargesAndReturnsTheJudgesPick(t *testing.T) {
	j := &judge{reply: picks("B", model.Usage{InputTokens: 1000, OutputTokens: 10, CostUSD: 1})}
	env := evalEnv{exe: fakeDelta(t, answering), tokens: 900, cost: 1.5, judge: j, ch: &charges{}, log: &bytes.Buffer{}}
	res, err := runEval(context.Background(), t, env.tool(), `{"task":"draft a haiku","criteria":"prefer brevity"}`)
	if err != nil || res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	prompt := j.prompt(t)
	shown := shownVariants(prompt)
	if len(shown) != 3 {
		t.Fatalf("judge was shown %d variants, want A, B and C:\n%s", len(shown), prompt)
	}
	for _, want := range []string{"draft a haiku", "prefer brevity"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("judge prompt lacks %q:\n%s", want, prompt)
		}
	}
	// Every child got a third of the budget and depth 1.
	for l, text := range shown {
		if !strings.Contains(text, "tokens=300 cost=0.5 depth=1") {
			t.Errorf("variant %s ran with %q, want tokens=300 cost=0.5 depth=1", l, text)
		}
	}
	if !strings.Contains(res.Text, "=== Variant B (winner) ===\n"+shown["B"]+"\n") || !strings.Contains(res.Text, "B is the most complete") {
		t.Errorf("result does not carry B's answer in full and the judge's reason:\n%s", res.Text)
	}
	for _, l := range []string{"A", "C"} {
		if !strings.Contains(res.Text, "- "+l+": "+shown[l]) {
			t.Errorf("result lacks a preview of %s:\n%s", l, res.Text)
		}
	}
	// Three children of 100/20/$0.05 each, then the judge bounded to what
	// was left: 900-360 = 540 fresh tokens and $1.5-0.15 = $1.35.
	child := model.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.05}
	var kids int
	var judged []model.Usage
	for _, u := range env.ch.u {
		if u == child {
			kids++
		} else {
			judged = append(judged, u)
		}
	}
	if kids != 3 || len(judged) != 1 || judged[0].InputTokens != 540 || judged[0].OutputTokens != 0 ||
		judged[0].CostUSD < 0.9999 || judged[0].CostUSD > 1.0001 {
		t.Errorf("charges = %+v; want 3 × %+v and the judge's 1000/10/$1 bounded to 540 tokens (cost $1 is within $1.35)", env.ch.u, child)
	}
}

func TestEvalNJudgeBoundedByDollarsLeft(t *testing.T) {
	j := &judge{reply: picks("A", model.Usage{InputTokens: 10, OutputTokens: 1, CostUSD: 5})}
	env := evalEnv{exe: fakeDelta(t, answering), tokens: 10000, cost: 0.2, judge: j, ch: &charges{}, log: &bytes.Buffer{}}
	res, err := runEval(context.Background(), t, env.tool(), `{"task":"t","n":2}`)
	if err != nil || res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	var total model.Usage
	for _, u := range env.ch.u {
		total = total.Add(u)
	}
	// Children: 2 × $0.05 within their $0.1 shares; the judge gets the $0.1 left.
	if total.CostUSD > 0.2+1e-9 || total.CostUSD < 0.2-1e-9 {
		t.Errorf("total charged $%.4f, want exactly the $0.2 the parent had left: %+v", total.CostUSD, env.ch.u)
	}
}

func TestEvalNWithoutAJudgementReturnsEveryVariant(t *testing.T) {
	tests := []struct {
		name  string
		judge *judge
		why   string
	}{
		{"garbage answer", &judge{reply: func(string) (model.Response, error) {
			return model.Response{Text: "They are all lovely in their own way.", Usage: model.Usage{InputTokens: 5, OutputTokens: 5}}, nil
		}}, "unusable"},
		{"unknown label", &judge{reply: picks("E", model.Usage{})}, `named "E"`},
		{"judge fails", &judge{reply: func(string) (model.Response, error) {
			return model.Response{}, errors.New("model call: http 503: overloaded")
		}}, "http 503"},
		{"no judge", nil, "no judge model is configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := evalEnv{exe: fakeDelta(t, answering), tokens: 900, cost: 1.5, judge: tt.judge, ch: &charges{}, log: &bytes.Buffer{}}
			res, err := runEval(context.Background(), t, env.tool(), `{"task":"t"}`)
			if err != nil || res.IsError {
				t.Fatalf("Run = %+v, %v; a failed judgement must not fail the tool", res, err)
			}
			if !strings.Contains(res.Text, "no judgement was available") || !strings.Contains(res.Text, tt.why) {
				t.Errorf("result does not say why there is no judgement (%q):\n%s", tt.why, res.Text)
			}
			answers := regexp.MustCompile(`answer from pid \d+`).FindAllString(res.Text, -1)
			if len(answers) != 3 || strings.Contains(res.Text, "(winner)") {
				t.Errorf("result holds %d answers, want all 3 and no winner:\n%s", len(answers), res.Text)
			}
		})
	}
}

func TestEvalNOneChildFails(t *testing.T) {
	// The first child to claim the directory fails; the others answer.
	body := func(dir string) string {
		return `if mkdir ` + dir + `/failed 2>/dev/null; then echo partial; ` +
			`echo 'DELTA_USAGE {"input_tokens":7,"output_tokens":1,"cost_usd":0.01}'; echo "model call: http 500: broken" >&2; exit 3; fi; ` + answering
	}
	t.Run("three variants: the judge sees the two that finished", func(t *testing.T) {
		j := &judge{}
		j.reply = func(prompt string) (model.Response, error) {
			// Pick the first label shown: it must be a finished variant.
			l := regexp.MustCompile(`=== Variant ([A-D]) ===`).FindStringSubmatch(prompt)[1]
			return picks(l, model.Usage{})(prompt)
		}
		env := evalEnv{exe: fakeDelta(t, body(t.TempDir())), tokens: 900, cost: 1.5, judge: j, ch: &charges{}, log: &bytes.Buffer{}}
		res, err := runEval(context.Background(), t, env.tool(), `{"task":"t","n":3}`)
		if err != nil || res.IsError {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if shown := shownVariants(j.prompt(t)); len(shown) != 2 {
			t.Errorf("judge was shown %d variants, want the 2 that finished", len(shown))
		}
		if !regexp.MustCompile(`- [A-C]: failed \(exit status 3\): model call: http 500: broken`).MatchString(res.Text) {
			t.Errorf("result does not show the failed variant as failed:\n%s", res.Text)
		}
		if strings.Contains(res.Text, "partial") {
			t.Errorf("the failed variant's partial output is offered as an answer:\n%s", res.Text)
		}
		if len(env.ch.u) != 3 {
			t.Errorf("charges %+v; the failed child's reported usage is charged too", env.ch.u)
		}
	})
	t.Run("two variants: the survivor wins unjudged", func(t *testing.T) {
		j := &judge{reply: picks("A", model.Usage{})}
		env := evalEnv{exe: fakeDelta(t, body(t.TempDir())), tokens: 900, cost: 1.5, judge: j, ch: &charges{}, log: &bytes.Buffer{}}
		res, err := runEval(context.Background(), t, env.tool(), `{"task":"t","n":2}`)
		if err != nil || res.IsError {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if j.calls() != 0 {
			t.Errorf("judge called %d times with one finished variant", j.calls())
		}
		if !strings.Contains(res.Text, "(winner)") || !strings.Contains(res.Text, "answer from pid") || !strings.Contains(res.Text, "only variant that finished") {
			t.Errorf("result does not make the survivor the winner:\n%s", res.Text)
		}
	})
}

func TestEvalNAllFail(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"non-zero exit", `echo 'DELTA_USAGE {"input_tokens":3,"output_tokens":1,"cost_usd":0.01}'; echo "no provider" >&2; exit 2`, "failed (exit status 2): no provider"},
		{"no answer", `echo 'DELTA_USAGE {"input_tokens":3,"output_tokens":1,"cost_usd":0.01}'`, "finished without an answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &judge{reply: picks("A", model.Usage{})}
			env := evalEnv{exe: fakeDelta(t, tc.body), tokens: 900, cost: 1.5, judge: j, ch: &charges{}, log: &bytes.Buffer{}}
			res, err := runEval(context.Background(), t, env.tool(), `{"task":"t"}`)
			if err != nil || !res.IsError || !strings.Contains(res.Text, "every one of the 3 variants failed") {
				t.Fatalf("Run = %+v, %v; want an error result", res, err)
			}
			for _, l := range []string{"A", "B", "C"} {
				if !strings.Contains(res.Text, "- "+l+": "+tc.want) {
					t.Errorf("result lacks %s's failure %q:\n%s", l, tc.want, res.Text)
				}
			}
			if j.calls() != 0 || len(env.ch.u) != 3 {
				t.Errorf("judge calls %d, charges %v; want no judge and the 3 children charged", j.calls(), env.ch.u)
			}
		})
	}
}

func TestEvalNMissingMarkerChargesZeroAndLogs(t *testing.T) {
	j := &judge{reply: picks("A", model.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.01})}
	env := evalEnv{exe: fakeDelta(t, `echo "answer $$"; echo 'DELTA_USAGE {"input_tokens":"lots"}'`), tokens: 900, cost: 1.5,
		judge: j, ch: &charges{}, log: &bytes.Buffer{}}
	res, err := runEval(context.Background(), t, env.tool(), `{"task":"t","n":2}`)
	if err != nil || res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if len(env.ch.u) != 1 || env.ch.u[0] != (model.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.01}) {
		t.Errorf("charges %+v; want only the judge's", env.ch.u)
	}
	if n := strings.Count(env.log.String(), "no valid DELTA_USAGE"); n != 2 {
		t.Errorf("logged %d missing-marker warnings, want 2:\n%s", n, env.log)
	}
}

func TestEvalNNoBudget(t *testing.T) {
	j := &judge{reply: picks("A", model.Usage{})}
	// 2 tokens split 3 ways round down to 0 each.
	env := evalEnv{exe: fakeDelta(t, "echo never"), tokens: 2, cost: 1, judge: j, ch: &charges{}, log: &bytes.Buffer{}}
	res, err := runEval(context.Background(), t, env.tool(), `{"task":"t"}`)
	if err != nil || !res.IsError || !strings.Contains(res.Text, "no budget left for 3 variants") {
		t.Fatalf("Run = %+v, %v; want a no-budget error result", res, err)
	}
}

func TestEvalNCancelKillsEveryChild(t *testing.T) {
	dir := t.TempDir()
	exe := fakeDelta(t, `sleep 300 & echo $! $$ > `+dir+`/$$.tmp; mv `+dir+`/$$.tmp `+dir+`/$$.pids; wait`)
	j := &judge{reply: picks("A", model.Usage{})}
	env := evalEnv{exe: exe, tokens: 900, cost: 1.5, judge: j, ch: &charges{}, log: &bytes.Buffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := runEval(ctx, t, env.tool(), `{"task":"wait forever","n":4}`)
		done <- err
	}()
	procs := waitPIDs(8, func() []string {
		files, _ := filepath.Glob(filepath.Join(dir, "*.pids"))
		return files
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v, want context.Canceled", err)
	}
	waitDead(t, procs)
	if j.calls() != 0 {
		t.Errorf("judge called after cancel")
	}
}
