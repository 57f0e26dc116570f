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

// workflowStartArgs are workflow_start's arguments.
type workflowStartArgs struct {
	Profile         string      `json:"profile"`
	URL             *string     `json:"url"`
	ExecutionPolicy *policyArgs `json:"executionPolicy"`
}

// workflowStartResult is workflow_start's result: the handle and what it
// stands for, or (startFailed set) a terminal failure with the cleanup
// state, which is a result, not a protocol error.
type workflowStartResult struct {
	Status            string                     `json:"status"`
	WorkflowHandle    *string                    `json:"workflowHandle"`
	SessionID         *string                    `json:"sessionId"`
	PageID            *string                    `json:"pageId"`
	WorkflowID        *string                    `json:"workflowId"`
	Session           *browser.SessionState      `json:"session"`
	Page              *browser.PageState         `json:"page"`
	NavigationOutcome *browser.NavigationOutcome `json:"navigationOutcome"`
	*startFailed
}

type startFailed struct {
	Reason           string     `json:"reason"`
	PageClosed       bool       `json:"pageClosed"`
	SessionDeleted   bool       `json:"sessionDeleted"`
	CleanupErrorCode *string    `json:"cleanupErrorCode"`
	Error            *ErrorInfo `json:"error"`
}

func (r *workflowStartResult) failed() bool { return r.Status != StatusCompleted }

// cleaned records what the cleanup of a failed start did.
func (r *workflowStartResult) cleaned(pageClosed, sessionDeleted bool, cleanupErr error) *workflowStartResult {
	r.PageClosed, r.SessionDeleted = pageClosed, sessionDeleted
	r.CleanupErrorCode = nil
	if cleanupErr != nil {
		r.CleanupErrorCode = ptr(lifecycleError("cleanup", cleanupErr).Code)
	}
	return r
}

// startFailure is a terminal workflow_start failure.
func startFailure(reason, msg string, s engineSession, p enginePage) *workflowStartResult {
	res := &workflowStartResult{
		Status:      StatusFailed,
		startFailed: &startFailed{Reason: reason, Error: &ErrorInfo{Code: reason, Message: msg, Repair: repairFor(reason)}},
	}
	if s != nil {
		res.SessionID, res.Session = ptr(s.id()), ptr(s.State())
	}
	if p != nil {
		res.PageID, res.Page = ptr(p.id()), ptr(p.State())
	}
	return res
}

func handleWorkflowStart(ctx context.Context, c *call, args workflowStartArgs) (*workflowStartResult, error) {
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
			return startFailure(CodeWorkflowSupervisorLost, te.Message, nil, nil), nil
		}
		return startFailure(CodePageOpenFailed, te.Message, nil, nil), nil
	}
	// cleanup closes what the start created; the page goes with its session.
	cleanup := func(p enginePage) (bool, bool, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err := g.closeSession(cctx, s)
		return p != nil && err == nil, err == nil, err
	}
	lost := func() bool { return ctx.Err() != nil || !g.eng.Healthy() }

	p, err := s.newPage(ctx)
	if err != nil {
		reason := CodePageOpenFailed
		if lost() {
			reason = CodeWorkflowSupervisorLost
		}
		state := startFailure(reason, lifecycleError("open page", err).Message, s, nil)
		return state.cleaned(cleanup(nil)), nil
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
			state := startFailure(reason, navError(out).Message, s, p)
			state.cleaned(cleanup(p))
			state.NavigationOutcome = &out
			return state, nil
		}
	}
	if !res.Current() {
		state := startFailure(CodeWorkflowGenerationChanged, "a new initialize started a new generation during the start", s, p)
		return state.cleaned(cleanup(p)), nil
	}
	workflowID := newID()
	b, _, err := res.Commit(workflow.Binding{SessionID: s.id(), PageID: p.id(), WorkflowID: workflowID, Principal: c.principal.Name})
	committed = true
	if err != nil {
		state := startFailure(CodeWorkflowGenerationChanged, "a new initialize started a new generation during the start", s, p)
		return state.cleaned(cleanup(p)), nil
	}
	return &workflowStartResult{
		Status:            StatusCompleted,
		WorkflowHandle:    ptr(b.Handle),
		SessionID:         ptr(s.id()),
		PageID:            ptr(p.id()),
		WorkflowID:        ptr(workflowID),
		Session:           ptr(s.State()),
		Page:              ptr(p.State()),
		NavigationOutcome: nav,
	}, nil
}

// workflowObserveArgs are workflow_observe's arguments.
type workflowObserveArgs struct {
	WorkflowHandle string           `json:"workflowHandle"`
	Goal           string           `json:"goal"`
	IncludeForms   bool             `json:"includeForms"`
	MaxNodes       int              `json:"maxNodes"`
	MaxControls    int              `json:"maxControls"`
	EvidenceDetail string           `json:"evidenceDetail"`
	Target         *snapshot.Target `json:"target"`
}

// observeResult is workflow_observe's result: a retained answer, or a live
// observation (an a11y_snapshot outcome), and the form snapshot when asked.
type observeResult struct {
	Status             string             `json:"status"`
	Source             string             `json:"source"`
	WorkflowHandle     string             `json:"workflowHandle"`
	SessionID          string             `json:"sessionId"`
	PageID             string             `json:"pageId"`
	WorkflowID         string             `json:"workflowId"`
	RetainedAnswer     *retainedAnswer    `json:"retainedAnswer"`
	ObservationOutcome *Outcome           `json:"observationOutcome"`
	FormSnapshot       *form.FormSnapshot `json:"formSnapshot"`
	GoalAnswer         *snapshot.Answer   `json:"goalAnswer,omitempty"`
	Error              *ErrorInfo         `json:"error,omitempty"`
}

type retainedAnswer struct {
	Target        snapshot.Target `json:"target"`
	Ref           string          `json:"ref"`
	Confidence    float64         `json:"confidence"`
	SnapshotAgeMs int64           `json:"snapshotAgeMs"`
}

func (r *observeResult) failed() bool { return r.Status != StatusCompleted }

func handleWorkflowObserve(ctx context.Context, c *call, args workflowObserveArgs) (*observeResult, error) {
	b, err := c.cs.wf.Resolve(args.WorkflowHandle)
	if err != nil {
		return nil, scopeError(err)
	}
	if args.IncludeForms {
		if te := c.require(policy.PageRead); te != nil {
			return nil, te
		}
	}
	s, p, te := c.g.page(c.principal.Name, b.SessionID, b.PageID)
	if te != nil {
		return nil, te
	}
	goal, detail := args.Goal, args.EvidenceDetail
	res := &observeResult{
		Status: StatusCompleted, WorkflowHandle: b.Handle, SessionID: b.SessionID,
		PageID: b.PageID, WorkflowID: b.WorkflowID,
	}
	if goal != "" && args.Target == nil && c.principal.Capabilities.Has(policy.PageRead) {
		if rc, ok := c.g.retained.Get(p.id()); ok {
			if ans, ok := snapshot.Ask(rc.snap, goal); ok {
				res.Source = "retained"
				res.RetainedAnswer = &retainedAnswer{
					Target: ans.Target, Ref: ans.Ref, Confidence: ans.Confidence,
					SnapshotAgeMs: c.g.now().Sub(rc.takenAt).Milliseconds(),
				}
			}
		}
	}
	if res.Source == "" {
		res.Source = "live"
		input := map[string]any{}
		if args.MaxNodes != 0 {
			input["maxNodes"] = args.MaxNodes
		}
		if args.Target != nil {
			input["target"] = args.Target
		}
		spec := commandSpecs["a11y_snapshot"]
		env := envelope{Kind: "a11y_snapshot", Input: input, Detail: detail}
		out := c.g.runCommand(ctx, c.principal, spec, env, s, p, b.WorkflowID, spec.timeout)
		res.ObservationOutcome = out
		if out.failed() {
			res.Status, res.Error = out.Status, out.Error
			return res, nil
		}
		if goal != "" {
			if rc, ok := c.g.retained.Get(p.id()); ok {
				if ans, ok := snapshot.Ask(rc.snap, goal); ok {
					res.GoalAnswer = &ans
				}
			}
		}
	}
	if args.IncludeForms {
		if te := c.g.engineRefusal(toolIndex["form_snapshot"]); te != nil {
			res.Status, res.Error = StatusFailed, te.info()
			return res, nil
		}
		x := &execCtx{g: c.g, principal: c.principal, es: s, ep: p, sess: s.chromium(), page: p.chromium(), input: map[string]any{}, detail: detail}
		spec := commandSpecs["form_snapshot"]
		fctx, cancel := context.WithTimeout(ctx, spec.timeout)
		fs, err := x.formSnapshot(fctx, form.Options{MaxControls: args.MaxControls})
		cancel()
		if err != nil {
			res.Status, res.Error = classify(err, spec, ctx)
			return res, nil
		}
		res.FormSnapshot = fs
	}
	return res, nil
}

type contextAskArgs struct {
	scopeArgs
	Question string `json:"question"`
}

// contextAskResult is an answer from the retained snapshot, or why none.
type contextAskResult struct {
	Status          string           `json:"status"`
	Answer          *snapshot.Answer `json:"answer"`
	Reason          string           `json:"reason,omitempty"`
	Repair          *Repair          `json:"repair,omitempty"`
	ConfidenceFloor *float64         `json:"confidenceFloor,omitempty"`
	SnapshotAgeMs   *int64           `json:"snapshotAgeMs,omitempty"`
}

func handleContextAsk(ctx context.Context, c *call, args contextAskArgs) (*contextAskResult, error) {
	p, err := c.scopedPage(args.scopeArgs)
	if err != nil {
		return nil, err
	}
	rc, ok := c.g.retained.Get(p.id())
	if !ok {
		return &contextAskResult{Status: StatusCompleted, Reason: "noRetainedContext",
			Repair: takeSnapshotRepair()}, nil
	}
	ans, ok := snapshot.Ask(rc.snap, args.Question)
	if !ok {
		return &contextAskResult{Status: StatusCompleted, Reason: "ambiguousPartialOrBelowFloor",
			ConfidenceFloor: ptr(snapshot.ConfidenceFloor)}, nil
	}
	return &contextAskResult{Status: StatusCompleted, Answer: &ans, SnapshotAgeMs: ptr(c.g.now().Sub(rc.takenAt).Milliseconds())}, nil
}
