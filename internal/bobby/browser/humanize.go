package browser

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// Humanized input, used when the session's execution policy has Humanize:
//
//   - the pointer travels to a click point along a curved path (a cubic
//     Bézier from where it last was, with a random bend) in
//     HumanPathSteps moves about 8–16 ms apart, instead of jumping there
//     in one move, and the button is held 40–110 ms;
//   - text is typed one key at a time (keydown with the character, then
//     keyup) 35–140 ms apart, so key handlers see every keystroke, instead
//     of being inserted at once.
//
// Without Humanize a click is one move and a press, and text is inserted
// in one step.
const (
	HumanPathSteps = 18
	// MaxHumanText bounds the text typed key by key; longer text would
	// take minutes, so it is refused rather than silently inserted.
	MaxHumanText = 2000
)

// humanized reports whether the page's session asked for human-like input.
func (p *Page) humanized() bool { return p.session.policy.Humanize }

// moveTo moves the pointer to (x, y): one event, or a humanized path.
func (p *Page) moveTo(ctx context.Context, t *chromedp.Target, x, y float64, mask int64) error {
	if !p.humanized() {
		_, err := cdp.Call(ctx, t, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y, Modifiers: mask,
		})
		return err
	}
	p.mu.Lock()
	from := p.pointer
	p.mu.Unlock()
	x0, y0 := x-120-rand.Float64()*200, y+60+rand.Float64()*120
	if from != nil {
		x0, y0 = from[0], from[1]
	}
	x0, y0 = max(x0, 0), max(y0, 0)
	for _, pt := range humanPath(x0, y0, x, y, HumanPathSteps) {
		if _, err := cdp.Call(ctx, t, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: input.DispatchMouseEventTypeMouseMoved, X: pt[0], Y: pt[1], Modifiers: mask,
		}); err != nil {
			return err
		}
		if err := pause(ctx, 8, 16); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.pointer = &[2]float64{x, y}
	p.mu.Unlock()
	return nil
}

// humanPath returns steps points from (x0, y0) to (x1, y1) along a cubic
// Bézier whose control points bend to one side, eased in and out; the last
// point is exactly the target.
func humanPath(x0, y0, x1, y1 float64, steps int) [][2]float64 {
	dx, dy := x1-x0, y1-y0
	dist := math.Hypot(dx, dy)
	// Unit normal for the bend.
	nx, ny := 0.0, 0.0
	if dist > 0 {
		nx, ny = -dy/dist, dx/dist
	}
	bend := (rand.Float64()*0.3 + 0.1) * dist
	if rand.IntN(2) == 0 {
		bend = -bend
	}
	c1x, c1y := x0+dx*0.3+nx*bend, y0+dy*0.3+ny*bend
	c2x, c2y := x0+dx*0.7+nx*bend*0.5, y0+dy*0.7+ny*bend*0.5
	pts := make([][2]float64, 0, steps)
	for i := 1; i <= steps; i++ {
		s := float64(i) / float64(steps)
		s = s * s * (3 - 2*s) // ease in and out
		u := 1 - s
		px := u*u*u*x0 + 3*u*u*s*c1x + 3*u*s*s*c2x + s*s*s*x1
		py := u*u*u*y0 + 3*u*u*s*c1y + 3*u*s*s*c2y + s*s*s*y1
		pts = append(pts, [2]float64{math.Round(px*100) / 100, math.Round(py*100) / 100})
	}
	pts[len(pts)-1] = [2]float64{x1, y1}
	return pts
}

// holdButton waits between press and release of a humanized click.
func (p *Page) holdButton(ctx context.Context) error {
	if !p.humanized() {
		return nil
	}
	return pause(ctx, 40, 110)
}

// typeKeys types text one key at a time with a human cadence.
func typeKeys(ctx context.Context, t *chromedp.Target, text string) error {
	first := true
	for _, r := range text {
		if !first {
			if err := pause(ctx, 35, 140); err != nil {
				return err
			}
		}
		first = false
		ch := string(r)
		key, code, vk := ch, "", int64(0)
		switch r {
		case '\n':
			key, code, vk, ch = "Enter", "Enter", 13, "\r"
		case '\t':
			key, code, vk = "Tab", "Tab", 9
		}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyDown, Key: key, Code: code, Text: ch, UnmodifiedText: ch,
			WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk,
		}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyUp, Key: key, Code: code,
			WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk,
		}); err != nil {
			return err
		}
	}
	return nil
}

// pause sleeps a random time in [lo, hi] milliseconds, or until ctx ends.
func pause(ctx context.Context, lo, hi int) error {
	d := time.Duration(lo+rand.IntN(hi-lo+1)) * time.Millisecond
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
