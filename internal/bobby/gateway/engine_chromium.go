package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// The Chromium side of the tool steps of enginePage (engine.go): the
// targets resolve through the accessibility tree (x.resolve), and the
// page's own tracker answers networkQuiet.

// settle waits briefly for the network to go quiet after an action, so the
// outcome reports the page after the action's effects.
func (p chromiumPage) settle(ctx context.Context) map[string]any {
	quiet, _ := p.WaitNetworkQuiet(ctx, 150*time.Millisecond, 3*time.Second)
	return map[string]any{"networkQuiet": quiet, "page": p.State()}
}

// click resolves the target, refuses a modified click that would save a
// link as a captured download, clicks natively and reports what settled.
func (p chromiumPage) click(ctx context.Context, x *execCtx, in clickArgs) (map[string]any, map[string]any, error) {
	ref, refName, err := x.requireTarget(ctx, in.targetArgs)
	if err != nil {
		return nil, nil, err
	}
	opts := browser.ClickOptions{Modifiers: in.Modifiers, Button: in.Button, ClickCount: in.ClickCount}
	if saves, err := x.page.SavesLink(ctx, ref, opts.Modifiers); err != nil {
		return map[string]any{"ref": refName}, nil, err
	} else if saves {
		return map[string]any{"ref": refName, "modifiers": opts.Modifiers}, nil, errorf(CodeInvalidRequest, "this modified click saves the link as a download, which bobby captures; held modifiers do not apply to a captured download, so click it without modifiers (or use download_url for the link's target)")
	}
	// Only a download begun from here on is this click's.
	mark := x.page.DownloadMark()
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
	// A plain click's download has begun by the time the network settled;
	// a modified one (alt-click saves a link) may begin later, and must be
	// seen to be refused, so it gets a short grace.
	grace := time.Duration(0)
	if len(opts.Modifiers) > 0 {
		grace = 500 * time.Millisecond
	}
	if dls := x.takeDownloads(ctx, mark, grace); len(dls) > 0 {
		ev["downloads"] = dls
		if len(opts.Modifiers) > 0 {
			return ev, nil, errorf(CodeInvalidRequest, "the click started a download, which bobby captures; held modifiers do not apply to a captured download, so click it without modifiers")
		}
	}
	return ev, map[string]any{"x": res.X, "y": res.Y}, nil
}

func (p chromiumPage) typeText(ctx context.Context, x *execCtx, in typeTextArgs) (map[string]any, map[string]any, error) {
	ref, refName, err := x.requireTarget(ctx, in.targetArgs)
	if err != nil {
		return nil, nil, err
	}
	if err := x.page.TypeText(ctx, ref, in.Text, in.Clear); err != nil {
		return map[string]any{"ref": refName}, nil, err
	}
	// The text itself is never echoed: it may be a password.
	return map[string]any{"ref": refName, "typedChars": len([]rune(in.Text)), "cleared": in.Clear}, nil, nil
}

// waitFor runs a wait_for condition: page-level, selector, semantic or
// networkQuiet.
func (p chromiumPage) waitFor(ctx context.Context, x *execCtx, in waitForArgs) (map[string]any, map[string]any, error) {
	cm := in.Condition
	c := cm.condition()
	// The wait is the caller's timeoutMs; the command deadline leaves
	// waitOverhead beyond it, so an unmet condition is reported as such,
	// not as a cut-off command.
	c.TimeoutMs = int(x.wait / time.Millisecond)
	t, hasTarget, err := cm.pick()
	if err != nil {
		return nil, nil, err
	}
	if hasTarget {
		switch {
		case wholePage(t, c.Kind):
			// the page's text: document.body.innerText
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

// forms runs the form functions on the chromedp context of the page (the
// package functions' path, form.Chromium()); the page's Do cancels the work
// with the dialog's error when a dialog opens.
func (p chromiumPage) forms(ctx context.Context, fn func(ctx context.Context, tab form.Tab) error) error {
	return p.Do(ctx, func(pctx context.Context) error { return fn(pctx, form.On(form.Chromium())) })
}

// snapshot takes the accessibility snapshot over CDP.
func (p chromiumPage) snapshot(ctx context.Context, opts snapshot.Options) (*snapshot.Snapshot, error) {
	var snap *snapshot.Snapshot
	err := p.Do(ctx, func(pctx context.Context) error {
		var err error
		snap, err = snapshot.Take(pctx, opts)
		return err
	})
	return snap, err
}

// screenshot captures the viewport, the full page or one element.
func (p chromiumPage) screenshot(ctx context.Context, x *execCtx, in screenshotArgs) (browser.Screenshot, error) {
	opts := browser.ScreenshotOptions{FullPage: in.FullPage}
	if t, ok, err := in.pick(); err != nil {
		return browser.Screenshot{}, err
	} else if ok {
		ref, _, err := x.resolve(ctx, t)
		if err != nil {
			return browser.Screenshot{}, err
		}
		opts.Node = &ref
	}
	return p.Screenshot(ctx, opts)
}
