package bidi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

var (
	shared     *Browser
	sharedErr  error
	sharedOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}

// firefox is one real headless Firefox shared by the tests of this binary.
// Without Firefox the tests skip, except under CI, where they fail.
func firefox(t *testing.T) *Browser {
	t.Helper()
	if _, err := os.Stat(DefaultFirefox); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but Firefox is missing at %s (apt-get install -y firefox-esr)", DefaultFirefox)
		}
		t.Skipf("Firefox is missing at %s (apt-get install -y firefox-esr)", DefaultFirefox)
	}
	sharedOnce.Do(func() {
		shared, sharedErr = Launch(context.Background(), LaunchOptions{DataDir: os.TempDir()})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// tab opens a tab in a fresh user context, closed with the test.
func tab(t *testing.T, b *Browser) (uc, bc string) {
	t.Helper()
	ctx := testCtx(t)
	uc, err := b.CreateUserContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.RemoveUserContext(context.Background(), uc) })
	bc, err = b.CreateTab(ctx, uc)
	if err != nil {
		t.Fatal(err)
	}
	return uc, bc
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func fixture(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestNavigateEvaluateAndLoadEvent(t *testing.T) {
	b := firefox(t)
	ctx := testCtx(t)
	_, bc := tab(t, b)
	srv := fixture(t, `<!doctype html><title>Fixture</title><h1>Hello</h1>`)

	loaded := make(chan string, 8)
	remove := b.OnEvent(func(e Event) {
		if e.Method != "browsingContext.load" {
			return
		}
		var p struct {
			Context string `json:"context"`
			URL     string `json:"url"`
		}
		if json.Unmarshal(e.Params, &p) == nil && p.Context == bc {
			loaded <- p.URL
		}
	})
	defer remove()
	if _, err := b.Subscribe(ctx, []string{"browsingContext.load"}, bc); err != nil {
		t.Fatal(err)
	}
	nav, err := b.Navigate(ctx, bc, srv.URL+"/page", WaitComplete)
	if err != nil {
		t.Fatal(err)
	}
	if nav.URL != srv.URL+"/page" {
		t.Errorf("navigation URL = %q", nav.URL)
	}
	select {
	case u := <-loaded:
		if u != srv.URL+"/page" {
			t.Errorf("load event for %q", u)
		}
	case <-ctx.Done():
		t.Fatal("no browsingContext.load event for the tab")
	}
	v, err := b.Evaluate(ctx, bc, `document.title + " / " + document.querySelector("h1").textContent`)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Decode(); got != "Fixture / Hello" {
		t.Fatalf("evaluate = %#v (%+v)", got, v)
	}
	tree, err := b.Tree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range tree {
		found = found || (c.Context == bc && c.URL == srv.URL+"/page")
	}
	if !found {
		t.Errorf("tree %+v lacks the tab at its URL", tree)
	}
}

func TestRefusalsAndThrownScriptsAreTypedErrors(t *testing.T) {
	b := firefox(t)
	ctx := testCtx(t)
	_, bc := tab(t, b)
	if _, err := b.Navigate(ctx, "no-such-context", "about:blank", WaitNone); !IsCode(err, "no such frame") {
		t.Errorf("navigate unknown context: %v, want a \"no such frame\" *Error", err)
	}
	if err := b.Call(ctx, "browsingContext.noSuchCommand", nil, nil); !IsCode(err, "unknown command") {
		t.Errorf("unknown command: %v", err)
	}
	_, err := b.Evaluate(ctx, bc, `throw new Error("boom at line one")`)
	var se *ScriptError
	if !errors.As(err, &se) || !strings.Contains(se.Text, "boom at line one") {
		t.Errorf("thrown script: %v, want a *ScriptError with the message", err)
	}
	// The connection is still good after the refusals.
	if v, err := b.Evaluate(ctx, bc, `1 + 1`); err != nil {
		t.Fatal(err)
	} else if got, _ := v.Decode(); got != float64(2) {
		t.Errorf("1+1 = %#v", got)
	}
}

func TestCallFunctionRoundTripsValues(t *testing.T) {
	b := firefox(t)
	ctx := testCtx(t)
	_, bc := tab(t, b)
	v, err := b.CallFunction(ctx, bc, `(a, b, s, list, obj) => ({sum: a + b, s, n: list.length, k: obj.k, mixed: [1, "x", null, true, undefined]})`,
		2, 3.5, "héllo", []any{"a", int64(1), nil}, map[string]any{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Decode()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"sum": 5.5, "s": "héllo", "n": float64(3), "k": "v", "mixed": []any{float64(1), "x", nil, true, nil}}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("decoded %s, want %s", gb, wb)
	}
	if _, err := b.CallFunction(ctx, bc, `() => 1`, struct{}{}); err == nil {
		t.Error("an argument that is not a local value was accepted")
	}
}

func TestUserContextsIsolateCookies(t *testing.T) {
	b := firefox(t)
	ctx := testCtx(t)
	ucA, bcA := tab(t, b)
	ucB, _ := tab(t, b)
	srv := fixture(t, `<!doctype html><title>c</title>`)
	if _, err := b.Navigate(ctx, bcA, srv.URL, WaitComplete); err != nil {
		t.Fatal(err)
	}
	if err := b.SetCookie(ctx, ucA, Cookie{Name: "sid", Value: "alpha", Domain: "127.0.0.1", Path: "/"}); err != nil {
		t.Fatal(err)
	}
	a, err := b.Cookies(ctx, ucA, "sid")
	if err != nil || len(a) != 1 || a[0].Value != "alpha" {
		t.Fatalf("cookies in A = %+v, %v", a, err)
	}
	if v, err := b.Evaluate(ctx, bcA, `document.cookie`); err != nil {
		t.Fatal(err)
	} else if got, _ := v.Decode(); got != "sid=alpha" {
		t.Errorf("the page in A sees document.cookie = %#v", got)
	}
	bs, err := b.Cookies(ctx, ucB, "")
	if err != nil || len(bs) != 0 {
		t.Fatalf("cookies in B = %+v, %v; want none (user contexts are isolated)", bs, err)
	}
	if err := b.DeleteCookies(ctx, ucA, "sid"); err != nil {
		t.Fatal(err)
	}
	if a, _ := b.Cookies(ctx, ucA, "sid"); len(a) != 0 {
		t.Fatalf("cookie survived its deletion: %+v", a)
	}
}

func TestScreenshotIsPNGAtTheViewportSize(t *testing.T) {
	b := firefox(t)
	ctx := testCtx(t)
	_, bc := tab(t, b)
	if err := b.SetViewport(ctx, bc, 640, 360); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Navigate(ctx, bc, fixture(t, `<body style="background:#c00">red</body>`).URL, WaitComplete); err != nil {
		t.Fatal(err)
	}
	png, err := b.Screenshot(ctx, bc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 24 {
		t.Fatalf("not a PNG: %q", png[:min(len(png), 16)])
	}
	w := int(png[16])<<24 | int(png[17])<<16 | int(png[18])<<8 | int(png[19])
	h := int(png[20])<<24 | int(png[21])<<16 | int(png[22])<<8 | int(png[23])
	if w != 640 || h != 360 {
		t.Errorf("screenshot is %dx%d, want the 640x360 viewport", w, h)
	}
}

func TestPromptsStayOpenUntilHandled(t *testing.T) {
	b := firefox(t)
	ctx := testCtx(t)
	_, bc := tab(t, b)
	if _, err := b.Navigate(ctx, bc, fixture(t, `<title>p</title>`).URL, WaitComplete); err != nil {
		t.Fatal(err)
	}
	opened := make(chan string, 1)
	remove := b.OnEvent(func(e Event) {
		var p struct {
			Context string `json:"context"`
			Message string `json:"message"`
		}
		if e.Method == "browsingContext.userPromptOpened" && json.Unmarshal(e.Params, &p) == nil && p.Context == bc {
			opened <- p.Message
		}
	})
	defer remove()
	if _, err := b.Subscribe(ctx, []string{"browsingContext.userPromptOpened"}, bc); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Evaluate(ctx, bc, `setTimeout(() => { window.answer = confirm("Delete it?") }, 0); 0`); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-opened:
		if msg != "Delete it?" {
			t.Errorf("prompt message %q", msg)
		}
	case <-ctx.Done():
		t.Fatal("no userPromptOpened event")
	}
	if err := b.HandlePrompt(ctx, bc, true, ""); err != nil {
		t.Fatal(err)
	}
	v, err := b.Evaluate(ctx, bc, `window.answer`)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Decode(); got != true {
		t.Errorf("confirm returned %#v after accepting", got)
	}
}

func TestCancelledCallReturnsAndConnStaysUsable(t *testing.T) {
	b := firefox(t)
	_, bc := tab(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := b.Evaluate(ctx, bc, `new Promise(() => {})`); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a never-settling promise: %v, want the deadline", err)
	}
	if v, err := b.Evaluate(testCtx(t), bc, `"still here"`); err != nil {
		t.Fatal(err)
	} else if got, _ := v.Decode(); got != "still here" {
		t.Fatalf("after a cancelled call: %#v", got)
	}
}

// TestCallWithAnEndedContextKeepsTheConn: a context that is already over
// (or ends while the frame is written) fails that call only; the
// WebSocket library would close the whole connection if the write ran
// under it.
func TestCallWithAnEndedContextKeepsTheConn(t *testing.T) {
	b := firefox(t)
	_, bc := tab(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Evaluate(ctx, bc, `1`); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended context: %v, want context.Canceled", err)
	}
	for range 20 {
		short, stop := context.WithTimeout(context.Background(), time.Microsecond)
		_, _ = b.Evaluate(short, bc, `1`)
		stop()
	}
	if v, err := b.Evaluate(testCtx(t), bc, `"still here"`); err != nil {
		t.Fatalf("after calls whose contexts ended: %v", err)
	} else if got, _ := v.Decode(); got != "still here" {
		t.Fatalf("after calls whose contexts ended: %#v", got)
	}
}

func TestLaunchCloseEndsProcessAndRemovesProfile(t *testing.T) {
	firefox(t) // skips without Firefox
	b, err := Launch(testCtx(t), LaunchOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if b.Capabilities.BrowserName != "firefox" || b.Capabilities.BrowserVersion == "" {
		t.Errorf("capabilities = %+v", b.Capabilities)
	}
	profile := b.profile
	if _, err := os.Stat(profile + "/user.js"); err != nil {
		t.Fatalf("profile prefs: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("Firefox still running after Close")
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Fatalf("profile %s left behind: %v", profile, err)
	}
	if err := b.Call(testCtx(t), "session.status", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v, want ErrClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestLaunchRefusesAMissingBinary(t *testing.T) {
	_, err := Launch(testCtx(t), LaunchOptions{Path: "/nonexistent/firefox"})
	if err == nil || !strings.Contains(err.Error(), "firefox-esr") {
		t.Fatalf("missing binary: %v, want an error naming the package to install", err)
	}
}

// wsPeer is a scripted BiDi endpoint: accepted (when not nil) sees each
// connection first, then for each command frame it receives, answer returns
// the frames to send back (nil = hang up).
func wsPeer(t *testing.T, accepted func(c *websocket.Conn), answer func(id int64, method string) []string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		if accepted != nil {
			accepted(c)
		}
		for {
			_, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			var cmd struct {
				ID     int64  `json:"id"`
				Method string `json:"method"`
			}
			_ = json.Unmarshal(b, &cmd)
			frames := answer(cmd.ID, cmd.Method)
			if frames == nil {
				return
			}
			for _, f := range frames {
				if err := c.Write(r.Context(), websocket.MessageText, []byte(f)); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func TestMalformedFramesAreSkippedAndAHangUpFailsPendingCalls(t *testing.T) {
	url := wsPeer(t, nil, func(id int64, method string) []string {
		if method == "hang.up" {
			return nil
		}
		return []string{
			`not json`,
			`{"type":"mystery"}`,
			`{"type":"event","method":"log.entryAdded","params":{"text":"hi"}}`,
			fmt.Sprintf(`{"type":"success","id":%d,"result":{"ok":%d}}`, id, id),
		}
	})
	ctx := testCtx(t)
	c, err := Dial(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events := make(chan Event, 4)
	c.OnEvent(func(e Event) { events <- e })
	var out struct {
		OK int64 `json:"ok"`
	}
	if err := c.Call(ctx, "any.thing", nil, &out); err != nil || out.OK != 1 {
		t.Fatalf("call past malformed frames: %+v, %v", out, err)
	}
	if e := <-events; e.Method != "log.entryAdded" {
		t.Errorf("event %+v", e)
	}
	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, "hang.up", nil, nil) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("pending call on hang-up: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a pending call hung after the peer hung up")
	}
	if err := c.Call(ctx, "after", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on a dead connection: %v", err)
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"success","id":1,"result":{}}`,
		`{"type":"error","id":2,"error":"no such frame","message":"x"}`,
		`{"type":"event","method":"browsingContext.load","params":{"context":"c"}}`,
		`{"type":"success"}`, `{"type":"event"}`, `[]`, `null`, `{"id":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMessage(b)
		if err != nil {
			return
		}
		switch m.Type {
		case "success":
			if m.ID == nil {
				t.Fatal("success without an id accepted")
			}
		case "error":
			if m.Error == "" {
				t.Fatal("error without a code accepted")
			}
		case "event":
			if m.Method == "" {
				t.Fatal("event without a method accepted")
			}
		default:
			t.Fatalf("type %q accepted", m.Type)
		}
	})
}

func FuzzRemoteValueDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"string","value":"x"}`, `{"type":"number","value":"NaN"}`, `{"type":"array","value":[{"type":"null"}]}`,
		`{"type":"object","value":[["k",{"type":"boolean","value":true}]]}`, `{"type":"map","value":[[{"type":"number","value":1},{"type":"null"}]]}`,
		`{"type":"node","sharedId":"s"}`, `{"type":"array","value":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v RemoteValue
		if json.Unmarshal(b, &v) != nil {
			return
		}
		_, _ = v.Decode() // must not panic, whatever the page returned
	})
}

func TestSandboxIsolatesGlobalsAndLocatorUsesTheBrowsersRoles(t *testing.T) {
	b := firefox(t)
	ctx := testCtx(t)
	_, bc := tab(t, b)
	srv := fixture(t, `<!doctype html><title>s</title><label>Email <input id="e"></label><iframe srcdoc="<button>Inner</button>"></iframe>
<div role="button" aria-label="Fancy">x</div><script>window.pageSecret = 7;</script>`)
	if _, err := b.Navigate(ctx, bc, srv.URL, WaitComplete); err != nil {
		t.Fatal(err)
	}
	// A sandbox shares the DOM, not the page's globals, and keeps its own
	// across calls.
	v, err := b.CallFunctionIn(ctx, bc, "iso", `() => { window.mine = 'kept'; return [typeof window.pageSecret, document.getElementById('e').localName, document.querySelector('iframe').contentWindow]; }`)
	if err != nil {
		t.Fatal(err)
	}
	items := v.Items()
	if len(items) != 3 {
		t.Fatalf("sandbox call answered %+v", v)
	}
	if got, _ := items[0].Decode(); got != "undefined" {
		t.Errorf("the sandbox sees the page's global: typeof = %v", got)
	}
	if got, _ := items[1].Decode(); got != "input" {
		t.Errorf("the sandbox does not see the DOM: %v", got)
	}
	frame := items[2].WindowContext()
	tree, err := b.Tree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var child string
	for _, c := range tree {
		if c.Context == bc && len(c.Children) == 1 {
			child = c.Children[0].Context
		}
	}
	if frame == "" || frame != child {
		t.Errorf("the iframe's window serializes as context %q, the tree says %q", frame, child)
	}
	again, err := b.CallFunctionIn(ctx, bc, "iso", `() => ({mine: window.mine})`)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := again.Field("mine"); !ok || f.Type != "string" {
		t.Errorf("the sandbox lost its global between calls: %+v", again)
	}
	if page, _ := b.Evaluate(ctx, bc, `typeof window.mine`); page.Type != "string" || string(page.Value) != `"undefined"` {
		t.Errorf("the page sees the sandbox's global: %+v", page)
	}
	// Firefox's accessibility engine names the label-less div by aria-label
	// and the input by its label.
	for _, q := range []struct{ role, name string }{{"button", "Fancy"}, {"textbox", "Email"}} {
		nodes, err := b.LocateByRole(ctx, bc, q.role, q.name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 1 || nodes[0].SharedID == "" {
			t.Errorf("locate %s %q: %+v", q.role, q.name, nodes)
		}
	}
	if nodes, err := b.LocateByRole(ctx, child, "button", "Inner", 0); err != nil || len(nodes) != 1 {
		t.Errorf("locate inside the iframe's context: %v %+v", err, nodes)
	}
}
