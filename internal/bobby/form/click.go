package form

import (
	"context"
	"errors"
	"fmt"

	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// ErrNotClickable means a native click would not reach the element: it is
// hidden, has no size, or something is drawn over it.
var ErrNotClickable = errors.New("element is not clickable")

// click presses the left mouse button on the centre of the element, as a
// user would: scroll it into view, check nothing covers it, then send
// mouseMoved, mousePressed and mouseReleased through Input.dispatchMouseEvent.
// With jsFallback, an element a pointer cannot reach (a custom checkbox drawn
// under its label) gets element.click() instead, which fires the same click,
// input and change events.
func click(ctx context.Context, el element, jsFallback bool) error {
	_, _ = chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: el.ref.BackendNodeID})
	var hit struct {
		OK     bool   `json:"ok"`
		Reason string `json:"reason"`
	}
	if err := step(ctx, el, "hit", nil, &hit); err != nil {
		return err
	}
	if !hit.OK {
		if jsFallback {
			return step(ctx, el, "jsClick", nil, nil)
		}
		return fmt.Errorf("%w: %s", ErrNotClickable, hit.Reason)
	}
	x, y, err := centre(ctx, el)
	if err != nil {
		if jsFallback {
			return step(ctx, el, "jsClick", nil, nil)
		}
		return err
	}
	return mouseClick(ctx, x, y)
}

// centre returns the centre of the element's first visible box, in the
// coordinates of the top-level viewport (Chromium maps iframe content there).
func centre(ctx context.Context, el element) (float64, float64, error) {
	res, err := chromedp.Call(ctx, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: el.ref.BackendNodeID})
	if err != nil {
		return 0, 0, fmt.Errorf("%w: no layout box: %v", ErrNotClickable, err)
	}
	for _, q := range res.Quads {
		if len(q) < 8 {
			continue
		}
		x := (q[0] + q[2] + q[4] + q[6]) / 4
		y := (q[1] + q[3] + q[5] + q[7]) / 4
		w := max(q[0], q[2], q[4], q[6]) - min(q[0], q[2], q[4], q[6])
		h := max(q[1], q[3], q[5], q[7]) - min(q[1], q[3], q[5], q[7])
		if w >= 1 && h >= 1 {
			return x, y, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: the element has no visible box", ErrNotClickable)
}

// mouseClick sends one left click at x, y.
func mouseClick(ctx context.Context, x, y float64) error {
	steps := []input.DispatchMouseEventParams{
		{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y},
		{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
		{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1},
	}
	for _, p := range steps {
		if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, p); err != nil {
			return fmt.Errorf("dispatch %s: %w", p.Type, err)
		}
	}
	return nil
}
