package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/vault"
	"github.com/deltaharness/delta/internal/workspace"
)

type echoArgs struct {
	Text string `json:"text"`
}

// echoThenAnswer calls echo on its first turn and answers on the second.
func echoThenAnswer(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			return model.Response{Model: req.Model, Text: "echoed: " + m.Content, Usage: model.Usage{InputTokens: 50, OutputTokens: 4}}, nil
		}
	}
	args := json.RawMessage(`{"text":"ping"}`)
	for _, m := range req.Messages {
		// "echo back: X" makes the model pass X to the tool, so X lands in
		// the tool.call event's arguments.
		if rest, ok := strings.CutPrefix(m.Content, "echo back: "); ok && m.Role == model.RoleUser {
			args, _ = json.Marshal(map[string]string{"text": rest})
		}
	}
	return model.Response{Model: req.Model, Usage: model.Usage{InputTokens: 40, OutputTokens: 6},
		ToolCalls: []model.ToolCall{{ID: "c1", Name: "echo", Arguments: args}}}, nil
}

type cockpit struct {
	url string
	dir string
	svc *engine.Service
}

// newCockpit is the inspection surface over a real store, engine and
// workspace, with call capture on and one vault value registered.
func newCockpit(t *testing.T, o api.Options, tls bool) *cockpit {
	t.Helper()
	dir := t.TempDir()
	st := openStore(t, filepath.Join(dir, ".delta", "delta.db"))
	b, err := bundle.Load(bundle.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	red := vault.NewRedactor()
	red.Register("KB_TOKEN", "kb-secret-value-42")
	reg := tool.NewRegistry()
	reg.Add(tool.Func("echo", "echoes its text back", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text(a.Text), nil
	}))
	eng := engine.New(engine.Options{Store: st, Provider: model.ProviderFunc(echoThenAnswer), Models: []string{"test-model"}, Prompt: b, Tools: reg,
		ToolNames: func(string) []string { return reg.Names() }, Spill: ws, WorkspaceDir: dir, CaptureCalls: true, Redact: red.Redact,
		Budget: func(string) engine.Budget { return engine.Budget{Steps: 10, Tokens: 1e9, CostUSD: 100} }})
	q := openQueue(t, st, eng, 4)
	o.Service = engine.NewService(st, q, eng)
	o.Files = ws
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(api.New(o))
	} else {
		srv = httptest.NewServer(api.New(o))
	}
	t.Cleanup(func() {
		srv.Close()
		q.Close(context.Background())
		st.Close()
	})
	return &cockpit{url: srv.URL, dir: dir, svc: o.Service}
}

// submit runs one task to its end and returns its id.
func (c *cockpit) submit(t *testing.T, owner, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := c.svc.Submit(ctx, engine.Submission{Owner: owner, Request: engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: text}}, Profile: "trusted"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = c.svc.Wait(ctx, owner, r.ID); err != nil || r.Status != store.StatusDone {
		t.Fatalf("run %s: %s %v %s", r.ID, r.Status, err, r.Error)
	}
	return r.ID
}

func TestDevRunsPageWithCursorsAndFilters(t *testing.T) {
	c := newCockpit(t, api.Options{}, false)
	var ids []string
	for i := range 5 {
		owner := ""
		if i%2 == 1 {
			owner = "alice"
		}
		ids = append(ids, c.submit(t, owner, fmt.Sprint("task ", i)))
	}
	seen := map[string]bool{}
	url := c.url + "/v1/dev/runs?limit=2"
	pages := 0
	for {
		s, m := do(t, "GET", url, "", nil)
		if s != 200 {
			t.Fatalf("GET %s = %d %v", url, s, m)
		}
		pages++
		for _, r := range m["data"].([]any) {
			id := r.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("run %s on two pages", id)
			}
			seen[id] = true
		}
		next, ok := m["next_cursor"].(string)
		if !ok {
			break
		}
		url = c.url + "/v1/dev/runs?limit=2&cursor=" + next
	}
	if pages != 3 || len(seen) != 5 {
		t.Fatalf("paging saw %d runs over %d pages, want 5 over 3", len(seen), pages)
	}
	_, m := do(t, "GET", c.url+"/v1/dev/runs", "", nil)
	first := m["data"].([]any)[0].(map[string]any)
	if first["id"] != ids[4] || first["calls"] != float64(2) || first["input"] != "task 4" || first["status"] != "done" {
		t.Errorf("newest row = %v, want run %s with 2 captured calls", first, ids[4])
	}
	if _, m := do(t, "GET", c.url+"/v1/dev/runs?owner=alice", "", nil); len(m["data"].([]any)) != 2 {
		t.Errorf("owner=alice: %d rows, want 2", len(m["data"].([]any)))
	}
	if _, m := do(t, "GET", c.url+"/v1/dev/runs?owner=", "", nil); len(m["data"].([]any)) != 3 {
		t.Errorf("owner= (unowned): %d rows, want 3", len(m["data"].([]any)))
	}
	if _, m := do(t, "GET", c.url+"/v1/dev/runs?status=running", "", nil); len(m["data"].([]any)) != 0 {
		t.Errorf("status=running: %v, want none", m["data"])
	}
	sess := first["session_id"].(string)
	if _, m := do(t, "GET", c.url+"/v1/dev/runs?session="+sess, "", nil); len(m["data"].([]any)) != 1 {
		t.Errorf("session filter: %v", m["data"])
	}
	_, m = do(t, "GET", c.url+"/v1/dev/sessions?limit=4", "", nil)
	if len(m["data"].([]any)) != 4 || m["next_cursor"] == nil {
		t.Errorf("sessions page = %v", m)
	}
	for _, bad := range []string{"/v1/dev/runs?status=weird", "/v1/dev/runs?limit=0", "/v1/dev/runs?limit=900", "/v1/dev/runs?cursor=abc", "/v1/dev/sessions?cursor=-1"} {
		if s, m := do(t, "GET", c.url+bad, "", nil); s != 400 || errMessage(m) == "" {
			t.Errorf("GET %s = %d %v, want a 400 envelope", bad, s, m)
		}
	}
}

// One run's record carries its events, messages, captured calls and
// journal; nothing in it carries the vault value the user typed.
func TestDevRunDetailIsRedacted(t *testing.T) {
	c := newCockpit(t, api.Options{}, false)
	id := c.submit(t, "", "use kb-secret-value-42 and sk-live0123456789abcdefXYZ to echo")
	resp, err := http.Get(c.url + "/v1/dev/runs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(raw)
	if resp.StatusCode != 200 || strings.Contains(body, "kb-secret-value-42") || strings.Contains(body, "sk-live0123456789abcdefXYZ") || !strings.Contains(body, "[vault:KB_TOKEN]") {
		t.Fatalf("run detail %d leaks or lacks the redaction: %.400s", resp.StatusCode, body)
	}
	var m struct {
		Events   []map[string]any `json:"events"`
		Messages []map[string]any `json:"messages"`
		Calls    []struct {
			Turn    int             `json:"turn"`
			Request json.RawMessage `json:"request"`
		} `json:"calls"`
		Journal []map[string]any `json:"journal"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Events) < 6 || len(m.Messages) != 4 || len(m.Calls) != 2 || len(m.Journal) != 1 {
		t.Fatalf("detail: %d events, %d messages, %d calls, %d journal rows", len(m.Events), len(m.Messages), len(m.Calls), len(m.Journal))
	}
	j := m.Journal[0]
	if j["name"] != "echo" || j["result"] != "ping" || j["class"] != "read_only" || j["state"] != "done" {
		t.Errorf("journal row = %v", j)
	}
	if !strings.Contains(string(m.Calls[0].Request), `"name":"echo"`) || !strings.Contains(string(m.Calls[0].Request), "[vault:KB_TOKEN] and [redacted] to echo") {
		t.Errorf("captured request = %s", m.Calls[0].Request)
	}
	s, cm := do(t, "GET", c.url+"/v1/dev/runs/"+id+"/calls", "", nil)
	if s != 200 || len(cm["data"].([]any)) != 2 || cm["capture"] != true {
		t.Errorf("calls = %d %v", s, cm)
	}
	if s, m := do(t, "GET", c.url+"/v1/dev/runs/resp_nope/calls", "", nil); s != 404 || errMessage(m) == "" {
		t.Errorf("unknown run calls = %d %v", s, m)
	}
}

func TestDevFilesReadWriteAndRefusals(t *testing.T) {
	c := newCockpit(t, api.Options{InspectWrite: true}, false)
	for name, body := range map[string]string{"DELTA.md": "# self\n", ".env": "KEY=v", "delta.env": "MODEL_API_KEY=x", "notes/a.md": "a",
		"sub/.env": "SECRET=1", "sub/delta.env": "K=1", "sub/.env.local": "K=1", "sub/.delta/x": "state"} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(c.dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, tree := do(t, "GET", c.url+"/v1/dev/files", "", nil)
	paths := map[string]bool{}
	for _, e := range tree["data"].([]any) {
		paths[e.(map[string]any)["path"].(string)] = true
	}
	if !paths["DELTA.md"] || !paths["notes/a.md"] || paths[".env"] || paths["delta.env"] || paths[".delta"] || paths[".delta/delta.db"] ||
		paths["sub/.env"] || paths["sub/delta.env"] || paths["sub/.env.local"] || paths["sub/.delta"] || paths["sub/.delta/x"] {
		t.Errorf("tree = %v, want DELTA.md and notes/a.md without .delta or secrets files", paths)
	}
	if s, m := do(t, "GET", c.url+"/v1/dev/files/DELTA.md", "", nil); s != 200 || m["content"] != "# self\n" {
		t.Errorf("read DELTA.md = %d %v", s, m)
	}
	if s, m := do(t, "PUT", c.url+"/v1/dev/files/DELTA.md", `{"content":"# edited\n"}`, nil); s != 200 {
		t.Fatalf("write DELTA.md = %d %v", s, m)
	}
	if b, _ := os.ReadFile(filepath.Join(c.dir, "DELTA.md")); string(b) != "# edited\n" {
		t.Errorf("DELTA.md on disk = %q", b)
	}
	db, _ := os.ReadFile(filepath.Join(c.dir, ".delta", "delta.db"))
	for _, p := range []string{".delta/delta.db", ".DELTA/delta.db", ".delta/new.txt", ".env", ".env.local", "delta.env",
		"sub/.env", "sub/.ENV", "sub/delta.env", "sub/.env.local", "sub/.delta/x"} {
		if s, m := do(t, "PUT", c.url+"/v1/dev/files/"+p, `{"content":"x"}`, nil); s != 403 || !strings.Contains(errMessage(m), "protected") {
			t.Errorf("PUT %s = %d %v, want 403", p, s, m)
		}
		if s, _ := do(t, "GET", c.url+"/v1/dev/files/"+p, "", nil); s != 403 {
			t.Errorf("GET %s = %d, want 403", p, s)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(c.dir, ".delta", "delta.db")); string(after) != string(db) {
		t.Error("a refused write changed the database file")
	}
	if _, err := os.Stat(filepath.Join(c.dir, ".delta", "new.txt")); err == nil {
		t.Error("a refused write created a file under .delta")
	}
	for _, bad := range []struct{ path, body string }{{"notes/b.md", `{"text":"x"}`}, {"notes/b.md", `[]`}, {"..%2Fescape.md", `{"content":"x"}`}} {
		if s, m := do(t, "PUT", c.url+"/v1/dev/files/"+bad.path, bad.body, nil); s != 400 || errMessage(m) == "" {
			t.Errorf("PUT %s %s = %d %v, want 400", bad.path, bad.body, s, m)
		}
	}
	if s, _ := do(t, "GET", c.url+"/v1/dev/files/nope.md", "", nil); s != 404 {
		t.Errorf("missing file = %d, want 404", s)
	}
	ro := newCockpit(t, api.Options{}, false)
	if s, m := do(t, "PUT", ro.url+"/v1/dev/files/notes.md", `{"content":"x"}`, nil); s != 403 || !strings.Contains(errMessage(m), "DELTA_INSPECT_WRITE") {
		t.Errorf("write with inspection writes off = %d %v", s, m)
	}
}

// A save that names the content it started from (base_sha256, as GET
// answered it) is refused with a 409 when the file changed meanwhile, and
// leaves the file as it is; the same save without a base overwrites.
func TestDevFileSaveRefusesAStaleBase(t *testing.T) {
	c := newCockpit(t, api.Options{InspectWrite: true}, false)
	file := filepath.Join(c.dir, "notes.md")
	if err := os.WriteFile(file, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, m := do(t, "GET", c.url+"/v1/dev/files/notes.md", "", nil)
	base, _ := m["sha256"].(string)
	if len(base) != 64 {
		t.Fatalf("GET = %v, want a sha256", m)
	}
	s, m := do(t, "PUT", c.url+"/v1/dev/files/notes.md", `{"content":"v2 from the operator\n","base_sha256":"`+base+`"}`, nil)
	if s != 200 || m["sha256"] == base || len(m["sha256"].(string)) != 64 {
		t.Fatalf("save on the current base = %d %v", s, m)
	}
	next := m["sha256"].(string)
	if err := os.WriteFile(file, []byte("v3 from the agent\n"), 0o644); err != nil { // meanwhile
		t.Fatal(err)
	}
	s, m = do(t, "PUT", c.url+"/v1/dev/files/notes.md", `{"content":"v4 from the operator\n","base_sha256":"`+next+`"}`, nil)
	if s != 409 || !strings.Contains(errMessage(m), "changed on disk since it was opened") {
		t.Errorf("save on a stale base = %d %v, want 409", s, m)
	}
	if b, _ := os.ReadFile(file); string(b) != "v3 from the agent\n" {
		t.Errorf("after a refused save the file holds %q, want the agent's write", b)
	}
	if s, m = do(t, "PUT", c.url+"/v1/dev/files/gone.md", `{"content":"x","base_sha256":"`+next+`"}`, nil); s != 409 {
		t.Errorf("save based on a file that is gone = %d %v, want 409", s, m)
	}
	if s, _ = do(t, "PUT", c.url+"/v1/dev/files/notes.md", `{"content":"v4 from the operator\n"}`, nil); s != 200 {
		t.Errorf("save without a base = %d, want 200", s)
	}
	if b, _ := os.ReadFile(file); string(b) != "v4 from the operator\n" {
		t.Errorf("after an overwrite the file holds %q", b)
	}
}

// The inspect token buys a cookie that opens /dev and /v1/dev/* only;
// writes with it also need the CSRF value; a forged cookie opens nothing.
func TestSessionCookieExchange(t *testing.T) {
	for _, tls := range []bool{false, true} {
		c := newCockpit(t, api.Options{InspectToken: "look-token", ControlToken: "drive-token", InspectWrite: true}, tls)
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		if tls {
			client.Transport = &http.Transport{TLSClientConfig: insecureTLS()}
		}
		call := func(method, path, body string, hdr map[string]string) (*http.Response, string) {
			req, _ := http.NewRequest(method, c.url+path, strings.NewReader(body))
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, string(b)
		}
		if r, body := call("GET", "/dev", "", nil); r.StatusCode != 401 || !strings.Contains(body, `action="/v1/dev/session"`) {
			t.Fatalf("/dev without credentials = %d, want the sign-in form", r.StatusCode)
		}
		if r, _ := call("POST", "/v1/dev/session", `{"token":"wrong"}`, map[string]string{"Content-Type": "application/json"}); r.StatusCode != 401 || len(r.Cookies()) != 0 {
			t.Fatalf("wrong token = %d with cookies %v", r.StatusCode, r.Cookies())
		}
		r, body := call("POST", "/v1/dev/session", `{"token":"look-token"}`, map[string]string{"Content-Type": "application/json"})
		if r.StatusCode != 200 || len(r.Cookies()) != 1 {
			t.Fatalf("session exchange = %d %s", r.StatusCode, body)
		}
		ck := r.Cookies()[0]
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != tls || ck.MaxAge <= 0 || ck.MaxAge > 24*3600 {
			t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Secure only on TLS (tls=%v), short-lived", ck, tls)
		}
		var sess struct{ CSRF string }
		_ = json.Unmarshal([]byte(body), &sess)
		cookie := map[string]string{"Cookie": ck.Name + "=" + ck.Value}
		if r, _ := call("GET", "/v1/dev/runs", "", cookie); r.StatusCode != 200 {
			t.Errorf("runs with the cookie = %d", r.StatusCode)
		}
		if r, _ := call("GET", "/dev", "", cookie); r.StatusCode != 200 {
			t.Errorf("/dev with the cookie = %d", r.StatusCode)
		}
		if r, _ := call("GET", "/v1/dev/runs", "", nil); r.StatusCode != 401 {
			t.Errorf("runs without credentials = %d", r.StatusCode)
		}
		if r, _ := call("GET", "/v1/busy", "", cookie); r.StatusCode != 401 {
			t.Errorf("the inspect cookie opened a control route: %d", r.StatusCode)
		}
		forged := map[string]string{"Cookie": ck.Name + "=" + ck.Value[:len(ck.Value)-2] + otherThan(ck.Value[len(ck.Value)-2:], "AA", "BB")}
		if r, _ := call("GET", "/v1/dev/runs", "", forged); r.StatusCode != 401 {
			t.Errorf("a forged cookie = %d", r.StatusCode)
		}
		if r, body := call("PUT", "/v1/dev/files/n.md", `{"content":"x"}`, cookie); r.StatusCode != 403 || !strings.Contains(body, "CSRF") {
			t.Errorf("write with the cookie and no CSRF header = %d %s", r.StatusCode, body)
		}
		withCSRF := map[string]string{"Cookie": cookie["Cookie"], "X-Delta-CSRF": otherThan(sess.CSRF[:1], "0", "1") + sess.CSRF[1:]}
		if r, _ := call("PUT", "/v1/dev/files/n.md", `{"content":"x"}`, withCSRF); r.StatusCode != 403 {
			t.Errorf("write with a wrong CSRF value = %d", r.StatusCode)
		}
		withCSRF["X-Delta-CSRF"] = sess.CSRF
		if r, body := call("PUT", "/v1/dev/files/n.md", `{"content":"x"}`, withCSRF); r.StatusCode != 200 {
			t.Errorf("write with cookie and CSRF = %d %s", r.StatusCode, body)
		}
		if r, body := call("GET", "/v1/dev/session", "", cookie); r.StatusCode != 200 || !strings.Contains(body, sess.CSRF) {
			t.Errorf("session info = %d %s, want the same CSRF value", r.StatusCode, body)
		}
		// Signing out is a write: without the CSRF header it is refused and
		// the session lives on; with it the session ends on the server, so
		// the old cookie (or a copy of it) no longer opens anything.
		if r, _ := call("DELETE", "/v1/dev/session", "", cookie); r.StatusCode != 403 {
			t.Errorf("sign-out without CSRF = %d, want 403", r.StatusCode)
		}
		if r, _ := call("GET", "/v1/dev/session", "", cookie); r.StatusCode != 200 {
			t.Errorf("a refused sign-out ended the session: %d", r.StatusCode)
		}
		if r, _ := call("DELETE", "/v1/dev/session", "", withCSRF); r.StatusCode != 204 {
			t.Errorf("sign-out = %d, want 204", r.StatusCode)
		}
		for _, path := range []string{"/v1/dev/session", "/v1/dev/runs", "/dev"} {
			if r, _ := call("GET", path, "", cookie); r.StatusCode != 401 {
				t.Errorf("%s with the signed-out cookie = %d, want 401", path, r.StatusCode)
			}
		}
		// The login form: a redirect to /dev with the cookie set.
		r, _ = call("POST", "/v1/dev/session", "token=look-token", map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/dev" || len(r.Cookies()) != 1 {
			t.Errorf("form sign-in = %d %s", r.StatusCode, r.Header.Get("Location"))
		}
		// The bearer still works, and needs no CSRF header.
		if r, _ := call("PUT", "/v1/dev/files/n.md", `{"content":"y"}`, map[string]string{"Authorization": "Bearer look-token"}); r.StatusCode != 200 {
			t.Errorf("bearer write = %d", r.StatusCode)
		}
	}
	off := newCockpit(t, api.Options{InspectOff: true, InspectToken: "t"}, false)
	if s, _ := do(t, "POST", off.url+"/v1/dev/session", `{"token":"t"}`, nil); s != 404 {
		t.Errorf("session with DELTA_INSPECT=off = %d, want 404", s)
	}
	open := newCockpit(t, api.Options{}, false)
	if s, _ := do(t, "POST", open.url+"/v1/dev/session", `{"token":"t"}`, nil); s != 400 {
		t.Errorf("session without an inspect token = %d, want 400", s)
	}
}

// otherThan is a, unless that is what s already is: a tampered value that
// is sure to differ from the real one.
func otherThan(s, a, b string) string {
	if s == a {
		return b
	}
	return a
}

// /v1/dev/stream redacts on read like every inspection route: the replay
// from the table and the live frames alike.
func TestDevStreamIsRedacted(t *testing.T) {
	c := newCockpit(t, api.Options{}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	frames := streamLines(t, ctx, c.url+"/v1/dev/stream")
	id := c.submit(t, "", "echo back: kb-secret-value-42 and sk-live0123456789abcdefXYZ")
	check := func(how string, lines []string) {
		t.Helper()
		all := strings.Join(lines, "\n")
		if strings.Contains(all, "kb-secret-value-42") || strings.Contains(all, "sk-live0123456789abcdefXYZ") {
			t.Fatalf("%s stream leaks a secret: %.600s", how, all)
		}
		if !strings.Contains(all, "[vault:KB_TOKEN]") || !strings.Contains(all, "event: run.finished") {
			t.Fatalf("%s stream lacks the redacted text or the run's end: %s", how, all)
		}
	}
	var live []string
	for done := false; !done; {
		select {
		case l, ok := <-frames:
			if !ok {
				t.Fatalf("live stream ended early: %v", live)
			}
			live = append(live, l)
			done = l == "event: run.finished"
		case <-ctx.Done():
			t.Fatalf("no run.finished on the live stream: %v", live)
		}
	}
	check("live", live)
	resp2, err := http.Get(c.url + "/v1/dev/stream?live=0&since=0&run=" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	check("replayed", strings.Split(string(body), "\n"))
}

// A directory named where a file is meant is the client's mistake: the
// answer is a 400 that says so, for a read and for a write alike, and the
// directory is left as it was.
func TestDevFilesDirectoryIsClientError(t *testing.T) {
	c := newCockpit(t, api.Options{InspectWrite: true}, false)
	if err := os.MkdirAll(filepath.Join(c.dir, "inbox", "2026-12-07"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ method, path, body string }{
		{"GET", "inbox/2026-12-07", ""},
		{"GET", "inbox", ""},
		{"PUT", "inbox", `{"content":"x"}`},
		{"PUT", "inbox/2026-12-07", `{"content":"x"}`},
	} {
		if s, m := do(t, tt.method, c.url+"/v1/dev/files/"+tt.path, tt.body, nil); s != 400 || !strings.Contains(errMessage(m), "is a directory") {
			t.Errorf("%s %s = %d %v, want 400 naming a directory", tt.method, tt.path, s, m)
		}
	}
	if fi, err := os.Stat(filepath.Join(c.dir, "inbox", "2026-12-07")); err != nil || !fi.IsDir() {
		t.Errorf("after the refused write the directory is %v, %v", fi, err)
	}
}

// A file over the 1 MiB cap is refused by its size, before it is read: a
// 256 MiB (sparse) file costs the daemon no more than a few MiB to refuse.
func TestDevFileSizeCheckedBeforeRead(t *testing.T) {
	c := newCockpit(t, api.Options{}, false)
	big := filepath.Join(c.dir, "big.log")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, m := do(t, "GET", c.url+"/v1/dev/files/big.log", "", nil)
	runtime.ReadMemStats(&after)
	if s != 413 || !strings.Contains(errMessage(m), "1 MiB") {
		t.Errorf("GET big.log = %d %v, want 413", s, m)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("refusing a 256 MiB file allocated %d MiB, want it refused before reading", grew>>20)
	}
	exact := strings.Repeat("a", 1<<20)
	if err := os.WriteFile(filepath.Join(c.dir, "exact.txt"), []byte(exact), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, m := do(t, "GET", c.url+"/v1/dev/files/exact.txt", "", nil); s != 200 || m["content"] != exact {
		t.Errorf("GET a file of exactly 1 MiB = %d, want 200 with its text", s)
	}
}

// A FIFO is refused without being opened: opening one with no writer
// blocks, and would hold the handler forever.
func TestDevFileFIFORefused(t *testing.T) {
	c := newCockpit(t, api.Options{}, false)
	if err := syscall.Mkfifo(filepath.Join(c.dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, m := do(t, "GET", c.url+"/v1/dev/files/pipe", "", nil); s != 400 || !strings.Contains(errMessage(m), "not a regular file") {
		t.Errorf("GET a FIFO = %d %v, want 400", s, m)
	}
}

// The operator's cancel reaches any owner's run, answers a finished run as
// it is, and an unknown id is a 404 in the error envelope.
func TestDevCancel(t *testing.T) {
	c := newCockpit(t, api.Options{InspectWrite: true}, false)
	id := c.submit(t, "alice", "task")
	if s, m := do(t, "POST", c.url+"/v1/dev/runs/"+id+"/cancel", "", nil); s != 200 || m["status"] != "done" {
		t.Errorf("cancel of alice's finished run = %d %v, want 200 done", s, m)
	}
	if s, m := do(t, "POST", c.url+"/v1/dev/runs/resp_nope/cancel", "", nil); s != 404 || errMessage(m) == "" {
		t.Errorf("cancel of an unknown run = %d %v, want 404", s, m)
	}
	ro := newCockpit(t, api.Options{}, false)
	if s, m := do(t, "POST", ro.url+"/v1/dev/runs/"+id+"/cancel", "", nil); s != 403 || !strings.Contains(errMessage(m), "DELTA_INSPECT_WRITE") {
		t.Errorf("cancel with writes off = %d %v, want 403", s, m)
	}
}
