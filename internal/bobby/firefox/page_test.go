package firefox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

var (
	shared     *bidi.Browser
	sharedErr  error
	sharedOnce sync.Once
	fixtures   *httptest.Server
)

func TestMain(m *testing.M) {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("../gateway/testdata")))
	mux.HandleFunc("/keys.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Keys</title>
<button id="b" style="margin-top:2000px">Far button</button>
<script>window.seen = []; document.getElementById('b').addEventListener('click',
  (e) => window.seen.push({shift: e.shiftKey, ctrl: e.ctrlKey, alt: e.altKey, detail: e.detail}));</script>`))
	})
	// The form posts here; the welcome page is what a user lands on.
	mux.HandleFunc("POST /welcome.html", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, "../gateway/testdata/welcome.html")
	})
	fixtures = httptest.NewServer(mux)
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	fixtures.Close()
	os.Exit(code)
}

// open launches (once) a real headless Firefox and opens a tab in a fresh
// user context at path. Without Firefox the tests skip, except under CI.
func open(t *testing.T, path string) *Page {
	t.Helper()
	if _, err := os.Stat(bidi.DefaultFirefox); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but Firefox is missing at %s (apt-get install -y firefox-esr)", bidi.DefaultFirefox)
		}
		t.Skipf("Firefox is missing at %s (apt-get install -y firefox-esr)", bidi.DefaultFirefox)
	}
	sharedOnce.Do(func() { shared, sharedErr = bidi.Launch(context.Background(), bidi.LaunchOptions{}) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	ctx := testCtx(t)
	uc, err := shared.CreateUserContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shared.RemoveUserContext(context.Background(), uc) })
	bc, err := shared.CreateTab(ctx, uc)
	if err != nil {
		t.Fatal(err)
	}
	if err := shared.SetViewport(ctx, bc, 1024, 768); err != nil {
		t.Fatal(err)
	}
	p := NewPage(shared.Conn, bc)
	if _, err := p.Navigate(ctx, fixtures.URL+path); err != nil {
		t.Fatal(err)
	}
	return p
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func eval(t *testing.T, p *Page, expr string) any {
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
	s, err := p.Snapshot(ctx, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(role, name string) snapshot.Target {
		for _, n := range s.Nodes {
			if n.Role == role && n.Name == name {
				return n.Target()
			}
		}
		t.Fatalf("no %s %q in:\n%s", role, name, s.Text)
		return snapshot.Target{}
	}
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
	after, err := p.Snapshot(ctx, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	for range 100 {
		if eval(t, p, `document.title`) == "Welcome" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	done, err := p.Snapshot(ctx, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
