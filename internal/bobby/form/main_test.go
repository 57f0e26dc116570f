package form_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/bobby/bidi/biditest"
	"github.com/deltaharness/delta/internal/bobby/browser/browsertest"
	"github.com/deltaharness/delta/internal/bobby/firefox"
	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/pagetest"
)

// One Chromium and one Firefox serve every browser test of this binary,
// each launched on first use, so pure tests and fuzz workers start neither.
var (
	fixtures *httptest.Server
	chromium = &browsertest.Browser{Name: "form"}
	ff       biditest.Firefox
)

func TestMain(m *testing.M) {
	fixtures = httptest.NewServer(fixtureHandler())
	code := m.Run()
	chromium.Close()
	ff.Close()
	fixtures.Close()
	os.Exit(code)
}

// fixtureHandler serves testdata and the shared pages of package pagetest
// (for every method: the signup form posts to welcome.html) plus two
// endpoints a submit can reach: /fail500 answers every request with HTTP
// 500, /accepted with 200.
func fixtureHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(pagetest.Dir("testdata")))
	mux.HandleFunc("/fail500", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal error", http.StatusInternalServerError)
	})
	mux.HandleFunc("/accepted", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	return mux
}

// engines are the browsers every fixture test runs on.
var engines = []string{"chromium", "firefox"}

// page is one open tab of an engine: the form functions bound to it, the
// context to call them with, and a way to read the page's own state.
type page struct {
	ctx  context.Context
	tab  form.Tab
	eval func(expr string) (json.RawMessage, error)
}

// forEngines runs fn as a subtest per engine.
func forEngines(t *testing.T, fn func(t *testing.T, engine string)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) { fn(t, e) })
	}
}

// openPage opens a new tab of the engine at the fixture path.
func openPage(t testing.TB, engine, path string) *page {
	t.Helper()
	if engine == "chromium" {
		ctx := chromium.Open(t, fixtures.URL+path)
		return &page{ctx: ctx, tab: form.On(form.Chromium()), eval: func(expr string) (json.RawMessage, error) {
			return chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
		}}
	}
	return openFirefox(t, path)
}

// openFirefox launches (once) a real headless Firefox and opens a tab in a
// fresh user context at path. Without Firefox the tests skip, except under
// CI.
func openFirefox(t testing.TB, path string) *page {
	t.Helper()
	ffBrowser, bc := ff.Tab(t, 1024, 768)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	p := firefox.NewPage(ffBrowser.Conn, bc)
	if _, err := p.Navigate(ctx, fixtures.URL+path); err != nil {
		t.Fatal(err)
	}
	return &page{ctx: ctx, tab: form.On(p.Forms()), eval: func(expr string) (json.RawMessage, error) {
		v, err := ffBrowser.Evaluate(ctx, bc, expr)
		if err != nil {
			return nil, err
		}
		d, err := v.Decode()
		if err != nil {
			return nil, err
		}
		return json.Marshal(d)
	}}
}

// evalJS evaluates an expression in the page and decodes its value.
func evalJS[T any](t testing.TB, p *page, expr string) T {
	t.Helper()
	raw, err := p.eval(expr)
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("evaluate %s: decode %s: %v", expr, raw, err)
	}
	return v
}
