package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// targetArgs are the two ways an element command names its element.
type targetArgs struct {
	Target   *snapshot.Target `json:"target"`
	Selector string           `json:"selector"`
}

// pick returns the target or selector. ok is false when neither is given.
func (ta targetArgs) pick() (t snapshot.Target, ok bool, err error) {
	switch {
	case ta.Target != nil && ta.Selector != "":
		return t, false, errorf(CodeInvalidRequest, "give target or selector, not both")
	case ta.Selector != "":
		t = snapshot.Target{Selector: ta.Selector}
	case ta.Target != nil:
		t = *ta.Target
	default:
		return t, false, nil
	}
	if err := t.Validate(); err != nil {
		return t, false, errorf(CodeInvalidRequest, "%v", err)
	}
	return t, true, nil
}

// required is pick for a command that needs its element named.
func (ta targetArgs) required() (snapshot.Target, error) {
	t, ok, err := ta.pick()
	if err == nil && !ok {
		err = errorf(CodeInvalidRequest, "give target (from a snapshot) or selector")
	}
	return t, err
}

// targetOnly is a target argument alone (no selector alternative).
func targetOnly(t *snapshot.Target) (snapshot.Target, bool, error) {
	return targetArgs{Target: t}.pick()
}

// optionalTarget is a target argument a command may go without: nil when
// not given, else the validated target.
func optionalTarget(t *snapshot.Target) (*snapshot.Target, error) {
	v, ok, err := targetOnly(t)
	if err != nil || !ok {
		return nil, err
	}
	return &v, nil
}

// resolve turns a semantic target or selector into a node of the page.
// Its failure is marked unsent: every command resolves its targets before
// it sends the page any input.
func (x *execCtx) resolve(ctx context.Context, t snapshot.Target) (browser.NodeRef, string, error) {
	var nr snapshot.NodeRef
	err := x.page.Do(ctx, func(pctx context.Context) error {
		var err error
		nr, err = snapshot.Resolve(pctx, t)
		return err
	})
	if err != nil {
		return browser.NodeRef{}, "", unsent(err)
	}
	return browser.NodeRef{BackendNodeID: nr.BackendNodeID, FrameID: nr.FrameID}, nr.Ref(), nil
}

// requireTarget resolves the target of an element command.
func (x *execCtx) requireTarget(ctx context.Context, ta targetArgs) (browser.NodeRef, string, error) {
	t, err := ta.required()
	if err != nil {
		return browser.NodeRef{}, "", err
	}
	return x.resolve(ctx, t)
}

func pageState(p interface{ State() browser.PageState }) browser.PageState { return p.State() }

// settle waits briefly after an action for its effects (see
// enginePage.settle), so the outcome reports the page after them.
func (x *execCtx) settle(ctx context.Context) map[string]any { return x.ep.settle(ctx) }

type navigateArgs struct {
	URL string `json:"url"`
}

func runNavigate(ctx context.Context, x *execCtx, in navigateArgs) (map[string]any, map[string]any, error) {
	out := x.ep.Navigate(ctx, in.URL)
	ev := map[string]any{"navigationOutcome": out, "page": pageState(x.ep)}
	if out.OK() {
		return ev, nil, nil
	}
	return ev, nil, navError(out)
}

// navError maps a failed NavigationOutcome to a command error.
func navError(out browser.NavigationOutcome) *toolError {
	code, msg := CodeNavigationFailed, "navigation failed"
	if out.Error != nil {
		msg = out.Error.Message
		switch out.Error.Code {
		case browser.NavCodeInvalidRequest:
			code = CodeInvalidRequest
		case browser.NavCodePolicyDenied:
			code = CodeNetworkPolicyDenied
		case browser.NavCodeDialogOpen:
			code = CodeDialogOpen
		case browser.NavCodePageClosed:
			code = CodePageClosed
		case browser.NavCodeBrowserCrashed:
			code = CodeBrowserCrashed
		case browser.NavCodeTimeout:
			code = CodeTimeout
		}
	}
	return errorf(code, "%s", msg)
}

type clickArgs struct {
	targetArgs
	Modifiers  []string `json:"modifiers"`
	Button     string   `json:"button"`
	ClickCount int      `json:"clickCount"`
}

func runClick(ctx context.Context, x *execCtx, in clickArgs) (map[string]any, map[string]any, error) {
	return x.ep.click(ctx, x, in)
}

type typeTextArgs struct {
	targetArgs
	Text  string `json:"text"`
	Clear bool   `json:"clear"`
}

func runTypeText(ctx context.Context, x *execCtx, in typeTextArgs) (map[string]any, map[string]any, error) {
	ev, res, err := x.ep.typeText(ctx, x, in)
	if err == nil && in.Text != "" && x.focusedPassword(ctx) {
		x.rememberSecret(in.Text)
	}
	return ev, res, err
}

// focusedPassword reports whether the page's focused element is a password
// input: after type_text, the field the text went into.
func (x *execCtx) focusedPassword(ctx context.Context) bool {
	raw, err := x.ep.Evaluate(ctx, `(() => { let e = document.activeElement; while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement; return !!e && e.tagName === "INPUT" && (e.type || "").toLowerCase() === "password"; })()`)
	return err == nil && string(raw) == "true"
}

// rememberSecret records v, typed into a password field, for redaction
// from the principal's tool results (redact.go).
func (x *execCtx) rememberSecret(v string) {
	x.g.secrets.remember(x.principal.Name, v)
}

// waitForArgs are wait_for's arguments; condition is one of the kinds of
// waitConditionSchema.
type waitForArgs struct {
	Condition waitConditionArgs `json:"condition"`
}

// waitConditionArgs are one wait condition: its kind, what it reads and
// the element it watches.
type waitConditionArgs struct {
	targetArgs
	Kind       string             `json:"kind"`
	Matcher    *browser.TextMatch `json:"matcher"`
	ReadyState string             `json:"readyState"`
	State      string             `json:"state"`
	IdleMs     int                `json:"idleMs"`
}

// condition is the browser condition of the arguments, its target not yet
// resolved.
func (cm waitConditionArgs) condition() browser.Condition {
	return browser.Condition{Kind: cm.Kind, ReadyState: cm.ReadyState, State: cm.State, IdleMs: cm.IdleMs, Matcher: cm.Matcher}
}

func runWaitFor(ctx context.Context, x *execCtx, in waitForArgs) (map[string]any, map[string]any, error) {
	return x.ep.waitFor(ctx, x, in)
}

func isTargetMissing(err error) bool {
	return err != nil && (errorsIs(err, snapshot.ErrTargetNotFound) || errorsIs(err, browser.ErrNodeNotFound))
}

type screenshotArgs struct {
	targetArgs
	FullPage bool `json:"fullPage"`
}

func runScreenshot(ctx context.Context, x *execCtx, in screenshotArgs) (map[string]any, map[string]any, error) {
	shot, err := x.ep.screenshot(ctx, x, in)
	if err != nil {
		return nil, nil, err
	}
	a := x.g.artifacts.put(x.principal.Name, "image/png", shot.PNG, shot.SHA256, x.g.now())
	ev := a.evidence()
	ev["width"], ev["height"] = shot.Width, shot.Height
	return map[string]any{"artifact": ev}, nil, nil
}

// pageSummaryJS summarizes a page for inspect without a target.
const pageSummaryJS = `(() => {
	const q = s => document.querySelectorAll(s).length;
	const heads = Array.from(document.querySelectorAll("h1,h2,h3")).slice(0, 10).map(h => (h.innerText || "").trim().slice(0, 120));
	return {title: document.title, url: location.href, readyState: document.readyState,
		counts: {links: q("a[href]"), buttons: q("button,[role=button],input[type=submit]"), forms: q("form"),
		inputs: q("input,select,textarea"), iframes: q("iframe"), images: q("img")},
		headings: heads, textLength: (document.body && document.body.innerText || "").length};
})()`

func runInspect(ctx context.Context, x *execCtx, in targetArgs) (map[string]any, map[string]any, error) {
	t, ok, err := in.pick()
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		raw, err := x.page.Evaluate(ctx, pageSummaryJS)
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"page": pageState(x.ep), "summary": json.RawMessage(raw)}, nil, nil
	}
	ref, refName, err := x.resolve(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	info, err := x.page.Inspect(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"ref": refName, "node": info}, nil, nil
}

// extractJS extracts items; %s is a JSON object {selector, fields, limit}.
const extractJS = `((o) => {
	const cut = s => (s || "").replace(/\s+/g, " ").trim().slice(0, 1000);
	const roots = o.selector ? Array.from(document.querySelectorAll(o.selector)) : [document.body];
	const items = [];
	for (const r of roots.slice(0, o.limit)) {
		if (!o.fields) { items.push(cut(r.innerText)); continue; }
		const item = {};
		for (const [name, spec] of Object.entries(o.fields)) {
			const at = spec.lastIndexOf("@");
			const css = at > 0 ? spec.slice(0, at) : spec, attr = at > 0 ? spec.slice(at + 1) : "";
			const el = css === "." ? r : r.querySelector(css);
			if (!el || (el.type === "password")) { item[name] = null; continue; }
			item[name] = attr ? cut(el.getAttribute(attr)) : cut(el.innerText || el.value || el.textContent);
		}
		items.push(item);
	}
	return {items, total: roots.length, truncated: roots.length > o.limit};
})(%s)`

type extractArgs struct {
	Selector string            `json:"selector"`
	Fields   map[string]string `json:"fields"`
	Limit    int               `json:"limit"`
}

func runExtract(ctx context.Context, x *execCtx, in extractArgs) (map[string]any, map[string]any, error) {
	limit := in.Limit
	if limit == 0 {
		limit = 100
	}
	params, _ := json.Marshal(map[string]any{"selector": in.Selector, "fields": in.Fields, "limit": limit})
	raw, err := x.ep.Evaluate(ctx, fmt.Sprintf(extractJS, params))
	if err != nil {
		if strings.Contains(err.Error(), "SyntaxError") || strings.Contains(err.Error(), "is not a valid selector") {
			return nil, nil, errorf(CodeInvalidRequest, "a selector does not parse: %v", err)
		}
		return nil, nil, err
	}
	return map[string]any{"extraction": json.RawMessage(raw)}, nil, nil
}

const maxEvalResult = 64 << 10

type evaluateArgs struct {
	Expression string `json:"expression"`
}

func runEvaluate(ctx context.Context, x *execCtx, in evaluateArgs) (map[string]any, map[string]any, error) {
	if !x.es.Policy().JavaScriptEvaluation {
		return nil, nil, errorf(CodePolicyDenied, "this session's executionPolicy.javascriptEvaluation is false")
	}
	raw, err := x.ep.Evaluate(ctx, in.Expression)
	if err != nil {
		return nil, nil, err
	}
	if len(raw) > maxEvalResult {
		return map[string]any{"truncated": true, "bytes": len(raw), "value": nil}, nil, nil
	}
	return map[string]any{"value": json.RawMessage(raw)}, nil, nil
}

type dialogArgs struct {
	Accept     bool   `json:"accept"`
	PromptText string `json:"promptText"`
}

func runDialog(ctx context.Context, x *execCtx, in dialogArgs) (map[string]any, map[string]any, error) {
	d := x.ep.PendingDialog()
	if d == nil {
		return nil, nil, errorf(CodeNoDialog, "no JavaScript dialog is open on this page")
	}
	if err := x.ep.HandleDialog(ctx, in.Accept, in.PromptText); err != nil {
		return nil, nil, err
	}
	return map[string]any{"dialog": map[string]any{"type": d.Type, "message": d.Message}, "accepted": in.Accept, "page": pageState(x.ep)}, nil, nil
}

func runActivate(ctx context.Context, x *execCtx, _ struct{}) (map[string]any, map[string]any, error) {
	if err := x.ep.Activate(ctx); err != nil {
		return nil, nil, err
	}
	return map[string]any{"page": pageState(x.ep), "activePageId": x.es.ActivePageID()}, nil, nil
}

type a11ySnapshotArgs struct {
	Target      *snapshot.Target `json:"target"`
	MaxNodes    int              `json:"maxNodes"`
	MaxBytes    int              `json:"maxBytes"`
	Interesting bool             `json:"interesting"`
}

// snapshotOptions reads a11y_snapshot's bounds.
func snapshotOptions(in a11ySnapshotArgs) (snapshot.Options, error) {
	opts := snapshot.Options{MaxNodes: in.MaxNodes, MaxBytes: in.MaxBytes, Interesting: in.Interesting}
	t, err := optionalTarget(in.Target)
	opts.Target = t
	return opts, err
}

// takeSnapshot takes a snapshot and records it as the page's retained
// context, unless the page changed while it was being taken.
func (x *execCtx) takeSnapshot(ctx context.Context, opts snapshot.Options) (*snapshot.Snapshot, error) {
	epoch := x.g.retained.Epoch(x.ep.id())
	snap, err := x.ep.snapshot(ctx, opts)
	if err != nil {
		return nil, err
	}
	x.g.retained.PutAt(x.ep.id(), epoch, &retainedContext{snap: snap, takenAt: x.g.now()})
	return snap, nil
}

// snapshotEvidence renders a snapshot: compact is the text rendering and
// its bounds; full adds the structured nodes.
func snapshotEvidence(s *snapshot.Snapshot, full bool) map[string]any {
	ev := map[string]any{
		"url": s.URL, "title": s.Title, "text": s.Text, "truncated": s.Truncated,
		"totalNodes": s.TotalNodes, "shownNodes": s.ShownNodes, "bytes": s.Bytes,
	}
	if s.Repair != "" {
		ev["repair"] = s.Repair
	}
	if s.SkippedFrames > 0 {
		ev["skippedFrames"] = s.SkippedFrames
	}
	if s.Scope != nil {
		ev["scope"] = s.Scope
	}
	if full {
		ev["nodes"] = s.Nodes
		ev["takenAt"] = s.TakenAt
	}
	return ev
}

func runA11ySnapshot(ctx context.Context, x *execCtx, in a11ySnapshotArgs) (map[string]any, map[string]any, error) {
	opts, err := snapshotOptions(in)
	if err != nil {
		return nil, nil, err
	}
	snap, err := x.takeSnapshot(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"accessibility": snapshotEvidence(snap, x.full())}, nil, nil
}
