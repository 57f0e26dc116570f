package browser

import (
	"context"
	"fmt"
	"slices"

	"github.com/chromedp/chromedp"
)

// SavesLink reports whether clicking ref with modifiers enters the browser's
// download capture whatever the network does: an Alt-click on a link saves
// its target, and a link with a download attribute downloads under any
// modifier. Answering before the click makes the refusal of such a click
// certain, instead of racing the download's start on a slow machine.
func (p *Page) SavesLink(ctx context.Context, ref NodeRef, modifiers []string) (bool, error) {
	if len(modifiers) == 0 {
		return false, nil
	}
	var link struct {
		Href     bool `json:"href"`
		Download bool `json:"download"`
	}
	err := p.onNode(ctx, ref, func(pctx context.Context, t *chromedp.Target, n node) error {
		return callOn(pctx, t, n.object, `function(){
			const e = this.nodeType === 1 ? this : this.parentElement;
			const a = e && e.closest ? e.closest("a[href], area[href]") : null;
			return {href: !!a, download: !!a && a.hasAttribute("download")};
		}`, &link)
	})
	if err != nil {
		return false, fmt.Errorf("inspect link: %w", err)
	}
	return link.Download || (link.Href && slices.Contains(modifiers, "alt")), nil
}
