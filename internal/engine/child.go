package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// ExploreSteps is how many model calls one research child may make.
const ExploreSteps = 8

// childExcluded are tools a research child never gets even when they are
// flagged read-only. The read-only flag means "safe to replay", not "changes
// nothing": search_tools writes activations for the PARENT run (the child
// would widen the parent's resident set), todo replaces the parent session's
// plan, and the delegation tools would nest a second level.
var childExcluded = map[string]bool{
	"research":       true,
	"spawn_subagent": true,
	"eval_n":         true,
	"search_tools":   true,
	"todo":           true,
	"remember":       true,
}

// Finding is what one research child found.
type Finding struct {
	// Text is the child's final answer, redacted. When the child stopped
	// early it is the latest text it wrote (possibly empty).
	Text string
	// Summary is the closing "Summary:" section of Text, or all of Text
	// when the child wrote none.
	Summary string
	// Note says why the child stopped before answering ("" when it answered).
	Note string
	// Steps is the number of model calls the child made.
	Steps int
	// Usage is what the child spent; every call was charged to the parent
	// run as it completed.
	Usage model.Usage
}

// Explore answers question with an in-process, read-only child loop on
// behalf of the running run parentRunID (the research tool).
//
// The child is built from the parent's system spine over its own tool list:
// the parent's resident tools admitted only when they say ReadOnly() and are
// not delegation, loader or plan tools (childExcluded). Its conversation
// lives in memory only — nothing is written to the sessions or messages
// tables — and is bounded: at most ExploreSteps model calls, each tool
// result truncated at Options.ResultMax. Every model call is charged to the
// parent run at once (store.AddUsage), and the child stops when the parent's
// token or dollar budget is spent. Steps are not shared: a step is a
// main-loop model call, so a child's calls never count as the parent's steps.
//
// An early stop (step cap, budget, an unshrinkable context) is a Finding
// with a Note, not an error. The error is for a parent that is not running,
// a failed model call or a cancelled ctx; the Finding then still holds what
// the child had.
func (e *Engine) Explore(ctx context.Context, parentRunID, question string) (Finding, error) {
	question = strings.TrimSpace(question)
	if question == "" {
		return Finding{}, errors.New("explore: empty question")
	}
	run, err := e.o.Store.Run(ctx, parentRunID)
	if err != nil {
		return Finding{}, fmt.Errorf("explore for run %s: %w", parentRunID, err)
	}
	if run.Status != store.StatusRunning {
		return Finding{}, fmt.Errorf("explore for run %s: the run is %s, not running: %w", parentRunID, run.Status, store.ErrAlreadyFinal)
	}
	var req Request
	if err := json.Unmarshal(run.Request, &req); err != nil {
		return Finding{}, fmt.Errorf("explore for run %s: read request: %w", parentRunID, err)
	}
	c := &child{
		e: e, run: run, req: req,
		logger: e.o.Logger.With(event.KeyRun, parentRunID, "research", true),
	}
	c.admit(ctx)
	return c.loop(ctx, question)
}

// child is the state of one research child.
type child struct {
	e      *Engine
	run    store.Run // the parent, as read at the start
	req    Request   // the parent's request
	logger *slog.Logger
	names  map[string]bool // admitted tools
	specs  []model.ToolSpec
	found  Finding
	latest string // the latest non-empty text the child wrote
}

// admit picks the child's tools: positive, fail-closed admission on the
// tool's own read-only flag over what the parent is offered this turn.
func (c *child) admit(ctx context.Context) {
	e := c.e
	var names []string
	if e.o.Resident != nil {
		names = e.o.Resident(ctx, c.run.ID, c.req.Profile)
	} else {
		names = e.o.ToolNames(c.req.Profile)
	}
	c.names = make(map[string]bool, len(names))
	for _, n := range names {
		t, ok := e.o.Tools.Get(n)
		if !ok || childExcluded[n] || !t.ReadOnly() {
			continue
		}
		c.names[n] = true
		c.specs = append(c.specs, t.Spec())
	}
}

// childPrompt frames the question as the child's only user message.
func childPrompt(question string) string {
	return "You are a research child of the agent that wrote the question below. Answer this question; you cannot change anything. " +
		"Your tools only look things up: you cannot write, edit, move or delete files, run code, remember, or delegate. " +
		fmt.Sprintf("You have at most %d steps, so look up what the question needs and no more.\n\n", ExploreSteps) +
		"Question:\n" + question + "\n\n" +
		"Write your answer with the facts you found and where you found them (paths, URLs). End with a concise summary: " +
		"a last section that starts with the line \"Summary:\" and states the answer in a few sentences. " +
		"The agent reads that summary first and your full answer only if it needs more."
}

// lastStepNudge rides the child's final allowed call.
const lastStepNudge = "This is your last step: do not call any tool. Answer now from what you have found, ending with the \"Summary:\" section."

func (c *child) loop(ctx context.Context, question string) (Finding, error) {
	e := c.e
	system := e.o.Prompt.System(e.o.Prompt.ReadSelf(), c.specs)
	budget := e.o.Budget(c.req.Profile)
	modelName := ""
	if len(e.o.Models) > 0 {
		modelName = e.o.Models[0]
	}
	msgs := []model.Message{{Role: model.RoleUser, Content: childPrompt(question)}}
	for step := 1; step <= ExploreSteps; step++ {
		if err := ctx.Err(); err != nil {
			return c.result(""), err
		}
		if note, err := c.checkParentBudget(ctx, budget); err != nil || note != "" {
			return c.result(note), err
		}
		call := append([]model.Message(nil), msgs...)
		if turn := e.o.Prompt.Turn(modelName, e.o.Now(), c.req.Context); turn != "" {
			call = append(call, model.Message{Role: model.RoleUser, Content: TurnBlockPrefix + "\n" + turn + "\n</delta:turn>"})
		}
		if step == ExploreSteps {
			call = append(call, model.Message{Role: model.RoleUser, Content: lastStepNudge})
		}
		mreq := model.Request{Model: modelName, System: system, Messages: call, Tools: c.specs, ReasoningEffort: c.req.ReasoningEffort}
		resp, err := c.call(ctx, mreq)
		if errors.Is(err, model.ErrContextOverflow) {
			if reduced, ok := elideLargestToolResult(mreq.Messages); ok {
				c.logger.Warn("research child exceeded the context window; eliding its largest tool result and retrying once")
				mreq.Messages = reduced
				resp, err = c.call(ctx, mreq)
			}
			if errors.Is(err, model.ErrContextOverflow) {
				return c.result("stopped: the child's conversation no longer fits the model's context window"), nil
			}
		}
		if err != nil {
			return c.result(""), err
		}
		if t := strings.TrimSpace(resp.Text); t != "" {
			c.latest = resp.Text
		}
		if len(resp.ToolCalls) == 0 {
			return c.result(""), nil
		}
		if step == ExploreSteps {
			break
		}
		for i, tc := range resp.ToolCalls {
			// Keep what the model sent replayable: the wire expects JSON.
			if !json.Valid(tc.Arguments) {
				resp.ToolCalls[i].Arguments, _ = json.Marshal(string(tc.Arguments))
			}
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Extra: resp.Extra})
		msgs = append(msgs, c.runTools(ctx, resp.ToolCalls)...)
	}
	return c.result(fmt.Sprintf("stopped: the child reached its limit of %d model calls before a final answer; this is the latest text it wrote", ExploreSteps)), nil
}

// result is the Finding so far, with note saying why it stopped early.
func (c *child) result(note string) Finding {
	f := c.found
	f.Text = c.e.o.Redact(c.latest)
	f.Summary = summaryOf(f.Text)
	f.Note = note
	return f
}

// checkParentBudget re-reads the parent run (its own calls and every
// sibling child charge it concurrently) and returns a note once its token
// or dollar budget is spent. A finished parent is an error: there is
// nobody left to answer and nothing to charge.
func (c *child) checkParentBudget(ctx context.Context, b Budget) (string, error) {
	r, err := c.e.o.Store.Run(ctx, c.run.ID)
	if err != nil {
		return "", fmt.Errorf("explore: read run %s: %w", c.run.ID, err)
	}
	if r.Status != store.StatusRunning {
		return "", fmt.Errorf("explore: run %s is %s: %w", r.ID, r.Status, store.ErrAlreadyFinal)
	}
	var over []string
	if r.Usage.Fresh() >= b.Tokens {
		over = append(over, fmt.Sprintf("%d/%d tokens", r.Usage.Fresh(), b.Tokens))
	}
	if r.Usage.CostUSD >= b.CostUSD {
		over = append(over, fmt.Sprintf("$%.4f/$%.2f", r.Usage.CostUSD, b.CostUSD))
	}
	if len(over) == 0 {
		return "", nil
	}
	return "stopped: the run's budget is exhausted (" + strings.Join(over, ", ") + ")", nil
}

// call makes one child model call through the engine's provider, which owns
// retries, fallback and failover, and charges its usage to the parent at
// once. Nothing streams: the child's text is not the parent's output.
func (c *child) call(ctx context.Context, req model.Request) (model.Response, error) {
	e := c.e
	stream := model.Stream{OnRetry: func(r model.Retry) {
		c.logger.Info("research child model retry", "reason", r.Reason, "model", r.Model, "next_model", r.NextModel, "attempt", r.Attempt, "status", r.Status)
	}}
	resp, err := e.o.Provider.Complete(ctx, req, stream)
	if ctx.Err() != nil {
		return model.Response{}, ctx.Err()
	}
	if err != nil {
		return model.Response{}, fmt.Errorf("research model call: %w", err)
	}
	e.price(&resp, req.Model, c.logger)
	c.found.Steps++
	c.found.Usage = c.found.Usage.Add(resp.Usage)
	// Charged even when ctx ends now: the provider has billed the call.
	if err := e.o.Store.AddUsage(context.WithoutCancel(ctx), c.run.ID, resp.Usage); err != nil {
		return model.Response{}, fmt.Errorf("charge research usage: %w", err)
	}
	return resp, nil
}

// runTools runs one turn's calls concurrently and returns their results
// as tool messages, in call order.
func (c *child) runTools(ctx context.Context, calls []model.ToolCall) []model.Message {
	out := make([]model.Message, len(calls))
	var wg sync.WaitGroup
	for i, tc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := c.invoke(ctx, tc)
			out[i] = model.Message{Role: model.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: c.cap(c.e.o.Redact(res.Text))}
		}()
	}
	wg.Wait()
	return out
}

// invoke runs one child tool call, turning a refusal, a timeout, an error
// or a panic into a result the child sees.
func (c *child) invoke(ctx context.Context, tc model.ToolCall) (res tool.Result) {
	e := c.e
	t, ok := e.o.Tools.Get(tc.Name)
	if !ok || !c.names[tc.Name] {
		return tool.Errorf("no tool named %q is available to this research child; it can only look things up with the tools it was given", tc.Name)
	}
	if e.o.ToolTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.o.ToolTimeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			c.logger.Error("research child tool panicked", event.KeyTool, tc.Name, "panic", p, "stack", string(debug.Stack()))
			res = tool.Errorf("tool %s failed with an internal error", tc.Name)
		}
	}()
	if e.o.CallContext != nil {
		if tok, ok := e.tokens.Load(c.run.ID); ok {
			ctx = e.o.CallContext(ctx, tok.(string))
		}
	}
	start := time.Now()
	res, err := t.Run(ctx, tool.Call{RunID: c.run.ID, SessionID: c.run.SessionID, Owner: c.run.Owner, CallID: tc.ID, Args: tc.Arguments})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tool.Errorf("tool %s timed out after %s", tc.Name, time.Since(start).Round(time.Millisecond))
		}
		c.logger.Warn("research child tool error", event.KeyTool, tc.Name, "err", err)
		return tool.Errorf("tool %s failed: %v", tc.Name, err)
	}
	return res
}

// cap truncates a tool result at ResultMax characters. A child does not
// spill: its context is meant to be small, and a spill file named after the
// parent's run would be listed as the parent's artifact.
func (c *child) cap(text string) string {
	n := utf8.RuneCountInString(text)
	if n <= c.e.o.ResultMax {
		return text
	}
	note := fmt.Sprintf("\n…[truncated: %d of %d characters shown; ask for a narrower part]", c.e.o.ResultMax, n)
	keep := max(c.e.o.ResultMax-utf8.RuneCountInString(note), 0)
	return truncateRunes(text, keep) + note
}

// summaryOf returns the last "Summary:" section of text (the child was
// asked to end with one), or all of text when there is none. A heading
// form ("## Summary", "**Summary:**") counts too.
func summaryOf(text string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		head := strings.TrimLeft(strings.TrimSpace(lines[i]), "#*_ ")
		if len(head) < len("summary") || !strings.EqualFold(head[:len("summary")], "summary") {
			continue
		}
		rest := strings.TrimLeft(head[len("summary"):], "*_ ")
		if rest != "" && rest[0] != ':' {
			continue // "Summary of the options" is prose, not the section
		}
		rest = strings.TrimSpace(strings.TrimLeft(strings.TrimPrefix(rest, ":"), "*_ "))
		body := strings.TrimSpace(strings.Join(append([]string{rest}, lines[i+1:]...), "\n"))
		if body != "" {
			return body
		}
	}
	return strings.TrimSpace(text)
}
