package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/bidi/biditest"
	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/firefox"
	"github.com/deltaharness/delta/internal/bobby/pagetest"
)

// The engine matrix: the tool families Firefox supports, called through
// the MCP surface on both engines, asserting the same result shapes.

var (
	ffOnce   sync.Once
	sharedFF *firefox.Runtime
	ffErr0   error
)

// closeSharedFirefox stops the Firefox the matrix launched (runMain).
func closeSharedFirefox() error {
	if sharedFF == nil {
		return nil
	}
	return sharedFF.Close(context.Background())
}

// matrixPages are the fixtures the matrix adds to the gateway's: a page
// recording the modifiers of a click, and the frames page (an iframe and
// an open shadow root, each with a button that writes its own status).
func matrixPages(mux *http.ServeMux) {
	page := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		})
	}
	page("/m/keys.html", `<!doctype html><title>Keys</title><main>
<button id="b">Record keys</button><p id="out">none</p></main>
<script>document.getElementById('b').addEventListener('click', (e) => {
  document.getElementById('out').textContent = 'shift=' + e.shiftKey + ' alt=' + e.altKey + ' ctrl=' + e.ctrlKey; });</script>`)
	page("/m/frames.html", `<!doctype html><title>Frames</title><main>
<h1>Frames and shadows</h1><p id="out">idle</p><div id="host"></div>
<iframe id="inner" src="/m/inner.html" title="Inner" width="400" height="150"></iframe></main>
<script>const root = document.getElementById('host').attachShadow({mode: 'open'});
root.innerHTML = '<button type="button">Shadow action</button>';
root.querySelector('button').addEventListener('click', () => document.getElementById('out').textContent = 'shadow clicked');</script>`)
	page("/m/late.html", `<!doctype html><title>Late</title><main><p id="late">waiting</p></main>
<script>setTimeout(() => { document.getElementById('late').textContent = 'Ready now';
  const b = document.createElement('button'); b.textContent = 'Late button'; document.querySelector('main').appendChild(b); }, 600);</script>`)
	page("/m/inner.html", `<!doctype html><title>Inner</title><body>
<label>Promo code <input id="code"></label><button type="button" id="apply">Apply promo</button><p id="got">no promo</p>
<script>document.getElementById('apply').addEventListener('click', () => {
  document.getElementById('got').textContent = 'applied ' + document.getElementById('code').value;
  parent.document.getElementById('out').textContent = 'frame clicked'; });</script></body>`)
}

var (
	matrixOnce sync.Once
	matrixSrv  *httptest.Server
)

// matrixURL is a fixture URL: the gateway's testdata and matrixPages.
func matrixURL(path string) string {
	matrixOnce.Do(func() {
		mux := http.NewServeMux()
		mux.Handle("/", http.FileServer(pagetest.Dir("testdata")))
		matrixPages(mux)
		matrixSrv = httptest.NewServer(mux)
	})
	return matrixSrv.URL + path
}

// engineGateway serves a fresh Gateway over the shared runtime of engine
// and connects alice to it. Without Firefox the Firefox run skips, except
// under CI.
func engineGateway(t *testing.T, engine string) (*Gateway, *mcp.ClientSession) {
	t.Helper()
	return engineGatewayWith(t, engine, nil)
}

// engineGatewayWith is engineGateway with the configuration changed by edit.
func engineGatewayWith(t *testing.T, engine string, edit func(*config.Config)) (*Gateway, *mcp.ClientSession) {
	t.Helper()
	cfg := testConfig()
	if edit != nil {
		edit(&cfg)
	}
	opts := Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)}
	switch engine {
	case engineChromium:
		opts.Runtime = sharedRT
	case engineFirefox:
		biditest.Require(t)
		ffOnce.Do(func() {
			sharedFF = firefox.New(firefox.Options{LaunchTimeout: biditest.LaunchTimeout})
			ffErr0 = sharedFF.Open(context.Background())
		})
		if ffErr0 != nil {
			t.Fatal(ffErr0)
		}
		opts.Firefox = sharedFF
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(func() {
		srv.Close()
		if err := g.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return g, connectHTTP(t, srv.URL, "alice-token", nil)
}

// onBothEngines runs f once per engine, as subtests named for them.
func onBothEngines(t *testing.T, f func(t *testing.T, engine string, cs *mcp.ClientSession)) {
	for _, e := range bothEngines {
		t.Run(e, func(t *testing.T) {
			_, cs := engineGateway(t, e)
			f(t, e, cs)
		})
	}
}

// refOf finds the ref of role "name" in a snapshot's text.
func refOf(t *testing.T, text, role, name string) string {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(role+` "`+name+`"`) + `[^\n]*\[ref=(e\d+)\]`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %s %q with a ref in the snapshot:\n%s", role, name, text)
	}
	return m[1]
}

func snapshotText(t *testing.T, cs *mcp.ClientSession, h any) string {
	t.Helper()
	return asStr(get(mustOK(t, cs, "a11y_snapshot", map[string]any{"workflowHandle": h}), "evidence", "accessibility", "text"))
}

func waitText(t *testing.T, cs *mcp.ClientSession, h any, text string) map[string]any {
	t.Helper()
	return mustOK(t, cs, "wait_for", map[string]any{"workflowHandle": h, "timeoutMs": 5000,
		"condition": map[string]any{"kind": "text", "matcher": map[string]any{"kind": "contains", "value": text}}})
}

// shapeOf is the sorted top-level keys of a result's evidence: what the
// matrix compares across engines.
func shapeOf(m map[string]any, path ...string) string {
	ev, _ := get(m, path...).(map[string]any)
	var keys []string
	for k := range ev {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

func TestEngineMatrixNavigationAndSnapshot(t *testing.T) {
	shapes := map[string]string{}
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		start := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/signup.html")})
		if get(start, "navigationOutcome", "status") != "completed" || get(start, "navigationOutcome", "httpStatus") != float64(200) {
			t.Fatalf("workflow_start navigation = %s", dump(start["navigationOutcome"]))
		}
		h := start["workflowHandle"]
		snap := mustOK(t, cs, "a11y_snapshot", map[string]any{"workflowHandle": h})
		text := asStr(get(snap, "evidence", "accessibility", "text"))
		for _, want := range []string{`heading "Create your account"`, `navigation "Main"`, `link "Pricing"`} {
			if !strings.Contains(text, want) {
				t.Errorf("snapshot lacks %s:\n%s", want, text)
			}
		}
		email := refOf(t, text, "textbox", "Email")
		// Refs are stable: the same element keeps its ref in the next snapshot.
		if again := refOf(t, snapshotText(t, cs, h), "textbox", "Email"); again != email {
			t.Errorf("Email's ref moved from %s to %s", email, again)
		}
		nav := mustOK(t, cs, "navigate", map[string]any{"workflowHandle": h, "url": matrixURL("/welcome.html")})
		if u := asStr(get(nav, "evidence", "navigationOutcome", "finalUrl")); !strings.HasSuffix(u, "/welcome.html") {
			t.Errorf("navigate finalUrl %q", u)
		}
		if get(nav, "evidence", "page", "ready_state") != "complete" {
			t.Errorf("navigate page = %s", dump(get(nav, "evidence", "page")))
		}
		bad := mustFail(t, cs, "navigate", map[string]any{"workflowHandle": h, "url": matrixURL("/missing.html")}, CodeNavigationFailed)
		if get(bad, "evidence", "navigationOutcome", "error", "code") != "httpError" || get(bad, "evidence", "navigationOutcome", "httpStatus") != float64(404) {
			t.Errorf("404 navigation = %s", dump(bad))
		}
		mustFail(t, cs, "navigate", map[string]any{"workflowHandle": h, "url": "javascript:alert(1)"}, CodeNetworkPolicyDenied)
		pages := mustOK(t, cs, "page_list", map[string]any{"sessionId": start["sessionId"]})
		if ps, _ := pages["pages"].([]any); len(ps) != 1 || get(pages, "activePageId") != start["pageId"] {
			t.Errorf("page_list = %s", dump(pages))
		}
		// A second page: listed, activated, closed.
		second := mustOK(t, cs, "page_open", map[string]any{"sessionId": start["sessionId"], "url": matrixURL("/dialog.html")})
		if get(second, "navigationOutcome", "status") != "completed" || asStr(second["session_id"]) != start["sessionId"] {
			t.Errorf("page_open = %s", dump(second))
		}
		act := mustOK(t, cs, "page_activate", map[string]any{"workflowHandle": h})
		if get(act, "evidence", "activePageId") != start["pageId"] {
			t.Errorf("page_activate = %s", dump(act))
		}
		if ps, _ := mustOK(t, cs, "page_list", map[string]any{"sessionId": start["sessionId"]})["pages"].([]any); len(ps) != 2 {
			t.Errorf("page_list after page_open lists %d pages", len(ps))
		}
		mustOK(t, cs, "page_close", map[string]any{"sessionId": start["sessionId"], "pageId": second["id"]})
		mustFail(t, cs, "a11y_snapshot", map[string]any{"sessionId": start["sessionId"], "pageId": second["id"]}, CodeNotFound)
		info := mustOK(t, cs, "runtime_info", map[string]any{})
		if get(info, "browser", "engine") != engine || get(info, "browser", "healthy") != true || asStr(get(info, "browser", "version")) == "" {
			t.Errorf("runtime_info browser = %s", dump(info["browser"]))
		}
		shapes[engine] = shapeOf(snap, "evidence", "accessibility") + " | " + shapeOf(nav, "evidence", "navigationOutcome")
		mustOK(t, cs, "session_close", map[string]any{"sessionId": start["sessionId"]})
		mustFail(t, cs, "a11y_snapshot", map[string]any{"sessionId": start["sessionId"], "pageId": start["pageId"]}, CodeNotFound)
	})
	if len(shapes) == 2 && shapes[engineChromium] != shapes[engineFirefox] {
		t.Errorf("result shapes differ:\nchromium %s\nfirefox  %s", shapes[engineChromium], shapes[engineFirefox])
	}
}

// TestEngineMatrixFormByRefs fills and submits the sign-up form with
// type_text and click on snapshot refs and role targets, then waits for
// the welcome page.
func TestEngineMatrixFormByRefs(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/signup.html")})["workflowHandle"]
		text := snapshotText(t, cs, h)
		// The retained snapshot answers context questions on both engines.
		ask := mustOK(t, cs, "context_ask", map[string]any{"workflowHandle": h, "question": "the create account button"})
		if get(ask, "answer", "target", "name") != "Create account" {
			t.Errorf("context_ask = %s", dump(ask))
		}
		loc := mustOK(t, cs, "intent_locate", map[string]any{"workflowHandle": h, "description": "password field"})
		if get(loc, "evidence", "located", "target", "name") != "Password" {
			t.Errorf("intent_locate = %s", dump(loc))
		}
		ex := mustOK(t, cs, "extract_structured", map[string]any{"workflowHandle": h, "selector": "nav a", "fields": map[string]any{"text": ".", "href": ".@href"}})
		if items, _ := get(ex, "evidence", "extraction", "items").([]any); len(items) != 3 || get(items[1].(map[string]any), "text") != "Pricing" {
			t.Errorf("extract_structured = %s", dump(ex))
		}
		typed := mustOK(t, cs, "type_text", map[string]any{"workflowHandle": h, "target": map[string]any{"ref": refOf(t, text, "textbox", "Email")}, "text": "ada@example.com"})
		if get(typed, "evidence", "typedChars") != float64(15) || strings.Contains(dump(typed), "ada@") {
			t.Errorf("type_text = %s", dump(typed))
		}
		mustOK(t, cs, "type_text", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "textbox", "name": "Full name"}, "text": "Ada"})
		mustOK(t, cs, "type_text", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "textbox", "name": "Full name"}, "text": "Ada Lovelace", "clear": true})
		mustOK(t, cs, "type_text", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "textbox", "name": "Password"}, "text": "correct horse battery"})
		mustOK(t, cs, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "value",
			"target": map[string]any{"role": "textbox", "name": "Full name"}, "matcher": map[string]any{"kind": "exact", "value": "Ada Lovelace"}}})
		click := mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"ref": refOf(t, text, "checkbox", "I accept the terms")}})
		if asStr(get(click, "evidence", "ref")) == "" || get(click, "evidence", "page") == nil {
			t.Errorf("click evidence = %s", dump(click["evidence"]))
		}
		if !strings.Contains(snapshotText(t, cs, h), `checkbox "I accept the terms" [checked]`) {
			t.Errorf("the terms are not ticked after the click")
		}
		mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Create account"}})
		mustOK(t, cs, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "url", "matcher": map[string]any{"kind": "contains", "value": "/welcome.html"}}})
		waitText(t, cs, h, "Welcome")
		// A ref of the old document no longer resolves: the repair is a new snapshot.
		mustFail(t, cs, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"ref": refOf(t, text, "checkbox", "Send me product news")}}, CodeTargetNotFound)
	})
}

func TestEngineMatrixClickModifiers(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/m/keys.html")})["workflowHandle"]
		target := map[string]any{"role": "button", "name": "Record keys"}
		c := mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": target, "modifiers": []string{"shift", "alt"}})
		if fmt.Sprint(get(c, "evidence", "modifiers")) != "[shift alt]" {
			t.Errorf("click evidence = %s", dump(c["evidence"]))
		}
		waitText(t, cs, h, "shift=true alt=true ctrl=false")
		// The keys were released: a plain click holds none.
		mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": target})
		waitText(t, cs, h, "shift=false alt=false ctrl=false")
	})
}

func TestEngineMatrixDialogs(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		start := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/dialog.html")})
		h := start["workflowHandle"]
		mustFail(t, cs, "dialog", map[string]any{"workflowHandle": h, "accept": true}, CodeNoDialog)
		c := mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Confirm"}})
		if get(c, "evidence", "dialog", "type") != "confirm" || get(c, "evidence", "dialog", "message") != "sure?" {
			t.Fatalf("click evidence lacks the confirm: %s", dump(c["evidence"]))
		}
		list := mustOK(t, cs, "page_list", map[string]any{"sessionId": start["sessionId"]})
		if get(list, "pages") == nil || !strings.Contains(dump(list), `"dialog":{"message":"sure?","type":"confirm"}`) {
			t.Errorf("page_list lacks the open dialog: %s", dump(list))
		}
		mustFail(t, cs, "navigate", map[string]any{"workflowHandle": h, "url": matrixURL("/index.html")}, CodeDialogOpen)
		mustFail(t, cs, "a11y_snapshot", map[string]any{"workflowHandle": h}, CodeDialogOpen)
		d := mustOK(t, cs, "dialog", map[string]any{"workflowHandle": h, "accept": false})
		if get(d, "evidence", "accepted") != false || get(d, "evidence", "dialog", "type") != "confirm" {
			t.Errorf("dialog = %s", dump(d))
		}
		waitText(t, cs, h, "no")
		mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Confirm"}})
		mustOK(t, cs, "dialog", map[string]any{"workflowHandle": h, "accept": true})
		waitText(t, cs, h, "yes")
	})
}

func TestEngineMatrixCookies(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		site := strings.TrimSuffix(matrixURL("/"), "/")
		h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/index.html")})["workflowHandle"]
		mustOK(t, cs, "cookie_set", map[string]any{"workflowHandle": h, "cookies": []map[string]any{
			{"name": "theme", "value": "dark", "url": site}, {"name": "sid", "value": "s3cret", "url": site, "httpOnly": true},
		}})
		got := mustOK(t, cs, "cookie_get", map[string]any{"workflowHandle": h, "url": site + "/"})
		if get(got, "evidence", "count") != float64(2) {
			t.Fatalf("cookie_get = %s", dump(got))
		}
		cookies, _ := get(got, "evidence", "cookies").([]any)
		if c, _ := cookies[0].(map[string]any); c["name"] != "sid" || c["httpOnly"] != true || c["domain"] != "127.0.0.1" || c["path"] != "/" || c["expires"] != nil {
			t.Errorf("first cookie = %s", dump(cookies[0]))
		}
		other := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default"})
		if o := mustOK(t, cs, "cookie_get", map[string]any{"workflowHandle": other["workflowHandle"]}); get(o, "evidence", "count") != float64(0) {
			t.Errorf("a fresh session sees cookies: %s", dump(o))
		}
		if d := mustOK(t, cs, "cookie_delete", map[string]any{"workflowHandle": h, "name": "sid"}); get(d, "evidence", "deleted") != float64(1) {
			t.Errorf("cookie_delete = %s", dump(d))
		}
		if d := mustOK(t, cs, "cookie_delete", map[string]any{"workflowHandle": h, "all": true}); get(d, "evidence", "deleted") != float64(1) {
			t.Errorf("cookie_delete all = %s", dump(d))
		}
		mustFail(t, cs, "cookie_set", map[string]any{"workflowHandle": h, "cookies": []map[string]any{{"name": "x", "value": "1"}}}, CodeInvalidRequest)
	})
}

func TestEngineMatrixScreenshots(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/signup.html")})["workflowHandle"]
		for _, args := range []map[string]any{
			{}, {"fullPage": true}, {"target": map[string]any{"role": "button", "name": "Create account"}},
		} {
			args["workflowHandle"] = h
			res, m := callTool(t, cs, "screenshot", args)
			if res.IsError {
				t.Fatalf("screenshot(%v) = %s", args, dump(m))
			}
			art, _ := get(m, "evidence", "artifact").(map[string]any)
			if art["mimeType"] != "image/png" || art["bytes"].(float64) < 100 || art["width"].(float64) < 1 || len(asStr(art["sha256"])) != 64 {
				t.Errorf("screenshot(%v) artifact = %s", args, dump(art))
			}
			if len(res.Content) != 2 {
				t.Errorf("screenshot(%v) has %d content items, want text and image", args, len(res.Content))
			}
			if _, ok := args["target"]; ok && art["width"].(float64) > 400 {
				t.Errorf("an element capture is %v wide: the whole page?", art["width"])
			}
		}
	})
}

func TestEngineMatrixWaits(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/m/late.html")})["workflowHandle"]
		w := func(cond map[string]any) map[string]any {
			return mustOK(t, cs, "wait_for", map[string]any{"workflowHandle": h, "timeoutMs": 5000, "condition": cond})
		}
		w(map[string]any{"kind": "document", "readyState": "complete"})
		if u := w(map[string]any{"kind": "url", "matcher": map[string]any{"kind": "regex", "value": "/late\\.html$"}}); !strings.HasSuffix(asStr(get(u, "evidence", "wait", "observed")), "/late.html") {
			t.Errorf("url wait = %s", dump(u))
		}
		w(map[string]any{"kind": "text", "target": map[string]any{"role": "main"}, "matcher": map[string]any{"kind": "contains", "value": "Ready now"}})
		el := w(map[string]any{"kind": "element", "target": map[string]any{"role": "button", "name": "Late button"}, "state": "visible"})
		if get(el, "evidence", "wait", "observed") != "visible" {
			t.Errorf("element wait = %s", dump(el))
		}
		_, m := callTool(t, cs, "wait_for", map[string]any{"workflowHandle": h, "timeoutMs": 300, "condition": map[string]any{"kind": "text", "matcher": map[string]any{"kind": "exact", "value": "never shown"}}})
		if m["status"] != StatusTimedOut || errCode(m) != CodeTimeout || get(m, "evidence", "wait", "timedOut") != true {
			t.Errorf("unmet wait = %s", dump(m))
		}
		_, q := callTool(t, cs, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "networkQuiet"}})
		switch engine {
		case engineChromium:
			if q["status"] != StatusCompleted {
				t.Errorf("networkQuiet on chromium = %s", dump(q))
			}
		case engineFirefox:
			if errCode(q) != CodeUnsupportedOnEngine || get(q, "error", "repair", "action") != "useSupportedToolOrEngine" ||
				!strings.Contains(asStr(get(q, "error", "message")), "networkQuiet") {
				t.Errorf("networkQuiet on firefox = %s", dump(q))
			}
		}
	})
}

// TestEngineMatrixFrames clicks through an iframe and an open shadow root
// by the snapshot's refs.
func TestEngineMatrixFrames(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/m/frames.html")})["workflowHandle"]
		mustOK(t, cs, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "document"}})
		text := snapshotText(t, cs, h)
		shadow := refOf(t, text, "button", "Shadow action")
		apply := refOf(t, text, "button", "Apply promo")
		code := refOf(t, text, "textbox", "Promo code")
		mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"ref": shadow}})
		waitText(t, cs, h, "shadow clicked")
		mustOK(t, cs, "type_text", map[string]any{"workflowHandle": h, "target": map[string]any{"ref": code}, "text": "SAVE10"})
		mustOK(t, cs, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"ref": apply}})
		waitText(t, cs, h, "frame clicked")
		if !strings.Contains(snapshotText(t, cs, h), "applied SAVE10") {
			t.Errorf("the frame's own text did not change")
		}
	})
}

// noEcho calls a tool and fails the test if the secret appears anywhere in
// its answer: the structured result or the text a model reads.
func noEcho(t *testing.T, cs *mcp.ClientSession, secret, name string, args any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, m := callTool(t, cs, name, args)
	raw, _ := json.Marshal(m)
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if strings.Contains(string(raw), secret) || strings.Contains(text, secret) {
		t.Fatalf("%s echoed the password: %s\n%s", name, raw, text)
	}
	return res, m
}

// TestEngineMatrixFormLoop runs the form loop through the MCP tools on both
// engines: workflow_observe with includeForms, a submit blocked by client
// validation, intent_complete_form revealing a conditional field, a
// control_action on the revealed control, intent_fill, and a verified
// intent_submit_and_verify; the password is never echoed, and the results
// have the same shapes.
func TestEngineMatrixFormLoop(t *testing.T) {
	const password = "s3cret-Pa55"
	shapes := map[string]string{}
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		start := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/form.html")})
		h := start["workflowHandle"]
		obs := mustOK(t, cs, "workflow_observe", map[string]any{"workflowHandle": h, "includeForms": true, "maxControls": 64})
		if !strings.Contains(dump(obs["formSnapshot"]), "Email") || get(obs, "observationOutcome", "status") != StatusCompleted {
			t.Fatalf("workflow_observe includeForms = %s", dump(obs))
		}
		fs := mustOK(t, cs, "form_snapshot", map[string]any{"workflowHandle": h})
		controls, _ := get(fs, "evidence", "formSnapshot", "controls").([]any)
		hidden := false
		for _, c := range controls {
			if cm, _ := c.(map[string]any); cm["label"] == "Gift message" {
				hidden = cm["visible"] == false
			}
		}
		if len(controls) != 6 || !hidden {
			t.Fatalf("form_snapshot controls (the gift message is hidden) = %s", dump(controls))
		}

		// The empty form: client-side validation blocks the submit, value-free.
		blocked := mustFail(t, cs, "intent_submit_and_verify", map[string]any{"workflowHandle": h}, CodeFormValidation)
		if issues, _ := get(blocked, "evidence", "formValidation").([]any); len(issues) == 0 {
			t.Fatalf("blocked submit without formValidation: %s", dump(blocked))
		}

		_, done := noEcho(t, cs, password, "intent_complete_form", map[string]any{"workflowHandle": h,
			"values": map[string]any{"Email": "ada@example.com", "Name": "Ada", "Gift": true, "Password": password, "Plan": "Pro"}})
		if done["status"] != StatusCompleted {
			t.Fatalf("intent_complete_form = %s", dump(done))
		}
		revealed, _ := get(done, "evidence", "revealedControls").([]any)
		if len(revealed) != 1 || !strings.Contains(dump(revealed[0]), "Gift message") {
			t.Fatalf("revealedControls = %s", dump(get(done, "evidence", "revealedControls")))
		}
		// The revealed control's target is usable at once.
		ca := mustOK(t, cs, "control_action", map[string]any{"workflowHandle": h, "target": get(revealed[0].(map[string]any), "target"),
			"action": map[string]any{"kind": "setText", "text": "Happy birthday"}})
		if get(ca, "evidence", "control", "applied") != true {
			t.Errorf("control_action setText = %s", dump(ca))
		}
		// A wrong action for the control is the caller's error.
		mustFail(t, cs, "control_action", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "checkbox", "name": "Gift"},
			"action": map[string]any{"kind": "setText", "text": "x"}}, CodeInvalidRequest)
		// control_action never echoes a typed password either.
		_, pw := noEcho(t, cs, password, "control_action", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "textbox", "name": "Password"},
			"action": map[string]any{"kind": "setText", "text": password}})
		if get(pw, "evidence", "control", "applied") != true {
			t.Errorf("control_action on the password = %s", dump(pw))
		}
		fill := mustOK(t, cs, "intent_fill", map[string]any{"workflowHandle": h, "fields": []any{map[string]any{"field": "Name", "value": "Ada Lovelace"}}})
		if !strings.Contains(dump(get(fill, "evidence", "fields")), `"status":"filled"`) {
			t.Errorf("intent_fill = %s", dump(fill))
		}
		// The form tools are command_execute kinds on both engines too.
		sel := mustOK(t, cs, "command_execute", map[string]any{"envelope": map[string]any{"kind": "control_action", "workflowHandle": h,
			"input": map[string]any{"target": map[string]any{"role": "combobox", "name": "Plan"}, "action": map[string]any{"kind": "selectOne", "option": "free"}}}})
		if !strings.Contains(dump(get(sel, "evidence", "control", "selected")), "free") {
			t.Errorf("command_execute control_action selectOne = %s", dump(sel))
		}
		mustOK(t, cs, "command_execute", map[string]any{"envelope": map[string]any{"kind": "intent", "workflowHandle": h,
			"input": map[string]any{"kind": "complete_form", "values": map[string]any{"Plan": "Pro"}}}})

		_, sub := noEcho(t, cs, password, "intent_submit_and_verify", map[string]any{"workflowHandle": h,
			"expect": map[string]any{"urlContains": "submitted", "textContains": "Thanks"}})
		if sub["status"] != StatusCompleted || get(sub, "evidence", "submission", "status") != "verified" {
			t.Fatalf("intent_submit_and_verify = %s", dump(sub))
		}
		page := mustOK(t, cs, "page_list", map[string]any{"sessionId": start["sessionId"]})
		if !strings.Contains(dump(page), "submitted.html") || !strings.Contains(dump(page), "giftmsg=Happy") || !strings.Contains(dump(page), "plan=pro") {
			t.Errorf("page after submit = %s", dump(page))
		}
		shapes[engine] = shapeOf(fs, "evidence", "formSnapshot") + " | " + shapeOf(done, "evidence") + " | " +
			shapeOf(ca, "evidence", "control") + " | " + shapeOf(sub, "evidence", "submission")
	})
	if len(shapes) == 2 && shapes[engineChromium] != shapes[engineFirefox] {
		t.Errorf("result shapes differ:\nchromium %s\nfirefox  %s", shapes[engineChromium], shapes[engineFirefox])
	}
}

// TestEngineMatrixFormDialogsAndFrames: a control_action that opens an
// alert answers dialogOpen on both engines and dialog repairs it; a
// selector into a frame (iframe#id >> css) works on Chromium and is a tool error with a
// repair on Firefox.
func TestEngineMatrixFormDialogsAndFrames(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/dialog.html")})["workflowHandle"]
		m := mustFail(t, cs, "control_action", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Alert"},
			"action": map[string]any{"kind": "activate"}}, CodeDialogOpen)
		if get(m, "error", "repair", "action") != "handleDialog" {
			t.Errorf("control_action behind an alert = %s", dump(m))
		}
		mustFail(t, cs, "form_snapshot", map[string]any{"workflowHandle": h}, CodeDialogOpen)
		d := mustOK(t, cs, "dialog", map[string]any{"workflowHandle": h, "accept": true})
		if get(d, "evidence", "dialog", "message") != "hello there" {
			t.Errorf("dialog = %s", dump(d))
		}
		mustOK(t, cs, "form_snapshot", map[string]any{"workflowHandle": h})

		f := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/m/frames.html")})["workflowHandle"]
		mustOK(t, cs, "wait_for", map[string]any{"workflowHandle": f, "condition": map[string]any{"kind": "document"}})
		into := map[string]any{"workflowHandle": f, "target": map[string]any{"selector": "iframe#inner >> #code"},
			"action": map[string]any{"kind": "setText", "text": "SAVE10"}}
		switch engine {
		case engineChromium:
			if c := mustOK(t, cs, "control_action", into); get(c, "evidence", "control", "applied") != true {
				t.Errorf("control_action into the frame = %s", dump(c))
			}
		case engineFirefox:
			m := mustFail(t, cs, "control_action", into, CodeUnsupportedOnEngine)
			if !strings.Contains(asStr(get(m, "error", "message")), "into a frame") || get(m, "error", "repair", "action") != "useSupportedToolOrEngine" {
				t.Errorf("control_action into the frame on firefox = %s", dump(m))
			}
			// The same control by its role and name works.
			c := mustOK(t, cs, "control_action", map[string]any{"workflowHandle": f, "target": map[string]any{"role": "textbox", "name": "Promo code"},
				"action": map[string]any{"kind": "setText", "text": "SAVE10"}})
			if get(c, "evidence", "control", "applied") != true {
				t.Errorf("control_action in the frame by role = %s", dump(c))
			}
		}
	})
}

// TestFirefoxAdvertisesOnlyWhatRuns: on Firefox, tools/list leaves out the
// tools declared for Chromium alone, a call to one answers
// unsupportedOnEngine naming why, and so does an argument Firefox lacks.
func TestFirefoxAdvertisesOnlyWhatRuns(t *testing.T) {
	_, cs := engineGateway(t, engineFirefox)
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "drives a real Firefox browser") || strings.Contains(ins, "Chromium") {
		t.Errorf("instructions on firefox: %s", ins)
	}
	for _, phase := range []string{"explore", "act", "intent", "verify"} {
		mustOK(t, cs, "toolset_select", map[string]any{"phase": phase})
		names := toolNames(t, cs)
		for _, tool := range toolTable {
			if names[tool.name] && !tool.runsOn(engineFirefox) {
				t.Errorf("%s: tools/list advertises %s, which does not run on Firefox", phase, tool.name)
			}
		}
	}
	mustOK(t, cs, "toolset_select", map[string]any{"phase": "act"})
	if names := toolNames(t, cs); !names["click"] || !names["type_text"] || !names["cookie_set"] || !names["control_action"] || !names["upload_files"] || !names["download_url"] || names["emulate"] || names["network_log"] {
		t.Errorf("act phase on firefox lists %v", names)
	}
	// The form loop is advertised on Firefox: the startup phase runs it whole.
	mustOK(t, cs, "toolset_select", map[string]any{"phase": "explore"})
	names := toolNames(t, cs)
	for _, n := range []string{"workflow_start", "workflow_observe", "form_snapshot", "intent_complete_form", "intent_submit_and_verify"} {
		if !names[n] {
			t.Errorf("explore phase on firefox does not list %s", n)
		}
	}
	mustOK(t, cs, "toolset_select", map[string]any{"phase": "intent"})
	if names := toolNames(t, cs); !names["intent_fill"] || !names["control_action"] {
		t.Errorf("intent phase on firefox lists %v", names)
	}
	info := mustOK(t, cs, "runtime_info", map[string]any{})
	if feats := dump(info["capabilities"]); strings.Contains(feats, "network-quiet") || strings.Contains(feats, "chromium") || !strings.Contains(feats, "firefox") ||
		!strings.Contains(feats, `"uploads"`) || !strings.Contains(feats, `"downloads"`) || !strings.Contains(feats, `"forms"`) {
		t.Errorf("runtime_info capabilities on firefox = %s", feats)
	}
	res, err := cs.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: ResourceCapabilities})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("bobby://capabilities: %v", err)
	}
	var doc struct {
		Tools []struct {
			Tool      string   `json:"tool"`
			Engines   []string `json:"engines"`
			EngineGap string   `json:"engineGap"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &doc); err != nil {
		t.Fatal(err)
	}
	for _, row := range doc.Tools {
		switch row.Tool {
		case "click":
			if fmt.Sprint(row.Engines) != "[chromium firefox]" {
				t.Errorf("bobby://capabilities click engines %v", row.Engines)
			}
		case "form_snapshot", "control_action", "intent_fill", "intent_complete_form", "intent_submit_and_verify", "upload_files", "download_url":
			if fmt.Sprint(row.Engines) != "[chromium firefox]" || row.EngineGap != "" {
				t.Errorf("bobby://capabilities %s: %+v", row.Tool, row)
			}
		case "network_log":
			if fmt.Sprint(row.Engines) != "[chromium]" || !strings.Contains(row.EngineGap, "CDP's Network domain") {
				t.Errorf("bobby://capabilities network_log: %+v", row)
			}
		}
	}
	start := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/signup.html")})
	h := start["workflowHandle"]
	for _, tool := range []string{"network_log", "inspect", "pdf", "intent_wait_for_state"} {
		m := mustFail(t, cs, tool, map[string]any{"workflowHandle": h}, CodeUnsupportedOnEngine)
		msg := asStr(get(m, "error", "message"))
		if !strings.Contains(msg, "runs on chromium, not on firefox") || get(m, "error", "repair", "doc") != TaxonomyURI+"#"+CodeUnsupportedOnEngine {
			t.Errorf("%s refusal = %s", tool, dump(m))
		}
	}
	// Through command_execute too.
	m := mustFail(t, cs, "command_execute", map[string]any{"envelope": map[string]any{"kind": "emulate", "sessionId": start["sessionId"], "pageId": start["pageId"], "input": map[string]any{"locale": "de-DE"}}}, CodeUnsupportedOnEngine)
	if !strings.Contains(asStr(get(m, "error", "message")), "emulate") {
		t.Errorf("command_execute emulate = %s", dump(m))
	}
	obs := mustOK(t, cs, "workflow_observe", map[string]any{"workflowHandle": h, "includeForms": true})
	if get(obs, "observationOutcome", "status") != StatusCompleted || !strings.Contains(dump(obs["formSnapshot"]), "Email") {
		t.Errorf("workflow_observe includeForms on firefox = %s", dump(obs))
	}
	mustFail(t, cs, "session_create", map[string]any{"profile": "default", "executionPolicy": map[string]any{"humanize": true}}, CodeUnsupportedOnEngine)
	// evaluate_javascript runs under the same policy as on Chromium.
	mustFail(t, cs, "evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "1+1"}, CodePolicyDenied)
	js := mustOK(t, cs, "session_create", map[string]any{"profile": "default", "executionPolicy": map[string]any{"javascriptEvaluation": true}})
	p := mustOK(t, cs, "page_open", map[string]any{"sessionId": get(js, "id"), "url": matrixURL("/signup.html")})
	v := mustOK(t, cs, "evaluate_javascript", map[string]any{"sessionId": get(js, "id"), "pageId": p["id"], "expression": "document.title + ' ' + (6*7)"})
	if get(v, "evidence", "value") != "Sign up 42" {
		t.Errorf("evaluate_javascript = %s", dump(v))
	}
	mustFail(t, cs, "evaluate_javascript", map[string]any{"sessionId": get(js, "id"), "pageId": p["id"], "expression": "(() => { throw new Error('boom') })()"}, CodeJavaScriptError)
}
