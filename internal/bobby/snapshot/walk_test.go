package snapshot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/bidi/biditest"
	"github.com/deltaharness/delta/internal/bobby/pagetest"
)

// One Firefox serves the walker tests of this binary, launched on first use.
// Without Firefox they skip, except under CI, where they fail.
var (
	ff biditest.Firefox
	// every fixture directory the engine comparison reads, on one server
	allFixtures = sync.OnceValue(func() *httptest.Server {
		mux := http.NewServeMux()
		mux.Handle("/gateway/", http.StripPrefix("/gateway", http.FileServer(pagetest.Dir("../gateway/testdata"))))
		mux.Handle("/form/", http.StripPrefix("/form", http.FileServer(pagetest.Dir("../form/testdata"))))
		mux.Handle("/", http.FileServer(http.Dir("testdata")))
		return httptest.NewServer(mux)
	})
)

func firefox(t testing.TB) *bidi.Browser {
	t.Helper()
	return ff.Browser(t)
}

// ffCtx bounds one Firefox call against a hang, not its speed: on a loaded
// machine a single locateNodes has taken over a minute.
func ffCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// ffPage is one Firefox tab in its own user context, with the ref base the
// next walk continues from.
type ffPage struct {
	b    *bidi.Browser
	bc   string
	next int64
}

func ffOpen(t testing.TB, url string) *ffPage {
	t.Helper()
	b, bc := ff.Tab(t, 1280, 900)
	p := &ffPage{b: b, bc: bc, next: 1}
	p.navigate(t, url)
	return p
}

func (p *ffPage) navigate(t testing.TB, url string) {
	t.Helper()
	if _, err := p.b.Navigate(ffCtx(t), p.bc, url, bidi.WaitComplete); err != nil {
		t.Fatal(err)
	}
}

const sandbox = "bobby"

func (p *ffPage) walk(t testing.TB) *Walk {
	t.Helper()
	v, err := p.b.CallFunctionIn(ffCtx(t), p.bc, sandbox, WalkFunction(), "walk", p.next)
	if err != nil {
		t.Fatal(err)
	}
	js, ok := v.Field("json")
	if !ok {
		t.Fatalf("walk answered %+v", v)
	}
	raw, err := js.Decode()
	if err != nil {
		t.Fatal(err)
	}
	fr, _ := v.Field("frames")
	var frames []string
	for _, f := range fr.Items() {
		frames = append(frames, f.WindowContext())
	}
	text, _ := raw.(string)
	w, err := ParseWalk([]byte(text), frames)
	if err != nil {
		t.Fatal(err)
	}
	p.next = w.Next
	return w
}

func (p *ffPage) take(t testing.TB, opts Options) *Snapshot {
	t.Helper()
	s, err := p.walk(t).Snapshot(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (p *ffPage) locate(t testing.TB, ref string) Location {
	t.Helper()
	l, _, _ := p.locateEl(t, ref)
	return l
}

// locateEl also returns the element's shared id, the protocol's name for
// it, and that of the shadow root holding it ("" in a document).
func (p *ffPage) locateEl(t testing.TB, ref string) (loc Location, shared, root string) {
	t.Helper()
	id, err := ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.b.CallFunctionIn(ffCtx(t), p.bc, sandbox, WalkFunction(), "locate", int64(id))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := v.Field("json")
	raw, _ := js.Decode()
	text, _ := raw.(string)
	l, err := ParseLocation([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	el, _ := v.Field("el")
	sr, _ := v.Field("root")
	return l, el.SharedID, sr.SharedID
}

func (p *ffPage) eval(t testing.TB, expr string) any {
	t.Helper()
	v, err := p.b.Evaluate(ffCtx(t), p.bc, expr)
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	d, err := v.Decode()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (p *ffPage) waitFor(t testing.TB, cond string) {
	t.Helper()
	// a hang guard, not a speed assertion
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if p.eval(t, cond) == true {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("condition never held: %s", cond)
}

// click presses and releases the left button at the element's center, as
// a user's pointer would.
func (p *ffPage) click(t testing.TB, l Location) {
	t.Helper()
	err := p.b.PerformActions(ffCtx(t), p.bc, []any{map[string]any{
		"type": "pointer", "id": "mouse", "parameters": map[string]string{"pointerType": "mouse"},
		"actions": []any{
			map[string]any{"type": "pointerMove", "x": int(l.X), "y": int(l.Y)},
			map[string]any{"type": "pointerDown", "button": 0},
			map[string]any{"type": "pointerUp", "button": 0},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFirefoxWalkShowsWhatAUserSees(t *testing.T) {
	p := ffOpen(t, allFixtures().URL+"/page.html")
	p.waitFor(t, `document.querySelector('[role=status]') !== null`)
	s := p.take(t, Options{})
	for _, want := range pageShows {
		if !strings.Contains(s.Text, want) {
			t.Errorf("firefox snapshot lacks %q:\n%s", want, s.Text)
		}
	}
	if strings.Contains(s.Text, "text: Checkout") || strings.Contains(s.Text, "text: Coupon") {
		t.Errorf("a control's own text repeats as static text:\n%s", s.Text)
	}
	if strings.Contains(s.Text, "hunter2") {
		t.Errorf("snapshot leaks the password:\n%s", s.Text)
	}
	if s.Title != "Shop" || !strings.HasSuffix(s.URL, "/page.html") || s.SkippedFrames != 0 {
		t.Errorf("title %q url %q skippedFrames %d", s.Title, s.URL, s.SkippedFrames)
	}
	frame := findNode(t, s, "iframe", "Promotions")
	promo := findNode(t, s, "textbox", "Promo code")
	if promo.Depth != frame.Depth+1 || promo.FrameID == "" || frame.FrameID != "" {
		t.Errorf("iframe content not grafted under its iframe: iframe %+v, field %+v", frame, promo)
	}
	// The frame id is the iframe's browsing context, as the protocol names it.
	tree, err := p.b.Tree(ffCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var child string
	for _, c := range tree {
		if c.Context == p.bc && len(c.Children) == 1 {
			child = c.Children[0].Context
		}
	}
	if child == "" || promo.FrameID != child {
		t.Errorf("field frame %q, the iframe's browsing context is %q", promo.FrameID, child)
	}
}

// interactive lists the (role, name) of every node that carries a ref in
// the text, the nodes an agent acts on, sorted.
func interactive(s *Snapshot) []string {
	var out []string
	for _, n := range s.Nodes {
		if n.Ref != "" && refRoles[n.Role] {
			out = append(out, fmt.Sprintf("%s %q %v", n.Role, n.Name, n.States))
		}
	}
	sort.Strings(out)
	return out
}

// ariaRole are the shown roles that are ARIA roles, which the browser's
// accessibility locator takes (date, time, color and iframe are not).
var ariaRole = map[string]bool{
	"button": true, "link": true, "textbox": true, "searchbox": true, "combobox": true, "listbox": true,
	"option": true, "checkbox": true, "radio": true, "switch": true, "slider": true, "spinbutton": true,
	"menuitem": true, "tab": true, "treeitem": true, "dialog": true, "alertdialog": true,
}

// browserDiffers are the controls where Firefox's own accessibility engine
// answers differently from Chromium's, and the walker follows Chromium so
// the two engines' snapshots read the same: Firefox gives a password field
// its own role (no "textbox"), and a file input is a group holding a
// "Browse…" button where Chromium has one button.
var browserDiffers = map[string]bool{
	"textbox Password": true, "textbox Login password": true, "button Attachment": true,
}

func diff(a, b []string) (onlyA, onlyB []string) {
	count := map[string]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		count[x]--
	}
	for k, v := range count {
		for ; v > 0; v-- {
			onlyA = append(onlyA, k)
		}
		for ; v < 0; v++ {
			onlyB = append(onlyB, k)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}

// TestEnginesAgreeOnInteractiveElements runs the same fixtures through
// Chromium's accessibility tree and the Firefox walker: the controls an
// agent acts on (role, name and states) must be the same on both.
func TestEnginesAgreeOnInteractiveElements(t *testing.T) {
	firefox(t)
	for _, path := range []string{
		"/page.html", "/catalog.html", "/repeated.html", "/frame.html",
		"/gateway/signup.html", "/gateway/form.html", "/gateway/index.html",
		"/form/form.html", "/form/verify.html",
	} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			url := allFixtures().URL + path
			cctx := browser.Open(t, url)
			p := ffOpen(t, url)
			if strings.HasSuffix(path, "/page.html") {
				waitFor(t, cctx, `document.querySelector('[role=status]') !== null`)
				p.waitFor(t, `document.querySelector('[role=status]') !== null`)
			}
			opts := Options{MaxNodes: MaxMaxNodes, MaxBytes: MaxMaxBytes}
			cs, err := Take(cctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			fs := p.take(t, opts)
			onlyC, onlyF := diff(interactive(cs), interactive(fs))
			if len(onlyC)+len(onlyF) > 0 {
				t.Errorf("engines disagree on the controls of %s\nonly chromium: %q\nonly firefox:  %q\n--- chromium\n%s--- firefox\n%s",
					path, onlyC, onlyF, cs.Text, fs.Text)
			}
			if len(interactive(fs)) == 0 {
				t.Errorf("no controls at all on %s:\n%s", path, fs.Text)
			}
			// Every shown ref resolves to a live element of the same role,
			// and Firefox's own accessibility engine, asked for that role
			// and name, finds that very element.
			// (The oracle is asked about the first three controls of each
			// role, at most 40 a page: each question costs Firefox a quarter
			// of a second on a large page, and a catalogue's 240 buttons
			// ask the same question 240 times.)
			asked, perRole := 0, map[string]int{}
			for _, n := range fs.Nodes {
				if n.Ref == "" || !refRoles[n.Role] {
					continue
				}
				l, shared, root := p.locateEl(t, n.Ref)
				if ariaRole[n.Role] && n.Name != "" && !browserDiffers[n.Role+" "+n.Name] && asked < 40 && perRole[n.Role] < 3 {
					asked++
					perRole[n.Role]++
					bc := p.bc
					if n.FrameID != "" {
						bc = n.FrameID
					}
					var start []string
					if root != "" {
						start = append(start, root)
					}
					found, err := p.b.LocateByRole(ffCtx(t), bc, n.Role, n.Name, 0, start...)
					if err != nil {
						t.Fatal(err)
					}
					hit := false
					for _, f := range found {
						hit = hit || f.SharedID == shared
					}
					if !hit {
						t.Errorf("Firefox's accessibility engine finds no %s %q at ref %s (it finds %d such nodes elsewhere)", n.Role, n.Name, n.Ref, len(found))
					}
				}
				if err := l.Check(n.Target()); err != nil {
					t.Errorf("ref %s (%s %q): %v", n.Ref, n.Role, n.Name, err)
				}
				if displayRole(l.Role) != n.Role || normalize(l.Name) != n.Name && !strings.HasPrefix(normalize(l.Name), strings.TrimSuffix(n.Name, "…")) {
					t.Errorf("ref %s locates %s %q, the snapshot said %s %q", n.Ref, l.Role, l.Name, n.Role, n.Name)
				}
			}
		})
	}
}

func TestFirefoxRefsClickIntoFramesAndShadowRoots(t *testing.T) {
	p := ffOpen(t, allFixtures().URL+"/page.html")
	p.eval(t, `(() => {
		window.clicks = [];
		const rec = (e) => window.clicks.push(e.composedPath()[0].textContent);
		document.getElementById('promo').contentDocument.addEventListener('click', rec);
		document.addEventListener('click', rec);
	})()`)
	s := p.take(t, Options{})
	for i, name := range []string{"Shadow action", "Apply promo", "Checkout"} {
		n := findNode(t, s, "button", name)
		l := p.locate(t, n.Ref)
		if err := l.Check(n.Target()); err != nil || !l.Visible {
			t.Fatalf("%s: %v (visible %v)", name, err, l.Visible)
		}
		if (name == "Apply promo") != l.InFrame {
			t.Errorf("%s: inFrame = %v", name, l.InFrame)
		}
		p.click(t, l)
		p.waitFor(t, fmt.Sprintf(`window.clicks.length > %d`, i))
		got := p.eval(t, `window.clicks[window.clicks.length-1]`)
		if got != name {
			t.Errorf("clicking ref %s (%s) reached %v", n.Ref, name, got)
		}
	}
}

func TestFirefoxRefsAreStable(t *testing.T) {
	p := ffOpen(t, allFixtures().URL+"/page.html")
	first := p.take(t, Options{})
	checkout := findNode(t, first, "button", "Checkout")
	coupon := findNode(t, first, "textbox", "Coupon")
	p.eval(t, `window.addRow("Fresh row")`)
	second := p.take(t, Options{})
	if got := findNode(t, second, "button", "Checkout"); got.Ref != checkout.Ref {
		t.Errorf("checkout ref moved %s → %s after an unrelated insertion", checkout.Ref, got.Ref)
	}
	if got := findNode(t, second, "textbox", "Coupon"); got.Ref != coupon.Ref {
		t.Errorf("coupon ref moved %s → %s", coupon.Ref, got.Ref)
	}
	fresh := findNode(t, second, "button", "Fresh row")
	if fresh.Ref == checkout.Ref || fresh.Ref == coupon.Ref {
		t.Errorf("a new node reused ref %s", fresh.Ref)
	}
	p.eval(t, `window.removeCheckout()`)
	err := p.locate(t, checkout.Ref).Check(checkout.Target())
	if !errors.Is(err, ErrTargetNotFound) || !strings.Contains(err.Error(), RepairSnapshot) {
		t.Errorf("removed node: %v, want a not-found error naming the repair", err)
	}
	// A role that no longer holds is refused: a ref names what it named.
	if err := p.locate(t, coupon.Ref).Check(Target{Ref: coupon.Ref, Role: "button"}); !errors.Is(err, ErrTargetNotFound) {
		t.Errorf("ref with a changed role: %v", err)
	}
	// A new document continues the numbering: an old ref never names a node
	// of the next page.
	p.navigate(t, allFixtures().URL+"/frame.html")
	third := p.take(t, Options{})
	apply := findNode(t, third, "button", "Apply promo")
	var highest int64
	for _, n := range first.Nodes {
		if id, err := ParseRef(n.Ref); err == nil && int64(id) > highest {
			highest = int64(id)
		}
	}
	if id, _ := ParseRef(apply.Ref); int64(id) <= highest {
		t.Errorf("ref %s on the new page is below the first page's refs", apply.Ref)
	}
	if l := p.locate(t, checkout.Ref); l.Found {
		t.Errorf("an old page's ref still resolves on the new page: %+v", l)
	}
	// Scoping by ref and by role works on walked pages; a selector says why not.
	p.navigate(t, allFixtures().URL+"/page.html")
	w := p.walk(t)
	nav := findNode(t, mustSnap(t, w, Options{}), "navigation", "Primary")
	scoped := mustSnap(t, w, Options{Target: &Target{Ref: nav.Ref}})
	if !strings.HasPrefix(scoped.Text, `navigation "Primary"`) || strings.Contains(scoped.Text, "Checkout") {
		t.Errorf("scoped by ref:\n%s", scoped.Text)
	}
	if s := mustSnap(t, w, Options{Target: &Target{Role: "main"}}); !strings.Contains(s.Text, "Checkout") || strings.Contains(s.Text, "Help") {
		t.Errorf("scoped to main:\n%s", s.Text)
	}
	if _, err := w.Snapshot(Options{Target: &Target{Selector: "main"}}); !errors.Is(err, ErrInvalidTarget) {
		t.Errorf("selector scope: %v", err)
	}
	if _, err := w.Pick(Target{Role: "button", Name: "Remove"}); !errors.Is(err, ErrAmbiguous) && !errors.Is(err, ErrTargetNotFound) {
		t.Errorf("pick of a name two buttons share by text only: %v", err)
	}
	if ref, err := w.Pick(Target{Role: "button", Name: "Add to wishlist", Index: new(1)}); err != nil || ref.BackendNodeID == 0 {
		t.Errorf("pick by index: %v %v", ref, err)
	}
}

func mustSnap(t testing.TB, w *Walk, o Options) *Snapshot {
	t.Helper()
	s, err := w.Snapshot(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// BenchmarkSnapshotEngines takes the catalogue's snapshot on both engines:
// time per snapshot, and the bytes an agent reads (the same text on both).
func BenchmarkSnapshotEngines(b *testing.B) {
	url := allFixtures().URL + "/catalog.html"
	b.Run("chromium", func(b *testing.B) {
		ctx := browser.Open(b, url)
		var s *Snapshot
		for b.Loop() {
			var err error
			if s, err = Take(ctx, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(s.Bytes), "bytes/snapshot")
	})
	b.Run("firefox", func(b *testing.B) {
		p := ffOpen(b, url)
		var s *Snapshot
		for b.Loop() {
			s = p.take(b, Options{})
		}
		b.ReportMetric(float64(s.Bytes), "bytes/snapshot")
	})
}
