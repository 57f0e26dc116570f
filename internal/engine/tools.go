package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/clip"
	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// runTools executes every call of one turn concurrently; each result
// commits as soon as its call ends.
func (x *execution) runTools(ctx context.Context, calls []model.ToolCall) {
	one := func(c model.ToolCall) {
		res, fault := x.invoke(ctx, c)
		if ctx.Err() != nil {
			return // cancelled or shutting down: the intent stays open and is settled by the caller or on resume
		}
		x.commitResult(ctx, c, res, fault)
	}
	if len(calls) == 1 {
		// A lone call runs on the loop's goroutine: the loop would only
		// wait for it, and a goroutine's start and wake-up are two
		// scheduler hand-offs on every tool turn.
		one(calls[0])
		return
	}
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(c)
		}()
	}
	wg.Wait()
}

// toolFault is a tool call that failed by itself (an infrastructure error,
// a panic, its timeout) rather than answering with an error result: the
// operator sees it as an error event beside the call's tool.result.
type toolFault struct{ kind, msg string }

// Kinds of tool fault, the error.type of their error events.
const (
	faultTool    = "tool"
	faultPanic   = "tool_panic"
	faultTimeout = "tool_timeout"
)

// invoke runs one tool call with the tool timeout, turning every failure,
// including a panic, into a result the model sees.
func (x *execution) invoke(ctx context.Context, c model.ToolCall) (res tool.Result, fault *toolFault) {
	t, ok := x.e.o.Tools.Get(c.Name)
	if !ok || !x.allowed(c.Name) {
		return tool.Errorf("no tool named %q is available in this run", c.Name), nil
	}
	if !slices.Contains(x.offered, c.Name) {
		// Progressive loading: the run may use this tool, but it was not
		// offered this turn, so the model guessed its name. Failing closed
		// keeps activation in one place (search_tools, which persists it)
		// and the refusal is recorded like any tool error.
		if c.Name == searchTool {
			return tool.Errorf("%s is not offered in this run: every tool it may use is already loaded; call one of them directly", searchTool), nil
		}
		return tool.Errorf("%s is not loaded in this run, so it did not run. Call %s with words describing what you need "+
			"to find and activate it; it is offered from the next turn on", c.Name, searchTool), nil
	}
	// The placeholder guard holds whatever DELTA_TOOL_ARG_MAX_BYTES is now:
	// a history bounded before it was turned off still carries placeholders.
	// It applies to read-only tools too, so the rule the model learns is one.
	if hasPlaceholder(c.Arguments) {
		return tool.Errorf("the arguments contain a %s…] placeholder. That marks a value Delta elided from the conversation history "+
			"to save context after an earlier call succeeded; the original is kept in the run journal and is not this text. "+
			"%s did not run: call it again with the real content written out in full, never the placeholder.", elidedPrefix, c.Name), nil
	}
	if x.e.o.ToolTimeout > 0 && !isUntimed(t) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, x.e.o.ToolTimeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			x.logger.Error("tool panicked", event.KeyTool, c.Name, "panic", p, "stack", string(debug.Stack()))
			res = tool.Errorf("tool %s failed with an internal error", c.Name)
			fault = &toolFault{kind: faultPanic, msg: fmt.Sprintf("tool %s panicked: %v", c.Name, p)}
		}
	}()
	if x.e.o.CallContext != nil {
		if tok, ok := x.e.tokens.Load(x.run.ID); ok {
			ctx = x.e.o.CallContext(ctx, tok.(string))
		}
	}
	start := time.Now()
	res, err := t.Run(ctx, tool.Call{RunID: x.run.ID, SessionID: x.run.SessionID, Owner: x.run.Owner, CallID: c.ID, Args: c.Arguments})
	crashpoint.Hit(crashpoint.MidTool)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res = tool.Errorf("tool %s timed out after %s", c.Name, time.Since(start).Round(time.Millisecond))
			return res, &toolFault{kind: faultTimeout, msg: res.Text}
		}
		x.logger.Warn("tool error", event.KeyTool, c.Name, "err", err)
		res = tool.Errorf("tool %s failed: %v", c.Name, err)
		return res, &toolFault{kind: faultTool, msg: res.Text}
	}
	return res, nil
}

// searchTool is the progressive-loading tool (package tool/search) that a
// refused call outside the resident set is pointed to.
const searchTool = "search_tools"

// untimed is a tool that bounds itself (a coding CLI, a delegated child with
// its own budget and model-call limits); the engine gives it no tool
// timeout, only the run's own cancellation.
type untimed interface{ Untimed() bool }

func isUntimed(t tool.Tool) bool {
	u, ok := t.(untimed)
	return ok && u.Untimed()
}

func (x *execution) allowed(name string) bool {
	for _, n := range x.e.o.ToolNames(x.req.Profile) {
		if n == name {
			return true
		}
	}
	return false
}

// commitResult spills an oversized result, then journals it with its
// conversation message. A call that succeeded has its stored arguments
// bounded (ToolArgMax) in the same transaction; a failed one keeps them
// whole, so the model can see and repair exactly what it sent.
func (x *execution) commitResult(ctx context.Context, c model.ToolCall, res tool.Result, fault *toolFault) {
	callID, name := c.ID, c.Name
	text := x.e.o.Redact(res.Text)
	if x.e.o.Spill != nil {
		inline, err := x.e.o.Spill.Spill(x.run.ID, callID, text, x.e.o.ResultMax)
		if err != nil {
			x.logger.Warn("spill result", event.KeyTool, name, "err", err)
			inline = truncateRunes(text, x.e.o.ResultMax)
		}
		text = inline
	}
	data := map[string]any{
		event.KeyCallID: callID, event.KeyName: name, event.KeyIsError: res.IsError, event.KeyChars: len([]rune(res.Text)), event.KeyPreview: clip.Bytes(text, 200),
	}
	var bound json.RawMessage
	if !res.IsError && x.e.o.ToolArgMax > 0 {
		if b, changed := boundArgs(c.Arguments, x.e.o.ToolArgMax, callID); changed {
			bound = b
			data[event.KeyArgsBytes], data[event.KeyArgsStoredBytes] = len(c.Arguments), len(b)
		}
	}
	evs := []event.Event{x.event(event.ToolResult, data)}
	if fault != nil {
		evs = append(evs, x.event(event.Error, map[string]any{
			event.KeyErrorType: fault.kind, event.KeyErrorMessage: truncateRunes(x.e.o.Redact(fault.msg), 500),
			event.KeyCallID: callID, event.KeyName: name,
		}))
	}
	tr := store.ToolResult{
		RunID: x.run.ID, SessionID: x.run.SessionID, CallID: callID, Name: name, Text: text, IsError: res.IsError,
		BoundArgs: bound, Events: evs,
	}
	msg := model.Message{Role: model.RoleTool, Content: text, ToolCallID: callID, Name: name}
	if x.holdable(name) {
		// A read-only call may run again after a crash, so its result
		// waits for the next checkpoint's transaction; the next request
		// carries it as a restart would read it.
		if bound != nil {
			x.rebindArgs(callID, bound)
		}
		x.holdResult(tr, msg)
		return
	}
	// A call with effects commits now, with whatever is held.
	heldResults, heldEvents := x.takeHeld()
	written, err := x.e.o.Store.CommitResults(ctx, append(heldResults, tr), heldEvents)
	if err != nil {
		x.restoreHeld(heldResults, heldEvents)
		x.logger.Error("commit tool result", event.KeyTool, name, "err", err)
		return
	}
	x.publish(written...)
	if tr.Events[0].ID == 0 {
		return // already done: its first result stands (IDs are filled in place)
	}
	if bound != nil {
		x.rebindArgs(callID, bound)
	}
	x.remember(msg)
	crashpoint.Hit(crashpoint.AfterResult)
}

// rebindArgs puts a call's bounded arguments on its assistant message in the
// in-memory history, as CommitToolResult did in the database, so the next
// turn sends what a restart would read. The message's call list is copied,
// never written in place: the turn's own slice may still be read.
func (x *execution) rebindArgs(callID string, args json.RawMessage) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := len(x.history) - 1; i >= 0; i-- {
		m := &x.history[i]
		if m.Role != model.RoleAssistant {
			continue
		}
		for j, c := range m.ToolCalls {
			if c.ID == callID {
				calls := slices.Clone(m.ToolCalls)
				calls[j].Arguments = args
				m.ToolCalls = calls
				if i < len(x.sizes) { // measured before: measure again
					n := messageBytes(m)
					x.histBytes += n - x.sizes[i]
					x.sizes[i] = n
				}
				return
			}
		}
	}
}

// recoverCalls settles the calls an earlier attempt journalled but never
// finished: read-only ones run again, the others get an [interrupted] result.
func (x *execution) recoverCalls(ctx context.Context) error {
	if x.run.Attempts <= 1 {
		// The first attempt: only an attempt's own execution journals a
		// call, so there is nothing to read.
		x.journalled = map[string]bool{}
		return nil
	}
	journal, err := x.e.o.Store.Journal(ctx, x.run.ID)
	if err != nil {
		return err
	}
	x.journalled = make(map[string]bool, len(journal))
	for id := range journal {
		x.journalled[id] = true
	}
	var rerun []model.ToolCall
	for _, j := range journal {
		if j.Done {
			continue // replayed from the journal through the conversation; never re-executed
		}
		if j.ReadOnly {
			rerun = append(rerun, model.ToolCall{ID: j.CallID, Name: j.Name, Arguments: j.Args})
			continue
		}
		x.commitResult(ctx, model.ToolCall{ID: j.CallID, Name: j.Name, Arguments: j.Args}, tool.Result{IsError: true, Text: fmt.Sprintf(
			"[interrupted] %s was started but the daemon stopped before it reported a result. It may or may not have taken effect: verify the current state before repeating it.", j.Name)}, nil)
	}
	if len(rerun) > 0 {
		x.runTools(ctx, rerun)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The conversation is read from the database after recovery: what the
	// reruns held goes there now.
	if err := x.flush(ctx); err != nil {
		return failure{kind: failStore, err: fmt.Errorf("write recovered results: %w", err)}
	}
	return nil
}

// settleOpenCalls gives every still-open intent of the run a final result
// (used on cancel, so the session's history stays well formed).
func (x *execution) settleOpenCalls(ctx context.Context, text string) {
	// A held result is a call's real answer: it is written, not settled.
	if err := x.flush(ctx); err != nil {
		x.logger.Warn("write held results", "err", err)
	}
	journal, err := x.e.o.Store.Journal(ctx, x.run.ID)
	if err != nil {
		return
	}
	for _, j := range journal {
		if !j.Done {
			x.commitResult(ctx, model.ToolCall{ID: j.CallID, Name: j.Name, Arguments: j.Args}, tool.Result{IsError: true, Text: text}, nil)
		}
	}
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
