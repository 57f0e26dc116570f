package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// evalTask marks the variants' task, so one script can play the parent, the
// two children and the judge.
const evalTask = "EVAL-TASK: write a slogan for the otter survey"

// isJudge recognises eval_n's judging call by its system prompt.
func isJudge(req modeltest.ChatRequest) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Content, "You are the judge for eval_n.")
}

func isVariant(req modeltest.ChatRequest) bool {
	for _, m := range req.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "EVAL-TASK") {
			return true
		}
	}
	return false
}

func TestEvalNThroughDeltaRun(t *testing.T) {
	var variants atomic.Int32
	script := func(req modeltest.ChatRequest) modeltest.Reply {
		switch {
		case isJudge(req): // checked first: the judge's prompt holds the task too
			return modeltest.Reply{Text: "Verdict:\n```json\n{\"winner\":\"B\",\"reason\":\"B scans best\"}\n```",
				Usage: &modeltest.Usage{PromptTokens: 300, CompletionTokens: 30, Cost: modeltest.USD(0.003)}}
		case isVariant(req):
			n := variants.Add(1)
			return modeltest.Reply{Text: "Slogan number " + string(rune('0'+n)) + ": count every whisker",
				Usage: &modeltest.Usage{PromptTokens: 1000, CompletionTokens: 200, Cost: modeltest.USD(0.01)}}
		}
		u := &modeltest.Usage{PromptTokens: 100, CompletionTokens: 10, Cost: modeltest.USD(0.001)}
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return modeltest.Reply{Text: "parent saw: " + m.Content, Usage: u}
			}
		}
		args, _ := json.Marshal(map[string]any{"task": evalTask, "n": 2, "criteria": "short and memorable"})
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_eval", Name: "eval_n", Arguments: string(args)}}, Usage: u}
	}
	fake := startScript(t, script)
	fake.RequireKey("fake-key")
	out, stderr := runOK(t, deltaRun(t, fake, "compare two slogans"))

	var judges, children int
	var judgePrompt string
	for _, req := range fake.Requests() {
		switch {
		case isJudge(req):
			judges++
			judgePrompt = req.Messages[len(req.Messages)-1].Content
			if req.Model != "anthropic/claude-haiku-4.5" || len(req.Tools) != 0 {
				t.Errorf("judge asked model %q with %d tools; want the utility model and no tools", req.Model, len(req.Tools))
			}
		case isVariant(req):
			children++
			for _, tl := range req.Tools {
				if tl.Name == "eval_n" || tl.Name == "spawn_subagent" {
					t.Errorf("a variant was offered %s: nesting must stop at one level", tl.Name)
				}
			}
		}
	}
	if judges != 1 || children != 2 {
		t.Fatalf("judge calls = %d, variant calls = %d; want 1 and 2\nstderr:\n%s", judges, children, stderr)
	}
	if !strings.Contains(judgePrompt, "short and memorable") {
		t.Errorf("the judge did not get the criteria:\n%s", judgePrompt)
	}
	// The parent's answer quotes the tool result: B's text, as the judge saw it.
	b := regexp.MustCompile(`=== Variant B ===\n(.*)\n`).FindStringSubmatch(judgePrompt)
	if b == nil {
		t.Fatalf("the judge was not shown a variant B:\n%s", judgePrompt)
	}
	if !strings.Contains(string(out), "parent saw: eval_n ran 2 variants; the winner is B") ||
		!strings.Contains(string(out), "=== Variant B (winner) ===\n"+b[1]) || !strings.Contains(string(out), "B scans best") {
		t.Errorf("the winner did not come back to the parent; stdout:\n%s", out)
	}

	got := usageMarker(t, out)
	// Two parent calls (100/10/$0.001 each), two variants (1000/200/$0.01
	// each) and the judge (300/30/$0.003).
	if got.Input != 2500 || got.Output != 450 || got.Cost < 0.0249 || got.Cost > 0.0251 {
		t.Errorf("parent usage = %+v, want 2500 in, 450 out, $0.025 (both variants and the judge charged)", got)
	}
}
