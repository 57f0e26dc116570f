package browser

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// ClickOptions tune Click.
type ClickOptions struct {
	// Modifiers are held during the click and released after it: a unique
	// subset of shift, ctrl, alt, meta.
	Modifiers []string `json:"modifiers,omitempty"`
	// Button is left (default), right or middle.
	Button string `json:"button,omitempty"`
	// ClickCount is 1 (default) or more for double and triple clicks.
	ClickCount int `json:"clickCount,omitempty"`
	// Force skips the check that nothing covers the element's centre.
	Force bool `json:"force,omitempty"`
}

// ClickResult is the evidence of a click.
type ClickResult struct {
	// X and Y are the viewport coordinates clicked, in CSS pixels.
	X float64 `json:"x"`
	Y float64 `json:"y"`
	// Dialog is set when the click opened a JavaScript dialog; the click
	// itself was delivered.
	Dialog *Dialog `json:"dialog,omitempty"`
}

// modifierKey describes one modifier key for Input.dispatchKeyEvent.
type modifierKey struct {
	name, key, code string
	vk, bit         int64
}

// modifierKeys in the order they are pressed.
var modifierKeys = []modifierKey{
	{"alt", "Alt", "AltLeft", 18, 1},
	{"ctrl", "Control", "ControlLeft", 17, 2},
	{"meta", "Meta", "MetaLeft", 91, 4},
	{"shift", "Shift", "ShiftLeft", 16, 8},
}

// ParseModifiers validates a modifier list (unique; shift, ctrl, alt, meta,
// case-insensitive) and returns the keys in press order and the CDP bitmask.
func ParseModifiers(mods []string) (keys []string, mask int64, err error) {
	seen := map[string]bool{}
	for _, m := range mods {
		m = strings.ToLower(strings.TrimSpace(m))
		i := slices.IndexFunc(modifierKeys, func(k modifierKey) bool { return k.name == m })
		if i < 0 {
			return nil, 0, invalidf("modifier %q: want shift, ctrl, alt or meta", m)
		}
		if seen[m] {
			return nil, 0, invalidf("modifier %q given twice", m)
		}
		seen[m] = true
	}
	for _, k := range modifierKeys {
		if seen[k.name] {
			keys = append(keys, k.name)
			mask |= k.bit
		}
	}
	return keys, mask, nil
}

// mouseButton maps a button name to CDP's button and buttons bitmask.
func mouseButton(name string) (input.MouseButton, int64, error) {
	switch strings.ToLower(name) {
	case "", "left":
		return input.MouseButtonLeft, 1, nil
	case "right":
		return input.MouseButtonRight, 2, nil
	case "middle":
		return input.MouseButtonMiddle, 4, nil
	}
	return "", 0, invalidf("button %q: want left, right or middle", name)
}

// MaxClickCount bounds ClickOptions.ClickCount.
const MaxClickCount = 3

// Click clicks the element natively: it scrolls it into view, checks that
// nothing covers its centre (unless Force), holds the modifiers, and sends
// Input.dispatchMouseEvent moved/pressed/released at the centre. A dialog
// opened by the click is reported in the result, not as an error.
func (p *Page) Click(ctx context.Context, ref NodeRef, opts ClickOptions) (ClickResult, error) {
	keys, mask, err := ParseModifiers(opts.Modifiers)
	if err != nil {
		return ClickResult{}, fmt.Errorf("click: %w", err)
	}
	button, buttons, err := mouseButton(opts.Button)
	if err != nil {
		return ClickResult{}, fmt.Errorf("click: %w", err)
	}
	count := opts.ClickCount
	if count == 0 {
		count = 1
	}
	if count < 0 || count > MaxClickCount {
		return ClickResult{}, fmt.Errorf("click: %w", invalidf("clickCount %d: want 1..%d", count, MaxClickCount))
	}

	var res ClickResult
	delivered := false
	err = p.onNode(ctx, ref, func(pctx context.Context, t *chromedp.Target, n node) error {
		x, y, err := clickPoint(pctx, t, n)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		res.X, res.Y = x, y
		if !opts.Force {
			if err := checkHit(pctx, t, n, x, y); err != nil {
				return fmt.Errorf("%s: %w", ref, err)
			}
		}

		// Input to a window that is not in front waits for frames that
		// never come (measured: 5 s per mouse event after a popup took
		// the focus), so bring the page forward first.
		if _, err := cdp.Call(pctx, t, page.BringToFront, cdp.Empty{}); err != nil {
			return fmt.Errorf("bring page to front: %w", err)
		}

		pressed := 0
		defer func() {
			// Release held modifiers even when the click failed; skipped
			// under a dialog, which would swallow the events.
			if pressed == 0 || p.PendingDialog() != nil {
				return
			}
			rctx, cancel := p.callCtx(context.Background(), 2*time.Second)
			defer cancel()
			_ = releaseKeys(rctx, keys[:pressed], mask)
		}()
		var held int64
		for _, name := range keys {
			k := modifierKeys[slices.IndexFunc(modifierKeys, func(k modifierKey) bool { return k.name == name })]
			held |= k.bit
			if _, err := cdp.Call(pctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: input.DispatchKeyEventTypeRawKeyDown, Modifiers: held, Key: k.key, Code: k.code,
				WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Location: 1,
			}); err != nil {
				return fmt.Errorf("press %s: %w", name, err)
			}
			pressed++
		}
		if err := p.moveTo(pctx, t, x, y, mask); err != nil {
			return fmt.Errorf("move mouse: %w", err)
		}
		for i := 1; i <= count; i++ {
			if _, err := cdp.Call(pctx, t, input.DispatchMouseEvent, input.DispatchMouseEventParams{
				Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Modifiers: mask,
				Button: button, Buttons: buttons, ClickCount: int64(i),
			}); err != nil {
				return fmt.Errorf("press mouse: %w", err)
			}
			if i == count {
				// From here on the page has the click: a dialog that
				// blocks the release still means the click happened.
				delivered = true
			}
			if err := p.holdButton(pctx); err != nil {
				return err
			}
			if _, err := cdp.Call(pctx, t, input.DispatchMouseEvent, input.DispatchMouseEventParams{
				Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Modifiers: mask,
				Button: button, ClickCount: int64(i),
			}); err != nil {
				return fmt.Errorf("release mouse: %w", err)
			}
		}
		return nil
	})
	var de *DialogError
	if errors.As(err, &de) && delivered {
		res.Dialog = &de.Dialog
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("click: %w", err)
	}
	return res, nil
}

// releaseKeys sends keyUp for the held modifiers in reverse order.
func releaseKeys(ctx context.Context, keys []string, mask int64) error {
	t := chromedp.FromContext(ctx).Target
	for i := len(keys) - 1; i >= 0; i-- {
		k := modifierKeys[slices.IndexFunc(modifierKeys, func(k modifierKey) bool { return k.name == keys[i] })]
		mask &^= k.bit
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyUp, Modifiers: mask, Key: k.key, Code: k.code,
			WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Location: 1,
		}); err != nil {
			return err
		}
	}
	return nil
}

// clickPoint scrolls the node into view and returns the centre of the part
// of its first visible box that lies in the viewport.
func clickPoint(ctx context.Context, t *chromedp.Target, n node) (float64, float64, error) {
	if _, err := cdp.Call(ctx, t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: n.backend}); err != nil {
		if isProtocolError(err) {
			return 0, 0, fmt.Errorf("%w: it has no layout box (hidden?)", ErrNotInteractable)
		}
		return 0, 0, err
	}
	quads, err := cdp.Call(ctx, t, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: n.backend})
	if err != nil {
		if isProtocolError(err) {
			return 0, 0, fmt.Errorf("%w: it has no layout box (hidden?)", ErrNotInteractable)
		}
		return 0, 0, err
	}
	metrics, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return 0, 0, err
	}
	vw, vh := math.Inf(1), math.Inf(1)
	if v := metrics.CSSLayoutViewport; v != nil {
		vw, vh = float64(v.ClientWidth), float64(v.ClientHeight)
	}
	for _, q := range quads.Quads {
		if len(q) != 8 {
			continue
		}
		minX, maxX := min(q[0], q[2], q[4], q[6]), max(q[0], q[2], q[4], q[6])
		minY, maxY := min(q[1], q[3], q[5], q[7]), max(q[1], q[3], q[5], q[7])
		minX, minY = max(minX, 0), max(minY, 0)
		maxX, maxY = min(maxX, vw), min(maxY, vh)
		if maxX-minX < 1 || maxY-minY < 1 {
			continue
		}
		return math.Round((minX+maxX)/2*100) / 100, math.Round((minY+maxY)/2*100) / 100, nil
	}
	return 0, 0, fmt.Errorf("%w: it has no visible box in the viewport", ErrNotInteractable)
}

// checkHit verifies that the element at (x, y) is the node or inside it
// (across shadow roots and same-origin frames).
func checkHit(ctx context.Context, t *chromedp.Target, n node, x, y float64) error {
	hit, err := cdp.Call(ctx, t, dom.GetNodeForLocation, dom.GetNodeForLocationParams{
		X: int64(x), Y: int64(y), IncludeUserAgentShadowDOM: new(true),
	})
	if err != nil || hit.BackendNodeID == 0 || hit.BackendNodeID == n.backend {
		return nil // no answer is no evidence of a cover
	}
	obj, err := cdp.Call(ctx, t, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: hit.BackendNodeID})
	if err != nil || obj.Object == nil {
		return nil
	}
	var inside bool
	err = callOn(ctx, t, n.object, `function(h){
		for (let x = h; x; ) {
			if (x === this) return true;
			if (x.nodeType === 9) { x = x.defaultView && x.defaultView.frameElement; continue; }
			x = x.parentNode || x.host;
		}
		return false;
	}`, &inside, obj.Object.ObjectID)
	if err != nil || inside {
		return nil
	}
	var desc string
	_ = callOn(ctx, t, obj.Object.ObjectID, `function(){
		const e = this.nodeType === 1 ? this : this.parentElement;
		if (!e) return "";
		let s = e.tagName.toLowerCase();
		if (e.id) s += "#" + e.id;
		if (typeof e.className === "string" && e.className.trim()) s += "." + e.className.trim().split(/\s+/).slice(0, 3).join(".");
		return s;
	}`, &desc)
	return fmt.Errorf("%w: another element (%s) covers its centre; dismiss the obstruction or click with force", ErrNotInteractable, desc)
}

// TypeText focuses the element and inserts text as if typed (input events
// fire; key handlers see no keystrokes). With clear, the current content is
// selected and deleted first.
func (p *Page) TypeText(ctx context.Context, ref NodeRef, text string, clear bool) error {
	if p.humanized() && len([]rune(text)) > MaxHumanText {
		return fmt.Errorf("type text: %w", invalidf("humanized typing takes at most %d characters, got %d", MaxHumanText, len([]rune(text))))
	}
	group := newObjectGroup()
	defer p.release(group)
	// Key-by-key typing takes up to 140 ms a character on top of the
	// action's own bound.
	timeout := p.session.rt.opts.ActionTimeout
	if p.humanized() {
		timeout += time.Duration(len([]rune(text))) * 150 * time.Millisecond
	}
	err := p.do(ctx, timeout, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		n, err := resolve(pctx, t, ref, group)
		if err != nil {
			return err
		}
		if _, err := cdp.Call(pctx, t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: n.backend}); err != nil && !isProtocolError(err) {
			return err
		}
		if _, err := cdp.Call(pctx, t, page.BringToFront, cdp.Empty{}); err != nil {
			return fmt.Errorf("bring page to front: %w", err)
		}
		if _, err := cdp.Call(pctx, t, dom.Focus, dom.FocusParams{BackendNodeID: n.backend}); err != nil {
			if isProtocolError(err) {
				return fmt.Errorf("%s: %w: it cannot take focus", ref, ErrNotInteractable)
			}
			return err
		}
		if clear {
			var had bool
			if err := callOn(pctx, t, n.object, `function(){
				const e = this;
				if ("value" in e && typeof e.select === "function") {
					const had = e.value !== "";
					e.select();
					return had;
				}
				const r = document.createRange();
				r.selectNodeContents(e);
				const s = getSelection();
				s.removeAllRanges();
				s.addRange(r);
				return (e.textContent || "") !== "";
			}`, &had); err != nil {
				return fmt.Errorf("select content: %w", err)
			}
			if had {
				for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
					if _, err := cdp.Call(pctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
						Type: typ, Key: "Backspace", Code: "Backspace",
						WindowsVirtualKeyCode: 8, NativeVirtualKeyCode: 8,
					}); err != nil {
						return fmt.Errorf("clear content: %w", err)
					}
				}
			}
		}
		if text == "" {
			return nil
		}
		if p.humanized() {
			if err := typeKeys(pctx, t, text); err != nil {
				return fmt.Errorf("type keys: %w", err)
			}
			return nil
		}
		if _, err := cdp.Call(pctx, t, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
			return fmt.Errorf("insert text: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("type text: %w", err)
	}
	return nil
}
