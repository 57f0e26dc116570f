package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/policy"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
	"github.com/deltaharness/delta/internal/bobby/workflow"
)

// Outcome is the CommandOutcome every command tool (flat, intent and
// command_execute) returns.
type Outcome struct {
	Status     string `json:"status"`
	CommandID  string `json:"commandId"`
	WorkflowID string `json:"workflowId"`
	SessionID  string `json:"sessionId"`
	PageID     string `json:"pageId"`
	Kind       string `json:"kind"`
	// Replayed is true when an idempotencyKey returned an earlier outcome.
	Replayed bool           `json:"replayed,omitempty"`
	Evidence map[string]any `json:"evidence"`
	Error    *ErrorInfo     `json:"error"`
	// Diagnostics (timings, deadlines) are only returned with
	// evidenceDetail:"full".
	Diagnostics map[string]any `json:"diagnostics,omitempty"`

	// echo names the scope ids the text content repeats because the next
	// call needs them and the caller did not pass them: a minted
	// workflowId, the page picked as the session's active page.
	echo []string
}

// withEcho returns a copy of o that echoes the ids scope did not give. A
// call bound by workflowHandle needs none: the handle stands for them.
func withEcho(o *Outcome, scope workflow.ScopeArgs, replayed bool) *Outcome {
	cp := *o
	cp.Replayed = replayed
	cp.echo = nil
	if scope.Handle == "" {
		if scope.WorkflowID == "" {
			cp.echo = append(cp.echo, "workflowId")
		}
		if scope.PageID == "" {
			cp.echo = append(cp.echo, "pageId")
		}
	}
	return &cp
}

func (o *Outcome) failed() bool { return o.Status != StatusCompleted }

// newID returns a random RFC 4122 version 4 UUID.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// envelope is one command after its tool arguments were read.
type envelope struct {
	Kind           string // a flat tool name (intent kinds resolved to intent_*)
	Scope          workflow.ScopeArgs
	TimeoutMs      int
	Detail         string
	IdempotencyKey string
	Input          map[string]any // kind-specific arguments (validated)
}

// scopeKeys are the envelope fields that are not part of a kind's input.
var scopeKeys = map[string]bool{
	"sessionId": true, "pageId": true, "workflowId": true, "workflowHandle": true,
	"evidenceDetail": true, "timeoutMs": true, "idempotencyKey": true,
}

// scopeArgs are the scope fields of a command tool's arguments.
type scopeArgs struct {
	WorkflowHandle string `json:"workflowHandle"`
	SessionID      string `json:"sessionId"`
	PageID         string `json:"pageId"`
	WorkflowID     string `json:"workflowId"`
	EvidenceDetail string `json:"evidenceDetail"`
	TimeoutMs      int    `json:"timeoutMs"`
	IdempotencyKey string `json:"idempotencyKey"`
}

func (s scopeArgs) scope() workflow.ScopeArgs {
	return workflow.ScopeArgs{Handle: s.WorkflowHandle, SessionID: s.SessionID, PageID: s.PageID, WorkflowID: s.WorkflowID}
}

// scopedPage is the page the scope names (a workflow handle's binding, or
// pageId with an optional sessionId) among the principal's pages.
func (c *call) scopedPage(sa scopeArgs) (enginePage, error) {
	scope, err := c.cs.wf.BindScope(sa.scope())
	if err != nil {
		return nil, scopeError(err)
	}
	_, p, te := c.g.page(c.principal.Name, scope.SessionID, scope.PageID)
	if te != nil {
		return nil, te
	}
	return p, nil
}

// takeSnapshotRepair is the repair when a tool needs a snapshot of the page
// that has none, or an older one.
func takeSnapshotRepair() *Repair {
	return &Repair{Action: "takeSnapshot", Doc: TaxonomyURI + "#" + CodeTargetNotFound}
}

// flatCommand is the handler of a flat or intent tool: it builds the
// envelope from the tool arguments (the scope fields, and the rest as the
// kind's input) and runs it.
func flatCommand(kind string) func(ctx context.Context, c *call) (any, error) {
	return func(ctx context.Context, c *call) (any, error) {
		var sa scopeArgs
		if err := c.decode(&sa); err != nil {
			return nil, err
		}
		env := envelope{
			Kind:           kind,
			Scope:          sa.scope(),
			TimeoutMs:      sa.TimeoutMs,
			Detail:         sa.EvidenceDetail,
			IdempotencyKey: sa.IdempotencyKey,
			Input:          map[string]any{},
		}
		for k, v := range c.args {
			if !scopeKeys[k] {
				env.Input[k] = v
			}
		}
		return c.g.execute(ctx, c, env)
	}
}

// commandExecuteArgs are command_execute's arguments.
type commandExecuteArgs struct {
	Envelope struct {
		Kind           string `json:"kind"`
		SessionID      string `json:"sessionId"`
		PageID         string `json:"pageId"`
		WorkflowID     string `json:"workflowId"`
		WorkflowHandle string `json:"workflowHandle"`
		TimeoutMs      int    `json:"timeoutMs"`
		EvidenceDetail string `json:"evidenceDetail"`
		// Input is kept as JSON values: it is validated against the kind's
		// schema here, then decoded into the kind's arguments.
		Input map[string]any `json:"input"`
	} `json:"envelope"`
	IdempotencyKey string `json:"idempotencyKey"`
}

// handleCommandExecute runs an explicit envelope.
func handleCommandExecute(ctx context.Context, c *call, args commandExecuteArgs) (*Outcome, error) {
	raw := args.Envelope
	kind := raw.Kind
	input := raw.Input
	if input == nil {
		input = map[string]any{}
	}
	pointer := "/envelope/input"
	if kind == "intent" {
		ik, _ := input["kind"].(string)
		tool, ok := intentKinds()[ik]
		if !ok {
			if _, present := input["kind"]; !present {
				return nil, schemaErr(pointer+"/kind", "required", "an intent envelope needs input.kind: locate, fill, complete_form or submit_and_verify")
			}
			return nil, schemaErr(pointer+"/kind", "enum", "input.kind must be locate, fill, complete_form or submit_and_verify")
		}
		kind = tool
		rest := make(map[string]any, len(input))
		for k, v := range input {
			if k != "kind" {
				rest[k] = v
			}
		}
		input = rest
	}
	t, ok := toolIndex[kind]
	if !ok || t.cmd == nil {
		return nil, schemaErr("/envelope/kind", "enum", "unknown envelope kind")
	}
	if v := validate(t.kindSchema(), input); v != nil {
		return nil, schemaErr(pointer+v.Pointer, v.Constraint, "envelope input: "+v.Error())
	}
	if raw.WorkflowHandle != "" && !t.handle {
		return nil, schemaErr("/envelope/workflowHandle", "additionalProperties", kind+" does not accept a workflowHandle")
	}
	env := envelope{
		Kind: kind,
		Scope: workflow.ScopeArgs{
			Handle: raw.WorkflowHandle, SessionID: raw.SessionID,
			PageID: raw.PageID, WorkflowID: raw.WorkflowID,
		},
		TimeoutMs:      raw.TimeoutMs,
		Detail:         raw.EvidenceDetail,
		IdempotencyKey: args.IdempotencyKey,
		Input:          input,
	}
	return c.g.execute(ctx, c, env)
}

// commandSpec describes how the pipeline treats a kind.
type commandSpec struct {
	// mutates: the command may change the page, so it invalidates the
	// retained context (even when it succeeds).
	mutates bool
	// readOnly: a failure does not invalidate the retained context.
	readOnly bool
	// waits: the caller's timeoutMs is the wait itself, not the command
	// deadline; the deadline adds waitOverhead on top.
	waits   bool
	timeout time.Duration
	// run decodes the kind's typed arguments and runs it (see command).
	run func(ctx context.Context, x *execCtx) (evidence, diag map[string]any, err error)
	// needs returns the capabilities the input requires on top of the
	// kind's own (see needing).
	needs func(input map[string]any) []policy.Capability
	// checkpoint, when it reports on, makes the command a checkpointed
	// boundary: the outcome is recorded under its commandId and attemptId
	// (the commandId minted when absent, and the outcome's commandId is
	// that one), so a retry with the same ids replays it instead of running
	// the command again.
	checkpoint func(input map[string]any) (commandID, attemptID string, on bool)
}

// A waiting command waits exactly what the caller asked for: its deadline is
// the wait plus waitOverhead, the time resolving a target, the last probe
// and the evidence need. Without timeoutMs the wait is defaultWait.
const (
	defaultWait  = 10 * time.Second
	waitOverhead = 5 * time.Second
)

// budget returns the deadline of a command given the caller's timeoutMs
// (0: not given) and, for a waiting command, the wait itself.
func (s commandSpec) budget(timeoutMs int) (command, wait time.Duration) {
	asked := time.Duration(timeoutMs) * time.Millisecond
	if !s.waits {
		if asked > 0 {
			return asked, 0
		}
		return s.timeout, 0
	}
	wait = defaultWait
	if asked > 0 {
		wait = min(asked, browser.MaxWaitTimeout)
	}
	return wait + waitOverhead, wait
}

// execCtx is what a kind's implementation gets.
type execCtx struct {
	g         *Gateway
	principal policy.Principal
	// es and ep are the session and page behind the engine seam; sess and
	// page are the same on Chromium and nil on another engine (only tools
	// declared for Chromium alone use them).
	es       engineSession
	ep       enginePage
	sess     *browser.Session
	page     *browser.Page
	input    map[string]any // the kind's input as JSON values (see command)
	detail   string
	deadline time.Time
	// wait is how long a waiting command waits (see commandSpec.budget).
	wait     time.Duration
	workflow string
}

func (x *execCtx) full() bool { return x.detail == "full" }

// scopeError maps scope-binding failures to their codes.
func scopeError(err error) *toolError {
	switch {
	case errors.Is(err, workflow.ErrBindingConflict):
		return errorf(CodeWorkflowBindingConflict, "pass either workflowHandle or sessionId/pageId/workflowId, not both")
	case errors.Is(err, workflow.ErrUnknownHandle):
		return errorf(CodeUnknownWorkflowHandle, "workflowHandle is malformed, expired, unknown or evicted")
	}
	return errorf(CodeInternal, "bind scope: %v", err)
}

// execute is the command pipeline: scope, authority, ids and deadline,
// idempotency, run, classify, retained-context bookkeeping.
func (g *Gateway) execute(ctx context.Context, c *call, env envelope) (*Outcome, error) {
	spec, ok := commandSpecs[env.Kind]
	if !ok {
		return nil, errorf(CodeUnsupported, "%s is not implemented by this runtime", env.Kind)
	}
	scope, err := c.cs.wf.BindScope(env.Scope)
	if err != nil {
		return nil, scopeError(err)
	}
	tool := g.toolByName[env.Kind]
	if missing := c.principal.Capabilities.Missing(tool.capabilities()...); len(missing) > 0 {
		return nil, errorf(CodeCapabilityDenied, "%s requires %s", env.Kind, capList(missing))
	}
	if te := g.engineRefusal(tool); te != nil {
		return nil, te
	}
	if spec.needs != nil {
		if te := c.require(spec.needs(env.Input)...); te != nil {
			return nil, te
		}
	}
	sess, page, terr := g.page(c.principal.Name, scope.SessionID, scope.PageID)
	if terr != nil {
		return nil, terr
	}
	workflowID := scope.WorkflowID
	if workflowID == "" {
		workflowID = newID()
	}
	pinned, attempt := "", ""
	if spec.checkpoint != nil {
		if cmd, att, on := spec.checkpoint(env.Input); on {
			minted := cmd == ""
			if minted {
				cmd = newID()
				env.Input["commandId"] = cmd
			}
			pinned, attempt = cmd, att
			if env.IdempotencyKey == "" {
				env.IdempotencyKey = "checkpoint:" + cmd + ":" + attempt
			}
			// A pinned checkpoint already recorded (before a restart, or in
			// another session) is replayed, not run again.
			if !minted {
				if out, te := g.replayCheckpoint(c.principal.Name, env, cmd, attempt); te != nil {
					return nil, te
				} else if out != nil {
					return withEcho(out, env.Scope, true), nil
				}
			}
		}
	}
	timeout, _ := spec.budget(env.TimeoutMs)
	run := func() *Outcome {
		out := g.runCommand(ctx, c.principal, spec, env, sess, page, workflowID, timeout)
		if pinned != "" {
			out.CommandID = pinned
			g.recordCheckpoint(c.principal.Name, env, pinned, attempt, out)
		}
		return out
	}
	if env.IdempotencyKey == "" {
		return withEcho(run(), env.Scope, false), nil
	}
	fp, _ := json.Marshal(map[string]any{"kind": env.Kind, "page": page.id(), "input": env.Input})
	sum := sha256.Sum256(fp)
	out, replayed, err := g.idem.Do(ctx, sess.id(), env.IdempotencyKey, hex.EncodeToString(sum[:]), run)
	switch {
	case errors.Is(err, workflow.ErrIdempotencyKeyReused):
		return nil, errorf(CodeIdempotencyKeyReused, "idempotencyKey was first used for a different request in this session")
	case err != nil:
		return nil, errorf(CodeNeedsReconciliation, "gave up waiting for the first call with this idempotencyKey: %v", err)
	}
	// A copy: the stored outcome is shared by every replay.
	return withEcho(out, env.Scope, replayed), nil
}

// runCommand runs one command under its deadline and classifies the result.
func (g *Gateway) runCommand(ctx context.Context, p policy.Principal, spec commandSpec, env envelope, sess engineSession, page enginePage, workflowID string, timeout time.Duration) *Outcome {
	start := g.now()
	deadline := start.Add(timeout)
	out := &Outcome{
		Status: StatusCompleted, CommandID: newID(), WorkflowID: workflowID,
		SessionID: sess.id(), PageID: page.id(), Kind: env.Kind, Evidence: map[string]any{},
	}
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	_, wait := spec.budget(env.TimeoutMs)
	x := &execCtx{g: g, principal: p, es: sess, ep: page, sess: sess.chromium(), page: page.chromium(), input: env.Input, detail: env.Detail, deadline: deadline, wait: wait, workflow: workflowID}
	evidence, diag, err := spec.run(cctx, x)
	if evidence != nil {
		out.Evidence = evidence
	}
	if err != nil {
		out.Status, out.Error = classify(err, spec, ctx)
	}
	if spec.mutates || (err != nil && !spec.readOnly) {
		g.retained.Invalidate(page.id())
	}
	if env.Detail == "full" {
		if diag == nil {
			diag = map[string]any{}
		}
		diag["startedAt"] = start.UTC().Format(time.RFC3339Nano)
		diag["durationMs"] = g.now().Sub(start).Milliseconds()
		diag["deadline"] = deadline.UTC().Format(time.RFC3339Nano)
		out.Diagnostics = diag
	}
	return out
}

// unsentError marks a failure of a command that came before it sent the
// page any input: the target did not resolve, or the control was not yet
// acted on. The page is as it was, so a timeout of it is a plain timeout
// the caller may retry, never needsReconciliation.
type unsentError struct{ err error }

func (e *unsentError) Error() string { return e.err.Error() }
func (e *unsentError) Unwrap() error { return e.err }

// unsent marks err (nil stays nil) as a failure before any input reached
// the page.
func unsent(err error) error {
	if err == nil {
		return nil
	}
	return &unsentError{err: err}
}

// classify maps a command error to a status and an error body.
func classify(err error, spec commandSpec, parent context.Context) (string, *ErrorInfo) {
	var te *toolError
	if errors.As(err, &te) {
		status := StatusFailed
		switch te.Code {
		case CodeTimeout:
			status = StatusTimedOut
		case CodeNeedsReconciliation:
			status = StatusNeedsReconciliation
		}
		return status, te.info()
	}
	code, status := CodeInternal, StatusFailed
	var dlg *browser.DialogError
	var amb *snapshot.AmbiguousError
	var evalErr *browser.EvalError
	var ue *unsentError
	isUnsent := errors.As(err, &ue)
	switch {
	case errors.As(err, &dlg):
		code = CodeDialogOpen
	case errors.As(err, &amb), errors.Is(err, snapshot.ErrAmbiguous):
		code = CodeTargetAmbiguous
	case errors.Is(err, snapshot.ErrTargetNotFound), errors.Is(err, browser.ErrNodeNotFound):
		code = CodeTargetNotFound
	case errors.Is(err, browser.ErrNotInteractable):
		code = CodeNotInteractable
	case errors.Is(err, snapshot.ErrInvalidTarget), errors.Is(err, browser.ErrInvalidArgument):
		code = CodeInvalidRequest
	case errors.Is(err, browser.ErrPolicyDenied):
		code = CodeNetworkPolicyDenied
	case errors.As(err, &evalErr):
		code = CodeJavaScriptError
	case errors.Is(err, browser.ErrBrowserCrashed):
		code = CodeBrowserCrashed
	case errors.Is(err, browser.ErrPageClosed), errors.Is(err, browser.ErrPageCrashed), errors.Is(err, browser.ErrSessionClosed):
		code = CodePageClosed
	case errors.Is(err, browser.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		code, status = CodeTimeout, StatusTimedOut
		if spec.mutates && !isUnsent {
			// A page-changing command cut off by its deadline may or may not
			// have landed: never let the agent retry it blindly.
			code, status = CodeNeedsReconciliation, StatusNeedsReconciliation
		}
	case errors.Is(err, context.Canceled) || parent.Err() != nil:
		code = CodeTimeout
		switch {
		case isUnsent:
			status = StatusTimedOut
		case spec.mutates:
			code, status = CodeNeedsReconciliation, StatusNeedsReconciliation
		}
	}
	msg := err.Error()
	switch {
	case code == CodeNeedsReconciliation:
		msg = "the command may or may not have taken effect: " + msg
	case code == CodeTimeout && isUnsent && spec.mutates:
		msg = "the command ran out of time before it sent the page anything: " + msg
	}
	return status, &ErrorInfo{Code: code, Message: msg, Repair: repairFor(code)}
}
