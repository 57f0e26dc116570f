package browser

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// MaxObstructions bounds the overlays one DismissObstructions call handles.
const MaxObstructions = 5

// Obstruction is an overlay that stands between an agent and the page: a
// cookie or consent banner, a modal dialog, a full-screen overlay.
type Obstruction struct {
	// Kind is cookie-banner, modal or overlay.
	Kind string `json:"kind"`
	// Element describes it as tag#id.class (no text from inputs).
	Element string `json:"element"`
	// Text is the start of its visible text.
	Text string `json:"text,omitempty"`
	// Control is the visible text or label of the control clicked, or
	// "Escape" when the key was pressed; empty when none was found.
	Control string `json:"control,omitempty"`
	// Dismissed is true once the obstruction is no longer visible.
	Dismissed bool `json:"dismissed"`
	// Note says why it stayed, when it did.
	Note string `json:"note,omitempty"`
}

// DismissOptions tune DismissObstructions.
type DismissOptions struct {
	// Prefer chooses the answer to a consent banner: "reject" (default;
	// reject, then close, then accept) or "accept" (accept, then close,
	// then reject).
	Prefer string `json:"prefer,omitempty"`
}

// Dismissal is the evidence of DismissObstructions.
type Dismissal struct {
	Found     int           `json:"found"`
	Dismissed int           `json:"dismissed"`
	Items     []Obstruction `json:"items"`
}

// findObstructions marks each obstruction and its chosen control with
// data-bobby-obstruction / data-bobby-dismiss attributes and describes
// them. An obstruction is a visible element that is a consent banner (its
// id, class or text speaks of cookies or consent and it is fixed, sticky or
// absolutely placed), a modal (role dialog or alertdialog, aria-modal, an
// open <dialog>), or a fixed layer that covers the centre of the viewport
// and at least a third of it. Sticky headers cover neither.
const findObstructions = `(prefer, max) => {
	const vw = innerWidth, vh = innerHeight;
	const visible = e => {
		const r = e.getBoundingClientRect();
		if (r.width < 2 || r.height < 2) return false;
		return typeof e.checkVisibility === "function" ? e.checkVisibility({opacityProperty: true, visibilityProperty: true}) : true;
	};
	const words = e => ((e.id || "") + " " + (typeof e.className === "string" ? e.className : "") + " " + (e.getAttribute("aria-label") || "")).toLowerCase();
	const consentRe = /cookie|consent|gdpr|\bcmp\b|onetrust|didomi|privacy-notice/;
	const modalRe = /modal|overlay|popup|lightbox|newsletter|interstitial/;
	const all = Array.from(document.querySelectorAll("body *"));
	const cands = [];
	for (const e of all) {
		if (!visible(e)) continue;
		const st = getComputedStyle(e);
		const placed = st.position === "fixed" || st.position === "sticky" || st.position === "absolute";
		const w = words(e);
		const role = (e.getAttribute("role") || "").toLowerCase();
		const r = e.getBoundingClientRect();
		let kind = "";
		if (placed && (consentRe.test(w) || (st.position === "fixed" && /cookie|consent/i.test((e.innerText || "").slice(0, 400)) && r.height < vh * 0.9 ))) kind = "cookie-banner";
		else if (role === "dialog" || role === "alertdialog" || e.getAttribute("aria-modal") === "true" || (e.tagName === "DIALOG" && e.open)) kind = consentRe.test(w) ? "cookie-banner" : "modal";
		else if (st.position === "fixed" && modalRe.test(w)) kind = "modal";
		else if (st.position === "fixed" && r.left <= vw / 2 && r.right >= vw / 2 && r.top <= vh / 2 && r.bottom >= vh / 2 && r.width * r.height >= vw * vh / 3) kind = "overlay";
		if (!kind) continue;
		// Keep the outermost element of nested candidates.
		if (cands.some(c => c.e.contains(e))) continue;
		for (let i = cands.length - 1; i >= 0; i--) if (e.contains(cands[i].e)) cands.splice(i, 1);
		cands.push({e, kind});
	}
	const label = b => (b.innerText || b.value || b.getAttribute("aria-label") || b.title || "").trim().replace(/\s+/g, " ");
	const res = {
		accept: /^(accept|allow|agree|i agree|ok|okay|got it|continue|yes|alle akzeptieren|akzeptieren|accepter)/i,
		reject: /reject|decline|deny|refuse|necessary only|only necessary|essential only|ablehnen|refuser/i,
		close: /^(close|dismiss|no,? thanks|not now|skip|×|✕|✖|x)$|close|dismiss/i,
	};
	const order = prefer === "accept" ? ["accept", "close", "reject"] : ["reject", "close", "accept"];
	const out = [];
	cands.slice(0, max).forEach((c, i) => {
		c.e.setAttribute("data-bobby-obstruction", String(i));
		const buttons = Array.from(c.e.querySelectorAll("button, a, [role=button], input[type=button], input[type=submit]")).filter(visible);
		const kinds = c.kind === "cookie-banner" ? order : ["close", "reject", "accept"];
		let chosen = null;
		for (const k of kinds) {
			chosen = buttons.find(b => res[k].test(label(b)));
			if (chosen) break;
		}
		if (chosen) chosen.setAttribute("data-bobby-dismiss", String(i));
		let desc = c.e.tagName.toLowerCase();
		if (c.e.id) desc += "#" + c.e.id;
		if (typeof c.e.className === "string" && c.e.className.trim()) desc += "." + c.e.className.trim().split(/\s+/).slice(0, 3).join(".");
		out.push({kind: c.kind, element: desc, text: (c.e.innerText || "").trim().replace(/\s+/g, " ").slice(0, 120), control: chosen ? label(chosen).slice(0, 80) : ""});
	});
	return out;
}`

// DismissObstructions finds cookie banners, modals and covering overlays
// and dismisses each the way a person would: it clicks the banner's reject
// (or accept, see DismissOptions), close or dismiss control natively, or,
// for a modal without such a control, presses Escape; then it checks that
// the obstruction is gone. It never removes page elements itself. Finding
// nothing is a result, not an error.
func (p *Page) DismissObstructions(ctx context.Context, o DismissOptions) (Dismissal, error) {
	switch o.Prefer {
	case "", "reject", "accept":
	default:
		return Dismissal{}, fmt.Errorf("dismiss obstructions: %w", invalidf("prefer %q: want reject or accept", o.Prefer))
	}
	var items []Obstruction
	err := p.Do(ctx, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		return evalValue(pctx, t, "("+findObstructions+")("+strconv.Quote(o.Prefer)+", "+strconv.Itoa(MaxObstructions)+")", &items)
	})
	if err != nil {
		return Dismissal{}, fmt.Errorf("dismiss obstructions: %w", err)
	}
	defer p.unmark()
	d := Dismissal{Found: len(items), Items: items}
	for i := range items {
		it := &d.Items[i]
		mark := NodeRef{Selector: fmt.Sprintf(`[data-bobby-obstruction="%d"]`, i)}
		switch {
		case it.Control != "":
			res, err := p.Click(ctx, NodeRef{Selector: fmt.Sprintf(`[data-bobby-dismiss="%d"]`, i)}, ClickOptions{})
			if err != nil {
				it.Note = "clicking its control failed: " + err.Error()
				continue
			}
			if res.Dialog != nil {
				it.Note = "its control opened a " + res.Dialog.Type + " dialog"
				return d, nil
			}
		case it.Kind != "cookie-banner":
			it.Control = "Escape"
			if err := p.pressEscape(ctx); err != nil {
				it.Note = "pressing Escape failed: " + err.Error()
				continue
			}
		default:
			it.Note = "no reject, close or accept control found"
			continue
		}
		if p.goneWithin(ctx, mark, 3*time.Second) {
			it.Dismissed = true
			d.Dismissed++
		} else if it.Note == "" {
			it.Note = "still visible after " + it.Control
		}
	}
	return d, nil
}

// goneWithin polls until the element is gone or hidden, at most d.
func (p *Page) goneWithin(ctx context.Context, ref NodeRef, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		var visible bool
		err := p.Do(ctx, func(pctx context.Context) error {
			t := chromedp.FromContext(pctx).Target
			return evalValue(pctx, t, `(() => { const e = document.querySelector(`+strconv.Quote(ref.Selector)+`);
				if (!e || !e.isConnected) return false;
				const r = e.getBoundingClientRect();
				return r.width >= 2 && r.height >= 2 && (typeof e.checkVisibility !== "function" || e.checkVisibility({opacityProperty: true, visibilityProperty: true})); })()`, &visible)
		})
		var de *DialogError
		if errors.As(err, &de) {
			return false
		}
		// A navigation (the banner's link reloading the page) also ends it.
		if err == nil && !visible {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return false
		}
	}
}

// unmark removes the marker attributes, best effort.
func (p *Page) unmark() {
	if p.PendingDialog() != nil || p.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.Do(ctx, func(pctx context.Context) error {
		return evalValue(pctx, chromedp.FromContext(pctx).Target, `document.querySelectorAll("[data-bobby-obstruction],[data-bobby-dismiss]").forEach(e => { e.removeAttribute("data-bobby-obstruction"); e.removeAttribute("data-bobby-dismiss"); })`, nil)
	})
}

// pressEscape sends an Escape key press to the focused element.
func (p *Page) pressEscape(ctx context.Context) error {
	return p.Do(ctx, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := cdp.Call(pctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: "Escape", Code: "Escape", WindowsVirtualKeyCode: 27, NativeVirtualKeyCode: 27,
			}); err != nil {
				return err
			}
		}
		return nil
	})
}
