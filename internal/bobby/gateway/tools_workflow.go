package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/policy"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
	"github.com/deltaharness/delta/internal/bobby/workflow"
)

// retainedContext is what the runtime remembers of a page for context
// questions: the last snapshot, until something may have changed the page.
type retainedContext struct {
	snap    *snapshot.Snapshot
	takenAt time.Time
}

var errorsIs = errors.Is

// toMap converts a JSON-tagged struct to a map (for merging fields).
func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	return m
}

// startFailure is a terminal workflow_start failure: not a protocol error,
// a result with the cleanup state.
func startFailure(reason, msg string, s *browser.Session, p *browser.Page, pageClosed, sessionDeleted bool, cleanupErr error) statusMap {
	res := statusMap{
		"status":            StatusFailed,
		"reason":            reason,
		"workflowHandle":    nil,
		"sessionId":         nil,
		"pageId":            nil,
		"workflowId":        nil,
		"session":           nil,
		"page":              nil,
		"navigationOutcome": nil,
		"pageClosed":        pageClosed,
		"sessionDeleted":    sessionDeleted,
		"cleanupErrorCode":  nil,
		"error":             &ErrorInfo{Code: reason, Message: msg, Repair: repairFor(reason)},
	}
	if s != nil {
		res["sessionId"] = s.ID
		res["session"] = s.State()
	}
	if p != nil {
		res["pageId"] = p.ID
		res["page"] = p.State()
	}
	if cleanupErr != nil {
		res["cleanupErrorCode"] = lifecycleError("cleanup", cleanupErr).Code
	}
	return res
}

func handleWorkflowStart(ctx context.Context, c *call) (any, error) {
	var args struct {
		Profile         string      `json:"profile"`
		URL             *string     `json:"url"`
		ExecutionPolicy *policyArgs `json:"executionPolicy"`
	}
	if err := c.decode(&args); err != nil {
		return nil, err
	}
	ep, te := c.g.checkSessionRequest(c.principal, args.Profile, args.ExecutionPolicy)
	if te != nil {
		return nil, te
	}
	g, wf := c.g, c.cs.wf
	// Sessions closed through another interface must not hold LRU slots.
	wf.Purge(g.sessionAlive)
	res, err := wf.Reserve()
	if err != nil {
		return nil, errorf(CodeCapacityExceeded, "%d workflow starts are already in flight", workflow.DefaultMaxReservations)
	}
	committed := false
	defer func() {
		if !committed {
			res.Release()
		}
	}()

	s, te := g.createSession(ctx, c.principal, args.Profile, ep)
	if te != nil {
		if te.Code == CodeBrowserCrashed || ctx.Err() != nil {
			return startFailure(CodeWorkflowSupervisorLost, te.Message, nil, nil, false, false, nil), nil
		}
		return startFailure(CodePageOpenFailed, te.Message, nil, nil, false, false, nil), nil
	}
	// cleanup closes what the start created; the page goes with its session.
	cleanup := func(p *browser.Page) (bool, bool, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err := g.closeSession(cctx, s)
		return p != nil && err == nil, err == nil, err
	}
	lost := func() bool { return ctx.Err() != nil || !g.rt.Healthy() }

	p, err := s.NewPage(ctx)
	if err != nil {
		reason := CodePageOpenFailed
		if lost() {
			reason = CodeWorkflowSupervisorLost
		}
		pc, sd, cerr := cleanup(nil)
		return startFailure(reason, lifecycleError("open page", err).Message, s, nil, pc, sd, cerr), nil
	}
	var nav *browser.NavigationOutcome
	if args.URL != nil {
		out := p.Navigate(ctx, *args.URL)
		nav = &out
		if !out.OK() {
			reason := CodeNavigationFailed
			if lost() {
				reason = CodeWorkflowSupervisorLost
			}
			state := startFailure(reason, navError(out).Message, s, p, false, false, nil)
			pc, sd, cerr := cleanup(p)
			state["pageClosed"], state["sessionDeleted"] = pc, sd
			if cerr != nil {
				state["cleanupErrorCode"] = lifecycleError("cleanup", cerr).Code
			}
			state["navigationOutcome"] = out
			return state, nil
		}
	}
	if !res.Current() {
		state := startFailure(CodeWorkflowGenerationChanged, "a new initialize started a new generation during the start", s, p, false, false, nil)
		pc, sd, cerr := cleanup(p)
		state["pageClosed"], state["sessionDeleted"] = pc, sd
		if cerr != nil {
			state["cleanupErrorCode"] = lifecycleError("cleanup", cerr).Code
		}
		return state, nil
	}
	workflowID := newID()
	b, _, err := res.Commit(workflow.Binding{SessionID: s.ID, PageID: p.ID, WorkflowID: workflowID, Principal: c.principal.Name})
	committed = true
	if err != nil {
		state := startFailure(CodeWorkflowGenerationChanged, "a new initialize started a new generation during the start", s, p, false, false, nil)
		pc, sd, cerr := cleanup(p)
		state["pageClosed"], state["sessionDeleted"] = pc, sd
		if cerr != nil {
			state["cleanupErrorCode"] = lifecycleError("cleanup", cerr).Code
		}
		return state, nil
	}
	out := statusMap{
		"status":            StatusCompleted,
		"workflowHandle":    b.Handle,
		"sessionId":         s.ID,
		"pageId":            p.ID,
		"workflowId":        workflowID,
		"session":           s.State(),
		"page":              p.State(),
		"navigationOutcome": nil,
	}
	if nav != nil {
		out["navigationOutcome"] = nav
	}
	return out, nil
}

func handleWorkflowObserve(ctx context.Context, c *call) (any, error) {
	b, err := c.cs.wf.Resolve(argString(c.args, "workflowHandle"))
	if err != nil {
		return nil, scopeError(err)
	}
	includeForms := argBool(c.args, "includeForms")
	if includeForms {
		if te := c.require(policy.PageRead); te != nil {
			return nil, te
		}
	}
	s, p, te := c.g.page(c.principal.Name, b.SessionID, b.PageID)
	if te != nil {
		return nil, te
	}
	goal := argString(c.args, "goal")
	detail := argString(c.args, "evidenceDetail")
	_, hasTarget := c.args["target"]
	res := statusMap{
		"status": StatusCompleted, "workflowHandle": b.Handle, "sessionId": b.SessionID,
		"pageId": b.PageID, "workflowId": b.WorkflowID, "retainedAnswer": nil,
		"observationOutcome": nil, "formSnapshot": nil,
	}
	if goal != "" && !hasTarget && c.principal.Capabilities.Has(policy.PageRead) {
		if rc, ok := c.g.retained.Get(p.ID); ok {
			if ans, ok := snapshot.Ask(rc.snap, goal); ok {
				res["source"] = "retained"
				res["retainedAnswer"] = map[string]any{
					"target": ans.Target, "ref": ans.Ref, "confidence": ans.Confidence,
					"snapshotAgeMs": c.g.now().Sub(rc.takenAt).Milliseconds(),
				}
			}
		}
	}
	if res["source"] == nil {
		res["source"] = "live"
		input := map[string]any{}
		if v, ok := c.args["maxNodes"]; ok {
			input["maxNodes"] = v
		}
		if v, ok := c.args["target"]; ok {
			input["target"] = v
		}
		env := envelope{Kind: "a11y_snapshot", Input: input, Detail: detail}
		out := c.g.runCommand(ctx, c.principal, commandSpecs["a11y_snapshot"], env, s, p, b.WorkflowID, commandSpecs["a11y_snapshot"].timeout)
		res["observationOutcome"] = out
		if out.failed() {
			res["status"] = out.Status
			res["error"] = out.Error
			return res, nil
		}
		if goal != "" {
			if rc, ok := c.g.retained.Get(p.ID); ok {
				if ans, ok := snapshot.Ask(rc.snap, goal); ok {
					res["goalAnswer"] = ans
				}
			}
		}
	}
	if includeForms {
		x := &execCtx{g: c.g, principal: c.principal, sess: s, page: p, input: map[string]any{}, detail: detail}
		fctx, cancel := context.WithTimeout(ctx, commandSpecs["form_snapshot"].timeout)
		fs, err := x.formSnapshot(fctx, form.Options{MaxControls: argInt(c.args, "maxControls")})
		cancel()
		if err != nil {
			status, info := classify(err, commandSpecs["form_snapshot"], ctx)
			res["status"], res["error"] = status, info
			return res, nil
		}
		res["formSnapshot"] = fs
	}
	return res, nil
}

func handleContextAsk(ctx context.Context, c *call) (any, error) {
	scope, err := c.cs.wf.BindScope(workflow.ScopeArgs{
		Handle: argString(c.args, "workflowHandle"), SessionID: argString(c.args, "sessionId"),
		PageID: argString(c.args, "pageId"), WorkflowID: argString(c.args, "workflowId"),
	})
	if err != nil {
		return nil, scopeError(err)
	}
	_, p, te := c.g.page(c.principal.Name, scope.SessionID, scope.PageID)
	if te != nil {
		return nil, te
	}
	rc, ok := c.g.retained.Get(p.ID)
	if !ok {
		return map[string]any{"status": StatusCompleted, "answer": nil, "reason": "noRetainedContext",
			"repair": map[string]any{"action": "takeSnapshot", "doc": TaxonomyURI + "#" + CodeTargetNotFound}}, nil
	}
	ans, ok := snapshot.Ask(rc.snap, argString(c.args, "question"))
	if !ok {
		return map[string]any{"status": StatusCompleted, "answer": nil, "reason": "ambiguousPartialOrBelowFloor",
			"confidenceFloor": snapshot.ConfidenceFloor}, nil
	}
	return map[string]any{"status": StatusCompleted, "answer": ans, "snapshotAgeMs": c.g.now().Sub(rc.takenAt).Milliseconds()}, nil
}
