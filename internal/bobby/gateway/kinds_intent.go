package gateway

import (
	"context"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

type contextNeighborsArgs struct {
	scopeArgs
	Ref      string `json:"ref"`
	Question string `json:"question"`
	Limit    int    `json:"limit"`
}

// contextNeighborsResult is the neighborhood of a node of the retained
// snapshot, or why there is none.
type contextNeighborsResult struct {
	Status        string                 `json:"status"`
	Neighborhood  *snapshot.Neighborhood `json:"neighborhood"`
	Reason        string                 `json:"reason,omitempty"`
	Repair        *Repair                `json:"repair,omitempty"`
	SnapshotAgeMs *int64                 `json:"snapshotAgeMs,omitempty"`
}

// handleContextNeighbors answers from the retained snapshot. The scope is
// checked first, as every tool does, so an unknown handle is named before a
// missing argument. No retained snapshot, or a question it cannot answer,
// is an answer (nothing to say); a ref it does not hold is a bad target,
// the error click gives for one.
func handleContextNeighbors(ctx context.Context, c *call, args contextNeighborsArgs) (*contextNeighborsResult, error) {
	p, err := c.scopedPage(args.scopeArgs)
	if err != nil {
		return nil, err
	}
	if (args.Ref == "") == (args.Question == "") {
		return nil, errorf(CodeInvalidRequest, "give ref (from a snapshot) or question, exactly one")
	}
	rc, ok := c.g.retained.Get(p.id())
	if !ok {
		return &contextNeighborsResult{Status: StatusCompleted, Reason: "noRetainedContext",
			Repair: takeSnapshotRepair()}, nil
	}
	ref := args.Ref
	if args.Question != "" {
		ans, ok := snapshot.Ask(rc.snap, args.Question)
		if !ok {
			return &contextNeighborsResult{Status: StatusCompleted, Reason: "ambiguousPartialOrBelowFloor"}, nil
		}
		ref = ans.Ref
	}
	h, ok := snapshot.Neighbors(rc.snap, ref, args.Limit)
	if !ok {
		return nil, errorf(CodeTargetNotFound, "ref %s is not in the page's last snapshot; take an a11y_snapshot and use a ref from it", ref)
	}
	return &contextNeighborsResult{Status: StatusCompleted, Neighborhood: &h, SnapshotAgeMs: ptr(c.g.now().Sub(rc.takenAt).Milliseconds())}, nil
}

// describedTarget are the three ways an intent names its element: a
// target, a selector, or a description located as intent_locate does.
type describedTarget struct {
	targetArgs
	Description string `json:"description"`
}

// locate resolves a described target. ok is false when none of the three
// is given.
func (x *execCtx) locate(ctx context.Context, d describedTarget) (ref browser.NodeRef, name string, ok bool, err error) {
	if d.Description == "" {
		t, has, err := d.pick()
		if err != nil || !has {
			return ref, "", false, err
		}
		ref, name, err = x.resolve(ctx, t)
		return ref, name, true, err
	}
	if d.Target != nil || d.Selector != "" {
		return ref, "", false, errorf(CodeInvalidRequest, "give target, selector or description, one of them")
	}
	snap, err := x.takeSnapshot(ctx, snapshot.Options{MaxNodes: snapshot.MaxMaxNodes, Interesting: true})
	if err != nil {
		return ref, "", false, err
	}
	ans, found := snapshot.Ask(snap, d.Description)
	if !found {
		return ref, "", false, errorf(CodeTargetNotFound,
			"no single element matches the description clearly (ambiguous, partial or below confidence %.1f); take an a11y_snapshot and pick a ref", snapshot.ConfidenceFloor)
	}
	ref, name, err = x.resolve(ctx, ans.Target)
	return ref, name, true, err
}

func runIntentFollow(ctx context.Context, x *execCtx, in describedTarget) (map[string]any, map[string]any, error) {
	ref, name, ok, err := x.locate(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, errorf(CodeInvalidRequest, "give target, selector or description")
	}
	mark := x.page.DownloadMark()
	res, err := x.page.Follow(ctx, ref)
	ev := map[string]any{"ref": name, "follow": res}
	if err != nil {
		return ev, nil, err
	}
	if res.Popup != nil {
		ev["popup"] = map[string]any{"pageId": res.Popup.ID, "openerId": res.Popup.OpenerID, "page": pageState(res.Popup)}
	} else {
		ev["page"] = pageState(x.page)
	}
	switch res.Outcome {
	case browser.FollowNone:
		if res.Dialog != nil {
			return ev, nil, errorf(CodeDialogOpen, "following opened a %s dialog; answer it with dialog", res.Dialog.Type)
		}
		return ev, nil, errorf(CodeNotVerified, "the target led nowhere: no load, popup or URL change within %s", browser.FollowGrace)
	case browser.FollowFailed:
		return ev, nil, errorf(CodeNavigationFailed, "the new document failed to load: %s", res.Error)
	case browser.FollowDownload:
		// Following a download link downloads: the captured file is the
		// outcome, as a click's would be.
		dls := x.takeDownloads(ctx, mark, 0)
		ev["downloads"] = dls
		for _, d := range dls {
			switch d.State {
			case browser.CaptureCompleted:
			case browser.CaptureInProgress:
				return ev, nil, errorf(CodeTimeout, "the download %s was still running at the deadline (%d bytes so far)", d.SuggestedFilename, d.Bytes)
			default:
				return ev, nil, errorf(CodeNavigationFailed, "the download %s did not complete: %s", d.SuggestedFilename, d.Error)
			}
		}
	case browser.FollowNavigated:
		if res.Status >= 400 {
			return ev, nil, errorf(CodeNavigationFailed, "the link led to an HTTP %d page", res.Status)
		}
	}
	return ev, nil, nil
}

type intentExtractArgs struct {
	describedTarget
	Limit int `json:"limit"`
}

func runIntentExtract(ctx context.Context, x *execCtx, in intentExtractArgs) (map[string]any, map[string]any, error) {
	ref, name, ok, err := x.locate(ctx, in.describedTarget)
	if err != nil {
		return nil, nil, err
	}
	var r *browser.NodeRef
	if ok {
		r = &ref
	}
	out, err := x.page.ExtractContent(ctx, r, in.Limit)
	if err != nil {
		return nil, nil, err
	}
	ev := map[string]any{"extraction": out}
	if name != "" {
		ev["ref"] = name
	}
	return ev, nil, nil
}

type stateConditionArgs struct {
	waitConditionArgs
	Not bool `json:"not"`
}

type intentWaitForStateArgs struct {
	Conditions []stateConditionArgs `json:"conditions"`
}

// wholePage reports whether a wait's target stands for the whole page, so
// the wait reads document.body.innerText: a page-level selector (body,
// html, :root), or a page-level role with no ref for a text or value wait.
func wholePage(t snapshot.Target, kind string) bool {
	if t.Selector != "" {
		return browser.PageLevelCSS(t.Selector)
	}
	return t.Ref == "" && browser.PageLevelRole(t.Role) && (kind == browser.WaitText || kind == browser.WaitValue)
}

func runIntentWaitForState(ctx context.Context, x *execCtx, in intentWaitForStateArgs) (map[string]any, map[string]any, error) {
	conds := make([]browser.StateCondition, len(in.Conditions))
	for i, cm := range in.Conditions {
		c := cm.condition()
		t, hasTarget, err := cm.pick()
		if err != nil {
			return nil, nil, err
		}
		if hasTarget {
			switch {
			case wholePage(t, c.Kind):
			case t.Selector != "":
				c.Target = &browser.NodeRef{Selector: t.Selector}
			default:
				// A semantic target is resolved once, now: name elements
				// that appear later by selector.
				ref, _, err := x.resolve(ctx, t)
				if err != nil {
					return nil, nil, err
				}
				c.Target = &ref
			}
		}
		if c.Kind == browser.WaitElement && c.Target == nil {
			return nil, nil, errorf(CodeInvalidRequest, "condition %d: an element condition needs target or selector", i)
		}
		conds[i] = browser.StateCondition{Condition: c, Not: cm.Not}
	}
	res, err := x.page.WaitState(ctx, conds, x.wait)
	if err != nil {
		return nil, nil, err
	}
	ev := map[string]any{"state": res}
	if !res.Matched {
		return ev, nil, errorf(CodeTimeout, "the state was not reached within %d ms (see state.conditions for the parts that did not hold)", x.wait/time.Millisecond)
	}
	return ev, nil, nil
}

type dismissArgs struct {
	Prefer string `json:"prefer"`
}

func runIntentDismissObstruction(ctx context.Context, x *execCtx, in dismissArgs) (map[string]any, map[string]any, error) {
	d, err := x.page.DismissObstructions(ctx, browser.DismissOptions{Prefer: in.Prefer})
	if err != nil {
		return nil, nil, err
	}
	ev := map[string]any{"obstructions": d}
	if d.Dismissed < d.Found {
		return ev, nil, errorf(CodeNotVerified, "%d of %d obstructions are still shown (see obstructions.items for why)", d.Found-d.Dismissed, d.Found)
	}
	return ev, nil, nil
}
