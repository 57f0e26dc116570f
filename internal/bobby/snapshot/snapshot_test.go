package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// findNode returns the first node with the role and name.
func findNode(t testing.TB, s *Snapshot, role, name string) Node {
	t.Helper()
	for _, n := range s.Nodes {
		if n.Role == role && n.Name == name {
			return n
		}
	}
	t.Fatalf("no %s %q in snapshot:\n%s", role, name, s.Text)
	return Node{}
}

// pageShows are lines a snapshot of page.html must hold on every engine:
// what a user sees there, refs on what they can act on.
var pageShows = []string{
	"navigation \"Primary\"\n", // structure: no ref
	`link "Home" [ref=`,
	"heading \"Your cart\" [level=1]\n",
	"text: You have 2 items in your cart.",
	`textbox "Coupon" [ref=`,
	`]: "SAVE10"`,
	`textbox "Password" [hasValue] [ref=`,
	`checkbox "Gift wrap" [checked] [ref=`,
	`button "Pay later" [disabled] [ref=`,
	`button "Shadow action" [ref=`, // inside an open shadow root
	`iframe "Promotions" [ref=`,
	`textbox "Promo code" [ref=`, // inside the same-origin iframe
	`button "Apply promo" [ref=`,
	"text: Prices updated", // added after load
}

func TestTakeShowsWhatAUserSees(t *testing.T) {
	ctx := openPage(t, "/page.html")
	waitFor(t, ctx, `document.querySelector('[role=status]') !== null`)
	s := take(t, ctx, Options{})
	for _, want := range pageShows {
		if !strings.Contains(s.Text, want) {
			t.Errorf("snapshot lacks %q:\n%s", want, s.Text)
		}
	}
	if strings.Contains("\n"+s.Text, "\n- ") || strings.Contains(s.Text, " - ") {
		t.Errorf("lines keep the \"- \" prefix:\n%s", s.Text)
	}
	// The button's own text is its name: it must not repeat as a text line.
	if strings.Contains(s.Text, "text: Checkout") {
		t.Errorf("button text repeated as static text:\n%s", s.Text)
	}
	// Every shown ref resolves: a ref in the text is a usable target.
	for _, n := range s.Nodes {
		if n.Ref == "" || !strings.Contains(s.Text, "[ref="+n.Ref+"]") {
			continue
		}
		if _, err := Resolve(ctx, Target{Ref: n.Ref}); err != nil {
			t.Errorf("shown ref %s (%s %q) does not resolve: %v", n.Ref, n.Role, n.Name, err)
		}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "hunter2") || strings.Contains(string(raw), "•") {
		t.Errorf("snapshot leaks the password value or its mask: %s", raw)
	}
	if s.SkippedFrames != 0 {
		t.Errorf("skippedFrames = %d on a page with one same-origin iframe", s.SkippedFrames)
	}
	if s.Title != "Shop" || !strings.HasSuffix(s.URL, "/page.html") {
		t.Errorf("title %q url %q", s.Title, s.URL)
	}
	if s.Truncated || s.ShownNodes != s.TotalNodes || s.ShownNodes != len(s.Nodes) || s.Bytes != len(s.Text) {
		t.Errorf("small page: truncated=%v shown=%d total=%d nodes=%d bytes=%d/%d",
			s.Truncated, s.ShownNodes, s.TotalNodes, len(s.Nodes), s.Bytes, len(s.Text))
	}
	frame := findNode(t, s, "iframe", "Promotions")
	promo := findNode(t, s, "textbox", "Promo code")
	if promo.Depth != frame.Depth+1 || promo.FrameID == "" || frame.FrameID != "" {
		t.Errorf("iframe content not grafted under its iframe: iframe %+v, field %+v", frame, promo)
	}
	if pw := findNode(t, s, "textbox", "Password"); !pw.HasValue || pw.Value != "" {
		t.Errorf("password node = %+v, want hasValue and no value", pw)
	}
}

func TestTakeInterestingKeepsControlsOnly(t *testing.T) {
	ctx := openPage(t, "/page.html")
	s := take(t, ctx, Options{Interesting: true})
	for _, n := range s.Nodes {
		if n.Role == "text" {
			t.Errorf("interesting snapshot has a text node %q", n.Name)
		}
	}
	findNode(t, s, "button", "Checkout")
	findNode(t, s, "textbox", "Promo code")
}

func TestTakeBounds(t *testing.T) {
	ctx := openPage(t, "/big.html")
	full := take(t, ctx, Options{MaxNodes: MaxMaxNodes, MaxBytes: MaxMaxBytes})
	if full.Truncated || full.TotalNodes < 900 {
		t.Fatalf("unbounded snapshot: truncated=%v total=%d", full.Truncated, full.TotalNodes)
	}
	for _, tt := range []struct {
		name      string
		opts      Options
		wantShown int // 0: only bounded by bytes; else the bound, less at most one item
	}{
		{"default bounds", Options{}, DefaultMaxNodes},
		{"max nodes", Options{MaxNodes: 40}, 40},
		{"max bytes", Options{MaxBytes: 2048}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Take(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			maxBytes := tt.opts.MaxBytes
			if maxBytes == 0 {
				maxBytes = DefaultMaxBytes
			}
			switch {
			case !s.Truncated:
				t.Errorf("not truncated")
			case s.TotalNodes != full.TotalNodes:
				t.Errorf("totalNodes = %d, want %d", s.TotalNodes, full.TotalNodes)
			case tt.wantShown > 0 && (s.ShownNodes > tt.wantShown || s.ShownNodes < tt.wantShown-4):
				// An item line of a repeated run is never split, so the node
				// bound stops at the last whole item: a few nodes short.
				t.Errorf("shownNodes = %d, want %d", s.ShownNodes, tt.wantShown)
			case s.ShownNodes == 0 || s.ShownNodes >= s.TotalNodes || len(s.Nodes) != s.ShownNodes:
				t.Errorf("shown %d of %d, %d nodes", s.ShownNodes, s.TotalNodes, len(s.Nodes))
			case s.Bytes > maxBytes || s.Bytes != len(s.Text):
				t.Errorf("bytes = %d (text %d), limit %d", s.Bytes, len(s.Text), maxBytes)
			case !strings.Contains(s.Repair, `{"role":"main"}`) || !strings.Contains(s.Text, "# truncated: showing"):
				t.Errorf("truncation does not name the repair: %q / %q", s.Repair, s.Text[max(0, len(s.Text)-200):])
			}
		})
	}
}

func TestTakeRejectsBadOptions(t *testing.T) {
	ctx := openPage(t, "/page.html")
	for _, opts := range []Options{
		{MaxNodes: MaxMaxNodes + 1},
		{MaxNodes: -1},
		{MaxBytes: 10},
		{MaxBytes: MaxMaxBytes + 1},
		{Target: &Target{Ref: "nope"}},
		{Target: &Target{}},
	} {
		if _, err := Take(ctx, opts); err == nil {
			t.Errorf("Take(%+v) succeeded, want an error", opts)
		}
	}
}

func TestTakeScoped(t *testing.T) {
	ctx := openPage(t, "/big.html")
	s := take(t, ctx, Options{Target: &Target{Role: "main"}, MaxNodes: MaxMaxNodes, MaxBytes: MaxMaxBytes})
	if len(s.Nodes) == 0 || s.Nodes[0].Role != "main" || s.Nodes[0].Depth != 0 {
		t.Fatalf("scoped snapshot does not start at main:\n%.300s", s.Text)
	}
	for _, n := range s.Nodes {
		if n.Role == "navigation" || strings.HasPrefix(n.Name, "Category number") {
			t.Fatalf("scoped to main but shows %s %q", n.Role, n.Name)
		}
	}
	findNode(t, s, "button", "Buy product 299")
	if s.Scope == nil || s.Scope.Role != "main" {
		t.Errorf("scope = %+v", s.Scope)
	}

	page := openPage(t, "/page.html")
	whole := take(t, page, Options{})
	frame := findNode(t, whole, "iframe", "Promotions")
	byRef := take(t, page, Options{Target: &Target{Ref: frame.Ref}})
	if byRef.Nodes[0].Ref != frame.Ref || len(byRef.Nodes) != 4 {
		t.Errorf("scope by iframe ref:\n%s", byRef.Text)
	}
	if _, err := Take(page, Options{Target: &Target{Role: "dialog"}}); !errors.Is(err, ErrTargetNotFound) {
		t.Errorf("scope to a missing dialog: %v, want ErrTargetNotFound", err)
	}
}

func TestRefsAreStable(t *testing.T) {
	ctx := openPage(t, "/page.html")
	first := take(t, ctx, Options{})
	checkout := findNode(t, first, "button", "Checkout")

	// An unrelated mutation before the button shifts every later node.
	eval(t, ctx, `addRow("New arrival")`)
	second := take(t, ctx, Options{})
	if got := findNode(t, second, "button", "Checkout").Ref; got != checkout.Ref {
		t.Errorf("checkout ref changed across snapshots: %s -> %s", checkout.Ref, got)
	}
	added := findNode(t, second, "button", "New arrival")
	if _, clash := first.Find(added.Ref); clash {
		t.Errorf("new button reuses ref %s", added.Ref)
	}
	ref, err := Resolve(ctx, checkout.Target())
	if err != nil || ref.Ref() != checkout.Ref {
		t.Fatalf("Resolve(%s) = %v, %v", checkout.Ref, ref, err)
	}

	eval(t, ctx, `removeCheckout()`)
	_, err = Resolve(ctx, checkout.Target())
	if !errors.Is(err, ErrTargetNotFound) || !strings.Contains(err.Error(), "take a new a11y_snapshot") {
		t.Fatalf("Resolve of a removed node = %v, want ErrTargetNotFound naming the repair", err)
	}
}

func TestResolve(t *testing.T) {
	ctx := openPage(t, "/page.html")
	s := take(t, ctx, Options{})
	checkout := findNode(t, s, "button", "Checkout")
	promo := findNode(t, s, "textbox", "Promo code")
	shadow := findNode(t, s, "button", "Shadow action")
	var wishes []string
	for _, n := range s.Nodes {
		if n.Name == "Add to wishlist" {
			wishes = append(wishes, n.Ref)
		}
	}
	if len(wishes) != 2 {
		t.Fatalf("fixture: %d wishlist buttons", len(wishes))
	}
	one := 1
	for _, tt := range []struct {
		name      string
		target    Target
		wantRef   string
		wantFrame bool
	}{
		{"ref", Target{Ref: checkout.Ref}, checkout.Ref, false},
		{"ref with role and name", checkout.Target(), checkout.Ref, false},
		{"role and exact name", Target{Role: "button", Name: "Checkout"}, checkout.Ref, false},
		{"name folded and trimmed", Target{Role: "Button", Name: "  checkout "}, checkout.Ref, false},
		{"name only", Target{Name: "Checkout"}, checkout.Ref, false},
		{"index picks among equals", Target{Role: "button", Name: "Add to wishlist", Index: &one}, wishes[1], false},
		{"semantic inside iframe", Target{Role: "textbox", Name: "Promo code"}, promo.Ref, true},
		{"selector", Target{Selector: "#checkout"}, checkout.Ref, false},
		{"selector into iframe", Target{Selector: "iframe#promo >> #promo-code"}, promo.Ref, true},
		{"selector pierces shadow root", Target{Selector: "#shadow-btn"}, shadow.Ref, false},
		{"selector with index", Target{Selector: "button.wish", Index: &one}, wishes[1], false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(ctx, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			if got.Ref() != tt.wantRef {
				t.Errorf("ref = %s, want %s", got.Ref(), tt.wantRef)
			}
			if (got.FrameID != "") != tt.wantFrame {
				t.Errorf("frame = %q, want set=%v", got.FrameID, tt.wantFrame)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	ctx := openPage(t, "/page.html")
	five := 5
	for _, tt := range []struct {
		name   string
		target Target
		want   error
		says   string
	}{
		{"ambiguous name", Target{Role: "button", Name: "Add to wishlist"}, ErrAmbiguous, "index 1 = button"},
		{"ambiguous role", Target{Role: "textbox"}, ErrAmbiguous, `"Promo code"`},
		{"ambiguous selector", Target{Selector: "button.wish"}, ErrAmbiguous, "index 0"},
		{"no such name", Target{Role: "button", Name: "Buy now"}, ErrTargetNotFound, RepairSnapshot},
		{"index out of range", Target{Role: "button", Name: "Add to wishlist", Index: &five}, ErrTargetNotFound, "out of range"},
		{"unknown ref", Target{Ref: "e999999"}, ErrTargetNotFound, RepairSnapshot},
		{"no selector match", Target{Selector: "#missing"}, ErrTargetNotFound, RepairSnapshot},
		{"frame part matches no iframe", Target{Selector: "main >> input"}, ErrTargetNotFound, "matches 0 iframes"},
		{"bad selector", Target{Selector: "##"}, ErrInvalidTarget, "##"},
		{"bad ref", Target{Ref: "x12"}, ErrInvalidTarget, "e<number>"},
		{"selector mixed with role", Target{Selector: "#checkout", Role: "button"}, ErrInvalidTarget, "cannot be combined"},
		{"empty", Target{}, ErrInvalidTarget, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(ctx, tt.target)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Resolve(%+v) = %v, want %v", tt.target, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
		})
	}

	// A ref whose node now has another role is stale, not a match.
	s := take(t, ctx, Options{})
	coupon := findNode(t, s, "textbox", "Coupon")
	if _, err := Resolve(ctx, Target{Ref: coupon.Ref, Role: "button"}); !errors.Is(err, ErrTargetNotFound) {
		t.Errorf("ref with a wrong role = %v, want ErrTargetNotFound", err)
	}
	var amb *AmbiguousError
	if _, err := Resolve(ctx, Target{Role: "button", Name: "Add to wishlist"}); !errors.As(err, &amb) || len(amb.Candidates) != 2 || amb.Candidates[1].Index != 1 {
		t.Errorf("ambiguous error = %#v", err)
	}
}

func TestNeedsAPageContext(t *testing.T) {
	browser := browser.Context(t)
	before, err := chromedp.Targets(browser)
	if err != nil {
		t.Fatal(err)
	}
	// A chromedp context that has not run yet has no tab; the package must
	// refuse it rather than open one.
	fresh, cancel := chromedp.NewContext(browser)
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), fresh} {
		if _, err := Take(ctx, Options{}); !errors.Is(err, ErrNoPage) {
			t.Errorf("Take without a page = %v, want ErrNoPage", err)
		}
		if _, err := Resolve(ctx, Target{Ref: "e1"}); !errors.Is(err, ErrNoPage) {
			t.Errorf("Resolve without a page = %v, want ErrNoPage", err)
		}
		if _, err := Describe(ctx, nil); !errors.Is(err, ErrNoPage) {
			t.Errorf("Describe without a page = %v, want ErrNoPage", err)
		}
	}
	after, err := chromedp.Targets(browser)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("targets %d -> %d: a tab was opened", len(before), len(after))
	}
}

func TestDescribe(t *testing.T) {
	ctx := openPage(t, "/page.html")
	s := take(t, ctx, Options{})
	pw := findNode(t, s, "textbox", "Password")
	gift := findNode(t, s, "checkbox", "Gift wrap")
	id, _ := ParseRef(pw.Ref)
	id2, _ := ParseRef(gift.Ref)
	got, err := Describe(ctx, []cdp.BackendNodeID{id, id2, 999999})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[id].HasValue || got[id].Value != "" || got[id2].Role != "checkbox" {
		t.Errorf("Describe = %+v", got)
	}
}

func TestTakeSkipsCrossSiteFrames(t *testing.T) {
	ctx := openPage(t, "/cross.html")
	s := take(t, ctx, Options{})
	findNode(t, s, "button", "Outside")
	findNode(t, s, "iframe", "Other site")
	for _, n := range s.Nodes {
		if n.Name == "Apply promo" {
			t.Errorf("cross-site frame content shown: %+v", n)
		}
	}
	if s.SkippedFrames != 1 {
		t.Errorf("skippedFrames = %d, want 1:\n%s", s.SkippedFrames, s.Text)
	}
}
