package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// kindRequired are the required input fields of each kind (flat tools and
// command_execute envelopes share them).
var kindRequired = map[string][]string{
	"navigate":             {"url"},
	"type_text":            {"text"},
	"wait_for":             {"condition"},
	"control_action":       {"target", "action"},
	"evaluate_javascript":  {"expression"},
	"dialog":               {"accept"},
	"intent_locate":        {"description"},
	"intent_fill":          {"fields"},
	"intent_complete_form": {"values"},
}

// commandSpecs is the table of command kinds.
var commandSpecs map[string]commandSpec

func init() {
	commandSpecs = map[string]commandSpec{
		"navigate":                 {mutates: true, timeout: 45 * time.Second, run: runNavigate},
		"click":                    {mutates: true, timeout: 20 * time.Second, run: runClick},
		"type_text":                {mutates: true, timeout: 20 * time.Second, run: runTypeText},
		"wait_for":                 {readOnly: true, waits: true, run: runWaitFor},
		"screenshot":               {readOnly: true, timeout: 20 * time.Second, run: runScreenshot},
		"inspect":                  {readOnly: true, timeout: 15 * time.Second, run: runInspect},
		"extract_structured":       {readOnly: true, timeout: 20 * time.Second, run: runExtract},
		"evaluate_javascript":      {mutates: true, timeout: 20 * time.Second, run: runEvaluate},
		"dialog":                   {mutates: true, timeout: 10 * time.Second, run: runDialog},
		"page_activate":            {readOnly: true, timeout: 10 * time.Second, run: runActivate},
		"a11y_snapshot":            {readOnly: true, timeout: 20 * time.Second, run: runA11ySnapshot},
		"form_snapshot":            {readOnly: true, timeout: 20 * time.Second, run: runFormSnapshot},
		"control_action":           {mutates: true, timeout: 20 * time.Second, run: runControlAction},
		"intent_locate":            {readOnly: true, timeout: 20 * time.Second, run: runIntentLocate},
		"intent_fill":              {mutates: true, timeout: 30 * time.Second, run: runIntentFill},
		"intent_complete_form":     {mutates: true, timeout: 60 * time.Second, run: runIntentCompleteForm},
		"intent_submit_and_verify": {mutates: true, timeout: 60 * time.Second, run: runIntentSubmitAndVerify},
	}
}

// targetOf reads "target" or "selector" from an input map. ok is false
// when neither is present.
func targetOf(in map[string]any) (t snapshot.Target, ok bool, err error) {
	tm, hasT := in["target"].(map[string]any)
	sel, hasS := in["selector"].(string)
	switch {
	case hasT && hasS:
		return t, false, errorf(CodeInvalidRequest, "give target or selector, not both")
	case hasS:
		t = snapshot.Target{Selector: sel}
	case hasT:
		b, _ := json.Marshal(tm)
		if err := json.Unmarshal(b, &t); err != nil {
			return t, false, errorf(CodeInvalidRequest, "target: %v", err)
		}
	default:
		return t, false, nil
	}
	if err := t.Validate(); err != nil {
		return t, false, errorf(CodeInvalidRequest, "%v", err)
	}
	return t, true, nil
}

// resolve turns a semantic target or selector into a node of the page.
func (x *execCtx) resolve(ctx context.Context, t snapshot.Target) (browser.NodeRef, string, error) {
	var nr snapshot.NodeRef
	err := x.page.Do(ctx, func(pctx context.Context) error {
		var err error
		nr, err = snapshot.Resolve(pctx, t)
		return err
	})
	if err != nil {
		return browser.NodeRef{}, "", err
	}
	return browser.NodeRef{BackendNodeID: nr.BackendNodeID, FrameID: nr.FrameID}, nr.Ref(), nil
}

// requireTarget reads and resolves the target of an element command.
func (x *execCtx) requireTarget(ctx context.Context) (browser.NodeRef, string, error) {
	t, ok, err := targetOf(x.input)
	if err != nil {
		return browser.NodeRef{}, "", err
	}
	if !ok {
		return browser.NodeRef{}, "", errorf(CodeInvalidRequest, "give target (from a snapshot) or selector")
	}
	return x.resolve(ctx, t)
}

func pageState(p *browser.Page) browser.PageState { return p.State() }

func runNavigate(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	out := x.page.Navigate(ctx, argString(x.input, "url"))
	ev := map[string]any{"navigationOutcome": out, "page": pageState(x.page)}
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

// settle waits briefly for the network to go quiet after an action, so the
// outcome reports the page after the action's effects.
func (x *execCtx) settle(ctx context.Context) map[string]any {
	quiet, _ := x.page.WaitNetworkQuiet(ctx, 150*time.Millisecond, 3*time.Second)
	return map[string]any{"networkQuiet": quiet, "page": pageState(x.page)}
}

func runClick(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	ref, refName, err := x.requireTarget(ctx)
	if err != nil {
		return nil, nil, err
	}
	var opts browser.ClickOptions
	if mods, ok := x.input["modifiers"].([]any); ok {
		for _, m := range mods {
			opts.Modifiers = append(opts.Modifiers, fmt.Sprint(m))
		}
	}
	opts.Button = argString(x.input, "button")
	opts.ClickCount = argInt(x.input, "clickCount")
	res, err := x.page.Click(ctx, ref, opts)
	ev := map[string]any{"ref": refName}
	if res.Dialog != nil {
		ev["dialog"] = res.Dialog
	}
	if err != nil {
		return ev, nil, err
	}
	for k, v := range x.settle(ctx) {
		ev[k] = v
	}
	if len(opts.Modifiers) > 0 {
		ev["modifiers"] = opts.Modifiers
	}
	return ev, map[string]any{"x": res.X, "y": res.Y}, nil
}

func runTypeText(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	ref, refName, err := x.requireTarget(ctx)
	if err != nil {
		return nil, nil, err
	}
	text := argString(x.input, "text")
	if err := x.page.TypeText(ctx, ref, text, argBool(x.input, "clear")); err != nil {
		return map[string]any{"ref": refName}, nil, err
	}
	// The text itself is never echoed: it may be a password.
	return map[string]any{"ref": refName, "typedChars": len([]rune(text)), "cleared": argBool(x.input, "clear")}, nil, nil
}

func runWaitFor(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	cm, _ := x.input["condition"].(map[string]any)
	c := browser.Condition{
		Kind:       argString(cm, "kind"),
		ReadyState: argString(cm, "readyState"),
		State:      argString(cm, "state"),
		IdleMs:     argInt(cm, "idleMs"),
	}
	if m, ok := cm["matcher"].(map[string]any); ok {
		c.Matcher = &browser.TextMatch{Kind: argString(m, "kind"), Value: argString(m, "value")}
	}
	// The wait is the caller's timeoutMs; the command deadline leaves
	// waitOverhead beyond it, so an unmet condition is reported as such,
	// not as a cut-off command.
	c.TimeoutMs = int(x.wait / time.Millisecond)
	t, hasTarget, err := targetOf(cm)
	if err != nil {
		return nil, nil, err
	}
	if hasTarget {
		switch {
		case t.Selector != "" && browser.PageLevelCSS(t.Selector):
			// the whole page: document.body.innerText
		case t.Selector == "" && t.Ref == "" && browser.PageLevelRole(t.Role) && (c.Kind == browser.WaitText || c.Kind == browser.WaitValue):
			// role-scoped page-level targets read document.body.innerText
		case t.Selector != "" && !strings.Contains(t.Selector, ">>"):
			c.Target = &browser.NodeRef{Selector: t.Selector}
		default:
			if c.Kind == browser.WaitElement {
				return waitElementSemantic(ctx, x, t, c)
			}
			ref, _, err := x.resolve(ctx, t)
			if err != nil {
				return nil, nil, err
			}
			c.Target = &ref
		}
	}
	if c.Kind == browser.WaitElement && c.Target == nil {
		if !hasTarget {
			return nil, nil, errorf(CodeInvalidRequest, "an element wait needs target or selector")
		}
		c.Target = &browser.NodeRef{Selector: t.Selector}
	}
	res, err := x.page.WaitFor(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	ev := map[string]any{"wait": res}
	if !res.Matched {
		return ev, nil, errorf(CodeTimeout, "%s condition not met within %d ms", c.Kind, c.TimeoutMs)
	}
	return ev, nil, nil
}

// waitElementSemantic polls a role/name target until it resolves (or, for
// state hidden, stops resolving): semantic targets cannot be handed to the
// browser's selector-based element wait.
func waitElementSemantic(ctx context.Context, x *execCtx, t snapshot.Target, c browser.Condition) (map[string]any, map[string]any, error) {
	want := c.State
	if want == "" {
		want = browser.ElementVisible
	}
	start := time.Now()
	deadline := start.Add(time.Duration(c.TimeoutMs) * time.Millisecond)
	for {
		ref, _, err := x.resolve(ctx, t)
		found := err == nil
		if err != nil && !isTargetMissing(err) {
			return nil, nil, err
		}
		matched := false
		observed := "absent"
		if found {
			info, ierr := x.page.Inspect(ctx, ref)
			if ierr == nil {
				observed = "hidden"
				if info.Visible {
					observed = "visible"
				}
			}
		}
		switch want {
		case browser.ElementPresent:
			matched = found
		case browser.ElementVisible:
			matched = observed == "visible"
		case browser.ElementHidden:
			matched = observed != "visible"
		}
		res := browser.WaitResult{Kind: c.Kind, Matched: matched, ElapsedMs: time.Since(start).Milliseconds(), Observed: observed}
		if matched {
			return map[string]any{"wait": res}, nil, nil
		}
		if time.Now().After(deadline) {
			res.TimedOut = true
			return map[string]any{"wait": res}, nil, errorf(CodeTimeout, "element condition not met within %d ms", c.TimeoutMs)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
}

func isTargetMissing(err error) bool {
	return err != nil && (errorsIs(err, snapshot.ErrTargetNotFound) || errorsIs(err, browser.ErrNodeNotFound))
}

func runScreenshot(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	opts := browser.ScreenshotOptions{FullPage: argBool(x.input, "fullPage")}
	if t, ok, err := targetOf(x.input); err != nil {
		return nil, nil, err
	} else if ok {
		ref, _, err := x.resolve(ctx, t)
		if err != nil {
			return nil, nil, err
		}
		opts.Node = &ref
	}
	shot, err := x.page.Screenshot(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	a := x.g.artifacts.put(x.principal.Name, "image/png", shot.PNG, shot.SHA256, x.g.now())
	return map[string]any{"artifact": map[string]any{
		"uri": a.uri(), "mimeType": a.MIME, "bytes": len(shot.PNG), "sha256": shot.SHA256,
		"width": shot.Width, "height": shot.Height,
	}}, nil, nil
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

func runInspect(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	t, ok, err := targetOf(x.input)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		raw, err := x.page.Evaluate(ctx, pageSummaryJS)
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"page": pageState(x.page), "summary": json.RawMessage(raw)}, nil, nil
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

func runExtract(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	limit := argInt(x.input, "limit")
	if limit == 0 {
		limit = 100
	}
	params, _ := json.Marshal(map[string]any{"selector": argString(x.input, "selector"), "fields": x.input["fields"], "limit": limit})
	raw, err := x.page.Evaluate(ctx, fmt.Sprintf(extractJS, params))
	if err != nil {
		if strings.Contains(err.Error(), "SyntaxError") || strings.Contains(err.Error(), "is not a valid selector") {
			return nil, nil, errorf(CodeInvalidRequest, "a selector does not parse: %v", err)
		}
		return nil, nil, err
	}
	return map[string]any{"extraction": json.RawMessage(raw)}, nil, nil
}

const maxEvalResult = 64 << 10

func runEvaluate(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	if !x.sess.Policy().JavaScriptEvaluation {
		return nil, nil, errorf(CodePolicyDenied, "this session's executionPolicy.javascriptEvaluation is false")
	}
	raw, err := x.page.Evaluate(ctx, argString(x.input, "expression"))
	if err != nil {
		return nil, nil, err
	}
	if len(raw) > maxEvalResult {
		return map[string]any{"truncated": true, "bytes": len(raw), "value": nil}, nil, nil
	}
	return map[string]any{"value": json.RawMessage(raw)}, nil, nil
}

func runDialog(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	d := x.page.PendingDialog()
	if d == nil {
		return nil, nil, errorf(CodeNoDialog, "no JavaScript dialog is open on this page")
	}
	accept := argBool(x.input, "accept")
	if err := x.page.HandleDialog(ctx, accept, argString(x.input, "promptText")); err != nil {
		return nil, nil, err
	}
	return map[string]any{"dialog": map[string]any{"type": d.Type, "message": d.Message}, "accepted": accept, "page": pageState(x.page)}, nil, nil
}

func runActivate(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	if err := x.page.Activate(ctx); err != nil {
		return nil, nil, err
	}
	return map[string]any{"page": pageState(x.page), "activePageId": x.sess.ActivePageID()}, nil, nil
}

// snapshotOptions reads a11y_snapshot's bounds.
func snapshotOptions(in map[string]any) (snapshot.Options, error) {
	opts := snapshot.Options{
		MaxNodes:    argInt(in, "maxNodes"),
		MaxBytes:    argInt(in, "maxBytes"),
		Interesting: argBool(in, "interesting"),
	}
	t, ok, err := targetOf(map[string]any{"target": in["target"]})
	if _, has := in["target"]; has {
		if err != nil {
			return opts, err
		}
		if ok {
			opts.Target = &t
		}
	}
	return opts, nil
}

// takeSnapshot takes a snapshot and records it as the page's retained
// context, unless the page changed while it was being taken.
func (x *execCtx) takeSnapshot(ctx context.Context, opts snapshot.Options) (*snapshot.Snapshot, error) {
	epoch := x.g.retained.Epoch(x.page.ID)
	var snap *snapshot.Snapshot
	err := x.page.Do(ctx, func(pctx context.Context) error {
		var err error
		snap, err = snapshot.Take(pctx, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	x.g.retained.PutAt(x.page.ID, epoch, &retainedContext{snap: snap, takenAt: x.g.now()})
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

func runA11ySnapshot(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	opts, err := snapshotOptions(x.input)
	if err != nil {
		return nil, nil, err
	}
	snap, err := x.takeSnapshot(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"accessibility": snapshotEvidence(snap, x.full())}, nil, nil
}
