package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// MaxScreenshotHeight bounds full-page screenshots (CSS pixels), so an
// endless page cannot exhaust memory.
const MaxScreenshotHeight = 16384

// ScreenshotOptions choose what Screenshot captures: the viewport (zero
// value), the whole page, or one element.
type ScreenshotOptions struct {
	FullPage bool     `json:"fullPage,omitempty"`
	Node     *NodeRef `json:"node,omitempty"`
}

// Screenshot is a PNG capture with its integrity evidence.
type Screenshot struct {
	PNG    []byte  `json:"-"`
	SHA256 string  `json:"sha256"`
	Width  float64 `json:"width"`  // CSS pixels captured
	Height float64 `json:"height"` // CSS pixels captured
}

// Screenshot captures the page as PNG.
func (p *Page) Screenshot(ctx context.Context, opts ScreenshotOptions) (Screenshot, error) {
	if opts.FullPage && opts.Node != nil {
		return Screenshot{}, fmt.Errorf("screenshot: %w", invalidf("choose fullPage or a node, not both"))
	}
	var shot Screenshot
	group := newObjectGroup()
	defer p.release(group)
	err := p.Do(ctx, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		metrics, err := cdp.Call(pctx, t, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return err
		}
		params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}
		var clip *page.Viewport
		switch {
		case opts.FullPage:
			if cs := metrics.CSSContentSize; cs != nil {
				clip = &page.Viewport{Width: math.Ceil(cs.Width), Height: math.Min(math.Ceil(cs.Height), MaxScreenshotHeight), Scale: 1}
				params.CaptureBeyondViewport = new(true)
			}
		case opts.Node != nil:
			n, err := resolve(pctx, t, *opts.Node, group)
			if err != nil {
				return err
			}
			if _, err := cdp.Call(pctx, t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: n.backend}); err != nil && !isProtocolError(err) {
				return err
			}
			box, err := cdp.Call(pctx, t, dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: n.backend})
			if err != nil || box.Model == nil || len(box.Model.Border) != 8 {
				return fmt.Errorf("%s: %w: it has no layout box", *opts.Node, ErrNotInteractable)
			}
			// The box is relative to the viewport; the clip is relative
			// to the document, so add the scroll offset (re-read: the
			// scroll above may have moved it).
			metrics, err = cdp.Call(pctx, t, page.GetLayoutMetrics, cdp.Empty{})
			if err != nil {
				return err
			}
			b := box.Model.Border
			x0, x1 := min(b[0], b[2], b[4], b[6]), max(b[0], b[2], b[4], b[6])
			y0, y1 := min(b[1], b[3], b[5], b[7]), max(b[1], b[3], b[5], b[7])
			if x1-x0 < 1 || y1-y0 < 1 {
				return fmt.Errorf("%s: %w: its box is empty", *opts.Node, ErrNotInteractable)
			}
			var sx, sy float64
			if v := metrics.CSSLayoutViewport; v != nil {
				sx, sy = float64(v.PageX), float64(v.PageY)
			}
			clip = &page.Viewport{X: x0 + sx, Y: y0 + sy, Width: x1 - x0, Height: math.Min(y1-y0, MaxScreenshotHeight), Scale: 1}
			params.CaptureBeyondViewport = new(true)
		}
		params.Clip = clip
		res, err := cdp.Call(pctx, t, page.CaptureScreenshot, params)
		if err != nil {
			return err
		}
		shot.PNG = res.Data
		switch {
		case clip != nil:
			shot.Width, shot.Height = clip.Width, clip.Height
		case metrics.CSSLayoutViewport != nil:
			shot.Width, shot.Height = float64(metrics.CSSLayoutViewport.ClientWidth), float64(metrics.CSSLayoutViewport.ClientHeight)
		}
		return nil
	})
	if err != nil {
		return Screenshot{}, fmt.Errorf("screenshot: %w", err)
	}
	sum := sha256.Sum256(shot.PNG)
	shot.SHA256 = hex.EncodeToString(sum[:])
	return shot, nil
}

// Evaluate runs a JavaScript expression in the page (awaiting a promise)
// and returns its value as JSON: undefined is null, values JSON cannot hold
// (NaN, Infinity, -0, bigint) come back as JSON strings. A thrown exception
// is an *EvalError. The gateway checks the session's javascriptEvaluation
// policy before calling.
//
// An evaluation that ctx or the action timeout cuts off while a script
// still holds the page's main thread (the expression itself, or a page
// script it waited behind) has that script terminated (see stopScript), so
// the page answers later calls; the error then says so. The work the script
// did before it was stopped stays done.
func (p *Page) Evaluate(ctx context.Context, expr string) (json.RawMessage, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("evaluate: %w", invalidf("expression is empty"))
	}
	var out json.RawMessage
	err := p.Do(ctx, func(pctx context.Context) error {
		res, err := evaluate(pctx, chromedp.FromContext(pctx).Target, expr, true)
		if err != nil {
			return err
		}
		switch {
		case res == nil || res.Type == runtime.RemoteObjectTypeUndefined:
			out = json.RawMessage("null")
		case res.UnserializableValue != "":
			b, _ := json.Marshal(string(res.UnserializableValue))
			out = b
		case len(res.Value) == 0:
			out = json.RawMessage("null")
		default:
			out = append(json.RawMessage(nil), res.Value...)
		}
		return nil
	})
	if err != nil {
		if (errors.Is(err, ErrTimeout) || ctx.Err() != nil) && p.stopScript() {
			return nil, fmt.Errorf("evaluate: the script was still running when the call gave up, and was terminated so the page answers again: %w", err)
		}
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return out, nil
}

// probeTimeout is how long stopScript waits for a trivial evaluation before
// it takes the page's main thread to be held by a script.
const probeTimeout = 500 * time.Millisecond

// stopScript ends a script that holds the page's main thread after an
// evaluation was given up, and reports whether it did. The page is asked
// for a trivial evaluation first: a page that answers is idle (what was
// given up awaits a promise that has not settled) and is left alone,
// because Runtime.terminateExecution on an idle page ends the next script
// that runs, whatever it is. A page that does not answer is running a
// script; terminateExecution is answered off the main thread and
// interrupts it. Nothing is tried under a dialog, which blocks the page
// without a script running.
func (p *Page) stopScript() bool {
	if p.PendingDialog() != nil || p.Err() != nil {
		return false
	}
	pctx, cancel := p.callCtx(context.Background(), probeTimeout)
	_, err := chromedp.Call(pctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "0", ReturnByValue: new(true)})
	cancel()
	if err == nil || pctx.Err() == nil || p.PendingDialog() != nil {
		return false
	}
	tctx, cancel := p.callCtx(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := chromedp.Call(tctx, runtime.TerminateExecution, cdp.Empty{}); err != nil {
		p.session.rt.log.Debug("terminate a busy page's script", "err", err)
		return false
	}
	return true
}

// Box is a rectangle in viewport CSS pixels.
type Box struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// NodeInfo describes one element for inspect.
type NodeInfo struct {
	BackendNodeID cdp.BackendNodeID `json:"backendNodeId"`
	Tag           string            `json:"tag"`
	// Attributes are the element's attributes; the value of a password
	// input is never included.
	Attributes map[string]string `json:"attributes"`
	Box        *Box              `json:"box"` // null when not rendered
	Visible    bool              `json:"visible"`
	InViewport bool              `json:"inViewport"`
	// Text is the element's visible text, cut at MaxInspectText (empty for
	// password inputs).
	Text string `json:"text,omitempty"`
}

// MaxInspectText bounds NodeInfo.Text.
const MaxInspectText = 500

// Inspect describes an element: tag, attributes, box and visibility.
func (p *Page) Inspect(ctx context.Context, ref NodeRef) (NodeInfo, error) {
	var info NodeInfo
	err := p.onNode(ctx, ref, func(pctx context.Context, t *chromedp.Target, n node) error {
		var raw struct {
			Tag        string            `json:"tag"`
			Attributes map[string]string `json:"attributes"`
			Box        *Box              `json:"box"`
			Visible    bool              `json:"visible"`
			InViewport bool              `json:"inViewport"`
			Text       string            `json:"text"`
		}
		err := callOn(pctx, t, n.object, `function(max){
			const e = this.nodeType === 1 ? this : this.parentElement;
			if (!e) return {tag: "#" + this.nodeName, attributes: {}, box: null, visible: false, inViewport: false, text: ""};
			const secret = e.tagName === "INPUT" && (e.type || "").toLowerCase() === "password";
			const attributes = {};
			for (const a of e.attributes) attributes[a.name] = (secret && a.name === "value") ? "" : a.value;
			const r = e.getBoundingClientRect();
			const rendered = r.width > 0 && r.height > 0;
			const seen = typeof e.checkVisibility === "function"
				? e.checkVisibility({opacityProperty: true, visibilityProperty: true})
				: getComputedStyle(e).display !== "none";
			const vw = window.innerWidth, vh = window.innerHeight;
			const text = secret ? "" : String(e.innerText ?? e.textContent ?? "").trim().slice(0, max);
			return {
				tag: e.tagName.toLowerCase(), attributes,
				box: rendered ? {x: r.x, y: r.y, width: r.width, height: r.height} : null,
				visible: seen && rendered,
				inViewport: rendered && r.right > 0 && r.bottom > 0 && r.left < vw && r.top < vh,
				text,
			};
		}`, &raw, MaxInspectText)
		if err != nil {
			return err
		}
		info = NodeInfo{
			BackendNodeID: n.backend,
			Tag:           raw.Tag,
			Attributes:    raw.Attributes,
			Box:           raw.Box,
			Visible:       raw.Visible,
			InViewport:    raw.InViewport,
			Text:          raw.Text,
		}
		if info.Attributes == nil {
			info.Attributes = map[string]string{}
		}
		return nil
	})
	if err != nil {
		return NodeInfo{}, fmt.Errorf("inspect: %w", err)
	}
	return info, nil
}
