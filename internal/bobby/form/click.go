package form

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotClickable means a native click would not reach the element: it is
// hidden, has no size, or something is drawn over it.
var ErrNotClickable = errors.New("element is not clickable")

// click presses the left mouse button on the centre of the element, as a
// user would: scroll it into view, check nothing covers it, then click with
// the native pointer at the centre of its box. With jsFallback, an element
// a pointer cannot reach (a custom checkbox drawn under its label) gets
// element.click() instead, which fires the same click, input and change
// events.
func (t Tab) click(ctx context.Context, el Element, jsFallback bool) error {
	t.p.ScrollIntoView(ctx, el)
	var hit struct {
		OK     bool   `json:"ok"`
		Reason string `json:"reason"`
	}
	if err := t.step(ctx, el, "hit", nil, &hit); err != nil {
		return err
	}
	if !hit.OK {
		if jsFallback {
			return t.step(ctx, el, "jsClick", nil, nil)
		}
		return fmt.Errorf("%w: %s", ErrNotClickable, hit.Reason)
	}
	x, y, err := t.p.Centre(ctx, el)
	if err != nil {
		if jsFallback {
			return t.step(ctx, el, "jsClick", nil, nil)
		}
		return err
	}
	return t.p.Click(ctx, x, y)
}
