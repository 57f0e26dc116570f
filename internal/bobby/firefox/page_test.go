package firefox

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi/biditest"
	"github.com/deltaharness/delta/internal/bobby/pagetest"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

var (
	ff       biditest.Firefox
	fixtures *httptest.Server
)

func TestMain(m *testing.M) {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(pagetest.Dir("../gateway/testdata")))
	mux.HandleFunc("/keys.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Keys</title>
<button id="b" style="margin-top:2000px">Far button</button>
<script>window.seen = []; document.getElementById('b').addEventListener('click',
  (e) => window.seen.push({shift: e.shiftKey, ctrl: e.ctrlKey, alt: e.altKey, detail: e.detail}));</script>`))
	})
	mux.HandleFunc("/dyn.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Dyn</title>
<label>Code <input id="code"></label>
<p id="gone">Loading…</p>
<button id="ask" onclick="window.answer = confirm('Delete the draft?')">Delete</button>
<script>window.mutate = () => { document.getElementById('gone').remove();
  const p = document.createElement('p'); p.textContent = 'Ready to go'; document.body.appendChild(p);
  history.pushState({}, "", "/dyn.html?step=2"); };</script>`))
	})
	fixtures = httptest.NewServer(mux)
	code := m.Run()
	ff.Close()
	fixtures.Close()
	os.Exit(code)
}

// open launches (once) a real headless Firefox and opens a tab in a fresh
// user context at path. Without Firefox the tests skip, except under CI.
func open(t testing.TB, path string) *Page {
	t.Helper()
	b, bc := ff.Tab(t, 1024, 768)
	p := NewPage(b.Conn, bc)
	if _, err := p.Navigate(testCtx(t), fixtures.URL+path); err != nil {
		t.Fatal(err)
	}
	return p
}

// take is a snapshot of the page with the default options; the test fails
// on an error.
func take(t testing.TB, p *Page) *snapshot.Snapshot {
	t.Helper()
	s, err := p.Snapshot(testCtx(t), snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// node is the target of the first node of the snapshot with the role and
// name; the test fails when there is none.
func node(t testing.TB, s *snapshot.Snapshot, role, name string) snapshot.Target {
	t.Helper()
	for _, n := range s.Nodes {
		if n.Role == role && n.Name == name {
			return n.Target()
		}
	}
	t.Fatalf("no %s %q in:\n%s", role, name, s.Text)
	return snapshot.Target{}
}

// testCtx bounds a test against a hang, not its speed: on a loaded machine
// launching Firefox alone can take tens of seconds.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or ctx ends; the context only bounds
// a hang, so a slow (loaded) machine waits longer instead of failing.
func eventually(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("never happened: %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func eval(t testing.TB, p *Page, expr string) any {
	t.Helper()
	v, err := p.conn.Evaluate(testCtx(t), p.bc, expr)
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	d, _ := v.Decode()
	return d
}

// TestFormLoopOnFirefox signs up through the snapshot's refs: click each
// field, type, tick the terms, submit, and land on the welcome page.
func TestFormLoopOnFirefox(t *testing.T) {
	p := open(t, "/signup.html")
	ctx := testCtx(t)
	s := take(t, p)
	ref := func(role, name string) snapshot.Target { return node(t, s, role, name) }
	for _, f := range []struct{ role, name, text string }{
		{"textbox", "Email", "ada@example.com"},
		{"textbox", "Full name", "Ada Lovelace"},
		{"textbox", "Password", "correct horse battery"},
	} {
		if _, err := p.Click(ctx, ref(f.role, f.name), ClickOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := p.TypeText(ctx, f.text); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Click(ctx, ref("checkbox", "I accept the terms"), ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	after := take(t, p)
	for _, want := range []string{`textbox "Email" [required] [ref=`, `]: "ada@example.com"`, `textbox "Password" [required] [hasValue]`,
		`checkbox "I accept the terms" [checked]`} {
		if !strings.Contains(after.Text, want) {
			t.Errorf("after filling, the snapshot lacks %q:\n%s", want, after.Text)
		}
	}
	if strings.Contains(after.Text, "correct horse") {
		t.Errorf("the snapshot shows the password:\n%s", after.Text)
	}
	if got := eval(t, p, `document.querySelector('[name=name]').value`); got != "Ada Lovelace" {
		t.Errorf("full name field holds %v", got)
	}
	if _, err := p.Click(ctx, ref("button", "Create account"), ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the welcome page after submitting", func() bool { return eval(t, p, `document.title`) == "Welcome" })
	done := take(t, p)
	if done.Title != "Welcome" || !strings.Contains(done.Text, `heading "Welcome aboard"`) {
		t.Errorf("submitting did not land on the welcome page: %q\n%s", done.Title, done.Text)
	}
	// The old page's refs are gone, and say so with the repair.
	if _, err := p.Locate(ctx, ref("button", "Create account"), false); !errors.Is(err, snapshot.ErrTargetNotFound) {
		t.Errorf("a ref of the left page: %v", err)
	}
}

func TestClickHoldsModifiersAndScrollsIntoView(t *testing.T) {
	p := open(t, "/keys.html")
	ctx := testCtx(t)
	far := snapshot.Target{Role: "button", Name: "Far button"}
	if _, err := p.Click(ctx, far, ClickOptions{Modifiers: []string{"Shift", "Control"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctx, far, ClickOptions{Count: 2}); err != nil {
		t.Fatal(err)
	}
	got := eval(t, p, `JSON.stringify(window.seen)`)
	want := `[{"shift":true,"ctrl":true,"alt":false,"detail":1},{"shift":false,"ctrl":false,"alt":false,"detail":1},{"shift":false,"ctrl":false,"alt":false,"detail":2}]`
	if got != want {
		t.Errorf("clicks seen %v\nwant        %s", got, want)
	}
	for _, o := range []ClickOptions{{Modifiers: []string{"Hyper"}}, {Button: "fourth"}, {Count: 9}} {
		if _, err := p.Click(ctx, far, o); err == nil {
			t.Errorf("click %+v accepted", o)
		}
	}
	if _, err := p.Locate(ctx, snapshot.Target{Selector: "#b"}, false); !errors.Is(err, snapshot.ErrInvalidTarget) {
		t.Errorf("selector target: %v", err)
	}
	// A covered element is refused with a reason, never clicked blind.
	eval(t, p, `(() => { const d = document.createElement('div'); d.style.cssText = 'position:fixed;inset:0;z-index:9;background:#fff'; document.body.appendChild(d); })()`)
	if _, err := p.Click(ctx, far, ClickOptions{}); !errors.Is(err, ErrNotInteractable) {
		t.Errorf("click through an overlay: %v", err)
	}
}

// A click or typing that fails before it sent the page any input (its
// target not located, not interactable, or its context over before the
// locating call answered) says so with a *NotSentError, so the caller
// knows the action did not happen.
func TestActionsSayWhenNothingWasSent(t *testing.T) {
	p := open(t, "/keys.html")
	ctx := testCtx(t)
	notSent := func(what string, err error, want error) {
		t.Helper()
		var ns *NotSentError
		if !errors.As(err, &ns) || !errors.Is(err, want) {
			t.Errorf("%s = %v, want a *NotSentError wrapping %v", what, err, want)
		}
	}
	missing := snapshot.Target{Role: "button", Name: "No such button"}
	_, err := p.Click(ctx, missing, ClickOptions{})
	notSent("click on a missing target", err, snapshot.ErrTargetNotFound)
	_, err = p.TypeInto(ctx, missing, "abc", false)
	notSent("typing into a missing target", err, snapshot.ErrTargetNotFound)
	_, err = p.Click(ctx, snapshot.Target{Ref: "e9999"}, ClickOptions{})
	notSent("click on a stale ref", err, snapshot.ErrTargetNotFound)
	over, cancel := context.WithCancel(ctx)
	cancel()
	far := snapshot.Target{Role: "button", Name: "Far button"}
	_, err = p.Click(over, far, ClickOptions{})
	notSent("click with its context over", err, context.Canceled)
	eval(t, p, `(() => { const d = document.createElement('div'); d.style.cssText = 'position:fixed;inset:0;z-index:9;background:#fff'; document.body.appendChild(d); })()`)
	_, err = p.Click(ctx, far, ClickOptions{})
	notSent("click through an overlay", err, ErrNotInteractable)
	if got := eval(t, p, `window.seen.length`); got != float64(0) {
		t.Errorf("the page saw %v clicks", got)
	}
}

func TestWaitsOnFirefox(t *testing.T) {
	p := open(t, "/dyn.html")
	ctx := testCtx(t)
	s := take(t, p)
	code := node(t, s, "textbox", "Code")
	// The paragraph renders as text, without a ref; the walker numbered
	// its element all the same.
	gone := snapshot.Target{Ref: refOfID(t, p, "gone")}
	// The page changes when the test says so (not on a timer that a loaded
	// machine could outrun), a moment after the waits begin.
	eval(t, p, `setTimeout(window.mutate, 300), null`)
	contains := func(want string) func(string) bool { return func(s string) bool { return strings.Contains(s, want) } }
	for _, w := range []Wait{
		{Kind: WaitText, Match: contains("Ready to go")},
		{Kind: WaitURL, Match: contains("step=2")},
		{Kind: WaitDocument, ReadyState: "complete"},
		{Kind: WaitElement, Target: &gone, State: "hidden"},
	} {
		if err := p.WaitFor(ctx, w); err != nil {
			t.Errorf("wait %s: %v", w.Kind, err)
		}
	}
	if _, err := p.Click(ctx, code, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.TypeText(ctx, "X-42"); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(ctx, Wait{Kind: WaitValue, Target: &code, Match: func(v string) bool { return v == "X-42" }}); err != nil {
		t.Errorf("wait value: %v", err)
	}
	// The timeout leaves a loaded machine room for a reading to report;
	// the outcome is asserted, not its speed.
	err := p.WaitFor(ctx, Wait{Kind: WaitText, Match: contains("never there"), Timeout: 2 * time.Second})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "Ready to go") {
		t.Errorf("a wait that cannot hold: %v, want a timeout showing the last text", err)
	}
	err = p.WaitFor(ctx, Wait{Kind: WaitNetworkQuiet})
	if !errors.Is(err, ErrUnsupportedOnEngine) || !strings.Contains(err.Error(), "chromium") {
		t.Errorf("networkQuiet: %v, want unsupportedOnEngine with a repair", err)
	}
	for _, bad := range []Wait{{Kind: "soon"}, {Kind: WaitText}, {Kind: WaitElement}, {Kind: WaitDocument, ReadyState: "done"},
		{Kind: WaitElement, Target: &code, State: "glowing"}, {Kind: WaitValue, Match: contains("x")}} {
		if err := p.WaitFor(ctx, bad); err == nil {
			t.Errorf("wait %+v accepted", bad)
		}
	}
}

// refOfID returns the ref the walker gave the element with the DOM id.
func refOfID(t *testing.T, p *Page, id string) string {
	t.Helper()
	for i := int64(1); i < p.next; i++ {
		ref := "e" + strconv.FormatInt(i, 10)
		v, err := p.conn.CallFunctionIn(testCtx(t), p.bc, sandbox, `(ref) => { const m = window[Symbol.for('bobby.a11y.refs')]; const r = m && m.byId.get(ref); const el = r && r.deref(); return el ? el.id : ''; }`, i)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := v.Decode(); got == id {
			return ref
		}
	}
	t.Fatalf("no ref for #%s", id)
	return ""
}

func TestDialogsAndScreenshotOnFirefox(t *testing.T) {
	p := open(t, "/dyn.html")
	ctx := testCtx(t)
	stop, err := p.WatchDialogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := p.HandleDialog(ctx, true, ""); !errors.Is(err, ErrNoDialog) {
		t.Errorf("handling without a dialog: %v", err)
	}
	if _, err := p.Click(ctx, snapshot.Target{Role: "button", Name: "Delete"}, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	var pr Prompt
	eventually(t, ctx, "the confirm() dialog opens", func() bool {
		var ok bool
		pr, ok = p.Dialog()
		return ok
	})
	if pr.Type != "confirm" || pr.Message != "Delete the draft?" {
		t.Fatalf("dialog = %+v", pr)
	}
	if _, err := p.HandleDialog(ctx, true, ""); err != nil {
		t.Fatal(err)
	}
	if got := eval(t, p, `window.answer`); got != true {
		t.Errorf("the page's confirm() returned %v after accepting", got)
	}
	if _, ok := p.Dialog(); ok {
		t.Error("a handled dialog is still reported open")
	}
	png, err := p.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 1000 {
		t.Errorf("screenshot is not a PNG of the page (%d bytes)", len(png))
	}
}
