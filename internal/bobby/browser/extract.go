package browser

import (
	"context"
	"fmt"

	"github.com/chromedp/chromedp"
)

// Bounds of ExtractContent.
const (
	DefaultExtractItems = 100
	MaxExtractItems     = 1000
	MaxExtractCell      = 500  // characters of one cell or item
	MaxExtractText      = 8000 // characters of a text extraction
)

// Extraction kinds.
const (
	ExtractTable = "table" // Headers and Rows
	ExtractList  = "list"  // Items
	ExtractText  = "text"  // Text and Links
)

// ExtractItem is one list item or link.
type ExtractItem struct {
	Text string `json:"text"`
	Href string `json:"href,omitempty"`
}

// Extraction is the content of a region as data.
type Extraction struct {
	Kind    string        `json:"kind"`
	Headers []string      `json:"headers,omitempty"`
	Rows    [][]string    `json:"rows,omitempty"`
	Items   []ExtractItem `json:"items,omitempty"`
	Text    string        `json:"text,omitempty"`
	Links   []ExtractItem `json:"links,omitempty"`
	// Total counts the rows, items or links before MaxItems cut them.
	Total     int  `json:"total"`
	Truncated bool `json:"truncated"`
}

// ExtractContent reads a region as data, choosing the shape from what it
// is: a table (or a region holding one) becomes headers and rows; a list,
// or a region of three or more same-tag siblings such as cards, becomes
// items with their first link; anything else becomes its visible text and
// links. A nil ref means the page's main landmark, else its body. Password
// fields and input values are never read.
func (p *Page) ExtractContent(ctx context.Context, ref *NodeRef, maxItems int) (Extraction, error) {
	if maxItems < 0 || maxItems > MaxExtractItems {
		return Extraction{}, fmt.Errorf("extract: %w", invalidf("maxItems %d: want 0..%d", maxItems, MaxExtractItems))
	}
	if maxItems == 0 {
		maxItems = DefaultExtractItems
	}
	var out Extraction
	group := newObjectGroup()
	defer p.release(group)
	err := p.Do(ctx, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		r := NodeRef{Selector: "main, [role=main], body"}
		if ref != nil {
			r = *ref
		}
		n, err := resolve(pctx, t, r, group)
		if err != nil {
			return err
		}
		return callOn(pctx, t, n.object, extractContentJS, &out, maxItems, MaxExtractCell, MaxExtractText)
	})
	if err != nil {
		return Extraction{}, fmt.Errorf("extract: %w", err)
	}
	return out, nil
}

const extractContentJS = `function(max, cell, maxText){
	const root = this.nodeType === 1 ? this : this.parentElement;
	const clean = s => String(s || "").replace(/\s+/g, " ").trim().slice(0, cell);
	const link = e => { const a = e.matches("a[href]") ? e : e.querySelector("a[href]"); return a ? a.href : ""; };
	const table = root.matches("table") ? root : root.querySelector("table");
	if (table && (root.matches("table") || table.rows.length >= 2)) {
		const rows = Array.from(table.rows);
		let headers = [];
		if (rows.length && Array.from(rows[0].cells).every(c => c.tagName === "TH")) headers = Array.from(rows.shift().cells, c => clean(c.innerText));
		const body = rows.map(r => Array.from(r.cells, c => clean(c.innerText)));
		return {kind: "table", headers, rows: body.slice(0, max), total: body.length, truncated: body.length > max};
	}
	let items = null;
	const list = root.matches("ul, ol") ? root : null;
	if (list) items = Array.from(list.children).filter(e => e.tagName === "LI");
	if (!items) {
		// The largest group of same-tag, same-class siblings (cards).
		let best = [];
		for (const e of [root, ...root.querySelectorAll("*")]) {
			const groups = new Map();
			for (const c of e.children) {
				const k = c.tagName + "." + (typeof c.className === "string" ? c.className : "");
				groups.set(k, (groups.get(k) || []).concat(c));
			}
			for (const g of groups.values()) if (g.length > best.length && g.length >= 3 && !["SCRIPT","STYLE","BR","OPTION"].includes(g[0].tagName)) best = g;
		}
		if (best.length >= 3) items = best;
	}
	if (items) {
		const out = items.map(e => ({text: clean(e.innerText), href: link(e)})).filter(i => i.text || i.href);
		return {kind: "list", items: out.slice(0, max), total: out.length, truncated: out.length > max};
	}
	const links = Array.from(root.querySelectorAll("a[href]"), a => ({text: clean(a.innerText), href: a.href})).filter(l => l.text);
	const text = String(root.innerText || "").replace(/[ \t]+/g, " ").replace(/\n{3,}/g, "\n\n").trim();
	return {kind: "text", text: text.slice(0, maxText), links: links.slice(0, max), total: links.length, truncated: text.length > maxText || links.length > max};
}`
