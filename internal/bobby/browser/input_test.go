package browser

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// click is what the page's listener recorded.
type click struct {
	ID      string `json:"id"`
	Shift   bool   `json:"shift"`
	Ctrl    bool   `json:"ctrl"`
	Alt     bool   `json:"alt"`
	Meta    bool   `json:"meta"`
	Button  int    `json:"button"`
	Detail  int    `json:"detail"`
	Trusted bool   `json:"trusted"`
}

func TestClickModifiersObservedByPage(t *testing.T) {
	p := pageAt(t, "/click.html")
	tests := []struct {
		name string
		opts ClickOptions
		want click
	}{
		{"plain", ClickOptions{}, click{ID: "btn", Detail: 1, Trusted: true}},
		{"shift", ClickOptions{Modifiers: []string{"shift"}}, click{ID: "btn", Shift: true, Detail: 1, Trusted: true}},
		{"ctrl alt", ClickOptions{Modifiers: []string{"ctrl", "ALT"}}, click{ID: "btn", Ctrl: true, Alt: true, Detail: 1, Trusted: true}},
		{"meta shift", ClickOptions{Modifiers: []string{"meta", "shift"}}, click{ID: "btn", Meta: true, Shift: true, Detail: 1, Trusted: true}},
		{"double", ClickOptions{ClickCount: 2}, click{ID: "btn", Detail: 2, Trusted: true}},
		{"right", ClickOptions{Button: "right"}, click{ID: "btn-context", Button: 2, Trusted: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eval[any](t, p, `window.clicks = []; window.keys = []; null`)
			res, err := p.Click(context.Background(), NodeRef{Selector: "#btn"}, tt.opts)
			if err != nil {
				t.Fatalf("Click: %v", err)
			}
			if res.X <= 0 || res.Y <= 0 || res.Dialog != nil {
				t.Errorf("click result = %+v", res)
			}
			got := eval[[]click](t, p, `window.clicks`)
			if len(got) == 0 || got[len(got)-1] != tt.want {
				t.Fatalf("page recorded %+v, want last %+v", got, tt.want)
			}
			// Every modifier pressed was released after the click.
			keys := eval[[]string](t, p, `window.keys`)
			for _, m := range tt.opts.Modifiers {
				name := map[string]string{"shift": "Shift", "ctrl": "Control", "alt": "Alt", "meta": "Meta"}[strings.ToLower(m)]
				down := slices.Index(keys, "down:"+name)
				up := slices.Index(keys, "up:"+name)
				if down < 0 || up < down {
					t.Errorf("keys %v: want down:%s then up:%s", keys, name, name)
				}
			}
		})
	}
}

func TestClickTargets(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/click.html")

	// A backend node ID (what a semantic target resolves to) works like a selector.
	backend := backendOf(t, p, "#far")
	if _, err := p.Click(ctx, NodeRef{BackendNodeID: backend}, ClickOptions{}); err != nil {
		t.Fatalf("Click(backend node below the fold): %v", err)
	}
	if ids := eval[[]string](t, p, `window.clicks.map(c => c.id)`); !slices.Equal(ids, []string{"far"}) {
		t.Errorf("clicks = %v, want [far] (the element was scrolled into view and clicked)", ids)
	}

	tests := []struct {
		name string
		ref  NodeRef
		opts ClickOptions
		want error
	}{
		{"covered", NodeRef{Selector: "#covered"}, ClickOptions{}, ErrNotInteractable},
		{"display none", NodeRef{Selector: "#gone"}, ClickOptions{}, ErrNotInteractable},
		{"no match", NodeRef{Selector: "#nope"}, ClickOptions{}, ErrNodeNotFound},
		{"bad selector", NodeRef{Selector: "##"}, ClickOptions{}, ErrInvalidArgument},
		{"stale backend node", NodeRef{BackendNodeID: 987654}, ClickOptions{}, ErrNodeNotFound},
		{"empty ref", NodeRef{}, ClickOptions{}, ErrInvalidArgument},
		{"unknown modifier", NodeRef{Selector: "#btn"}, ClickOptions{Modifiers: []string{"hyper"}}, ErrInvalidArgument},
		{"duplicate modifier", NodeRef{Selector: "#btn"}, ClickOptions{Modifiers: []string{"shift", "Shift"}}, ErrInvalidArgument},
		{"bad button", NodeRef{Selector: "#btn"}, ClickOptions{Button: "fourth"}, ErrInvalidArgument},
		{"too many clicks", NodeRef{Selector: "#btn"}, ClickOptions{ClickCount: 9}, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eval[any](t, p, `window.clicks = []; null`)
			if _, err := p.Click(ctx, tt.ref, tt.opts); !errors.Is(err, tt.want) {
				t.Errorf("Click = %v, want %v", err, tt.want)
			}
			if n := eval[int](t, p, `window.clicks.length`); n != 0 {
				t.Errorf("a refused click reached the page (%d clicks)", n)
			}
		})
	}

	// Force clicks whatever is on top: the overlay, not the covered button.
	if _, err := p.Click(ctx, NodeRef{Selector: "#covered"}, ClickOptions{Force: true}); err != nil {
		t.Fatalf("forced click: %v", err)
	}
	if n := eval[int](t, p, `window.clicks.length`); n != 0 {
		t.Errorf("forced click on a covered button reached the button")
	}
}

func TestTypeText(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/form.html")
	tests := []struct {
		name  string
		sel   string
		text  string
		clear bool
		read  string
		want  string
	}{
		{"clear and type", "#name", "Ada", true, `document.getElementById("name").value`, "Ada"},
		{"append", "#name", " Lovelace", false, `document.getElementById("name").value`, "Ada Lovelace"},
		{"textarea unicode", "#bio", "línea 1 — ünïcödé ✓", false, `document.getElementById("bio").value`, "línea 1 — ünïcödé ✓"},
		{"contenteditable clear", "#editor", "final", true, `document.getElementById("editor").innerText.trim()`, "final"},
		{"clear only", "#name", "", true, `document.getElementById("name").value`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := p.TypeText(ctx, NodeRef{Selector: tt.sel}, tt.text, tt.clear); err != nil {
				t.Fatalf("TypeText: %v", err)
			}
			if got := eval[string](t, p, tt.read); got != tt.want {
				t.Errorf("value = %q, want %q", got, tt.want)
			}
		})
	}
	// The page saw real input events (frameworks listen to them).
	if n := eval[int](t, p, `window.inputs`); n < 3 {
		t.Errorf("input events = %d, want at least 3", n)
	}
	if err := p.TypeText(ctx, NodeRef{Selector: "#plain"}, "x", false); !errors.Is(err, ErrNotInteractable) {
		t.Errorf("TypeText into a div = %v, want ErrNotInteractable", err)
	}
	if err := p.TypeText(ctx, NodeRef{Selector: "#missing"}, "x", false); !errors.Is(err, ErrNodeNotFound) {
		t.Errorf("TypeText into nothing = %v, want ErrNodeNotFound", err)
	}
}

func TestParseModifiers(t *testing.T) {
	tests := []struct {
		in       []string
		wantKeys []string
		wantMask int64
		wantErr  bool
	}{
		{nil, nil, 0, false},
		{[]string{"shift"}, []string{"shift"}, 8, false},
		{[]string{"meta", "alt", "ctrl", "shift"}, []string{"alt", "ctrl", "meta", "shift"}, 15, false},
		{[]string{" Ctrl "}, []string{"ctrl"}, 2, false},
		{[]string{"shift", "shift"}, nil, 0, true},
		{[]string{"cmd"}, nil, 0, true},
		{[]string{""}, nil, 0, true},
	}
	for _, tt := range tests {
		keys, mask, err := ParseModifiers(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(keys, tt.wantKeys) || mask != tt.wantMask {
			t.Errorf("ParseModifiers(%q) = %v, %d, %v; want %v, %d, err %v", tt.in, keys, mask, err, tt.wantKeys, tt.wantMask, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseModifiers(%q) error %v is not ErrInvalidArgument", tt.in, err)
		}
	}
}

// backendOf returns the backend node ID of the element matching sel, the
// way the snapshot package hands targets to this package.
func backendOf(t testing.TB, p *Page, sel string) cdp.BackendNodeID {
	t.Helper()
	var backend cdp.BackendNodeID
	err := p.Do(context.Background(), func(pctx context.Context) error {
		tg := chromedp.FromContext(pctx).Target
		res, err := cdp.Call(pctx, tg, runtime.Evaluate, runtime.EvaluateParams{Expression: "document.querySelector(" + strconv.Quote(sel) + ")"})
		if err != nil {
			return err
		}
		if res.Result == nil || res.Result.ObjectID == "" {
			return errors.New("no element")
		}
		d, err := cdp.Call(pctx, tg, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
		if err != nil {
			return err
		}
		backend = d.Node.BackendNodeID
		return nil
	})
	if err != nil || backend == 0 {
		t.Fatalf("backend node of %s: %v", sel, err)
	}
	return backend
}
