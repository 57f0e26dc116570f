package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/vault"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfChild()
	if f := os.Getenv(envManagerChild); f != "" {
		runManagerChild(f)
	}
	os.Exit(m.Run())
}

const kbToken = "kb-s3cr3t/token+with&chars\"<x>"

// secrets is a fake vault: resolving registers the value for redaction,
// exactly as vault.Vault.Resolve does.
type secrets struct {
	red    *vault.Redactor
	mu     sync.Mutex
	values map[string]string
}

func newSecrets(kv ...string) *secrets {
	s := &secrets{red: vault.NewRedactor(), values: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.values[kv[i]] = kv[i+1]
	}
	return s
}

func (s *secrets) set(k, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[k] = v
}

func (s *secrets) resolve(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[name]
	if !ok {
		return "", vault.ErrNotFound
	}
	s.red.Register(name, v)
	return v, nil
}

func stdioServer(name string, env map[string]string) config.MCPServer {
	e := map[string]string{mcptest.EnvServe: "1"}
	for k, v := range env {
		e[k] = v
	}
	return config.MCPServer{Name: name, Transport: config.MCPStdio, Command: []string{os.Args[0], "-test.run=^$"}, Env: e}
}

func open(t *testing.T, o mcp.Options) *mcp.Manager {
	t.Helper()
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = 20 * time.Second // generous under -race; never asserted
	}
	m := mcp.New(o)
	if err := m.Open(t.Context()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func byName(t *testing.T, m *mcp.Manager) map[string]tool.Tool {
	t.Helper()
	out := map[string]tool.Tool{}
	for _, tl := range m.Tools() {
		out[tl.Spec().Name] = tl
	}
	return out
}

func call(t *testing.T, ctx context.Context, tools map[string]tool.Tool, name, args string) tool.Result {
	t.Helper()
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %s; have %d tools", name, len(tools))
	}
	res, err := tl.Run(ctx, tool.Call{CallID: "c1", Args: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: Run error: %v", name, err)
	}
	return res
}

// contract runs the checks both transports must pass.
func contract(t *testing.T, tools map[string]tool.Tool, server string) {
	t.Run("names", func(t *testing.T) {
		for _, want := range []string{"echo", "get_image", "get_structured", "fail", "create_note", "get_note"} {
			if _, ok := tools[server+"__"+want]; !ok {
				t.Errorf("tool %s__%s missing", server, want)
			}
		}
		for n := range tools {
			if strings.Contains(n, "lllll") {
				t.Errorf("unusable name %q was registered", n)
			}
		}
	})
	t.Run("dotted name offered with '_', called by its own", func(t *testing.T) {
		res := call(t, t.Context(), tools, server+"__notes_count", `{}`)
		if res.IsError || !strings.Contains(res.Text, "called as notes.count") {
			t.Errorf("%s__notes_count = %+v", server, res)
		}
	})
	t.Run("read-only classification", func(t *testing.T) {
		if !tools[server+"__get_note"].ReadOnly() || tools[server+"__create_note"].ReadOnly() {
			t.Errorf("get_note read-only=%v create_note read-only=%v", tools[server+"__get_note"].ReadOnly(), tools[server+"__create_note"].ReadOnly())
		}
	})
	t.Run("schema", func(t *testing.T) {
		var s map[string]any
		if err := json.Unmarshal(tools[server+"__echo"].Spec().Parameters, &s); err != nil || s["type"] != "object" || s["properties"] == nil {
			t.Errorf("echo schema = %s (%v)", tools[server+"__echo"].Spec().Parameters, err)
		}
	})
	cases := []struct {
		tool, args string
		isErr      bool
		want       []string
	}{
		{"echo", `{"text":"hi"}`, false, []string{"MCP result from server " + server + " (untrusted data):", "echo: hi"}},
		{"echo", `"{\"text\":\"as string\"}"`, false, []string{"echo: as string"}},
		{"get_image", `{}`, false, []string{"here is the image", "[image: image/png, 33 bytes"}},
		{"get_structured", `null`, false, []string{`{"items":[1,2,3],"url":"https://example.test/"}`}},
		{"fail", `{}`, true, []string{"error: MCP result from server " + server, "the backend said no"}},
		{"echo", `[1,2]`, true, []string{"invalid arguments", "JSON object"}},
		{"echo", `{}`, true, []string{"text"}}, // server-side validation failure, as an error result
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			res := call(t, t.Context(), tools, server+"__"+c.tool, c.args)
			if res.IsError != c.isErr {
				t.Errorf("IsError = %v, want %v; text %q", res.IsError, c.isErr, res.Text)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result %q lacks %q", res.Text, w)
				}
			}
		})
	}
}

func TestStdio(t *testing.T) {
	sec := newSecrets("KB_TOKEN", kbToken)
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{stdioServer("local", map[string]string{mcptest.EnvSecret: "{{vault:KB_TOKEN}}", "MODE": "test"})},
		Env:     map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/x", "LC_ALL": "C", "DELTA_CONTROL_TOKEN": "daemon-secret", "OPENAI_API_KEY": "sk-x"},
		Resolve: sec.resolve, Redact: sec.red.Redact,
	})
	tools := byName(t, m)
	contract(t, tools, "local")

	st := m.Status()
	if len(st) != 1 || !st[0].Connected || st[0].Transport != "stdio" || st[0].Tools != len(tools) || st[0].Dropped != 1 || st[0].Protocol == "" {
		t.Errorf("status = %+v (tools %d)", st, len(tools))
	}
	t.Run("child env is plumbing plus explicit env", func(t *testing.T) {
		res := call(t, t.Context(), tools, "local__list_env", `{}`)
		names := strings.Split(res.Text, "\n")[1:]
		want := []string{"HOME", "LC_ALL", "MCPTEST_SECRET", "MCPTEST_SERVE", "MODE", "PATH"}
		if !slices.Equal(names, want) {
			t.Errorf("child env names = %v, want %v", names, want)
		}
	})
	t.Run("vault value in env never reaches the model", func(t *testing.T) {
		res := call(t, t.Context(), tools, "local__get_secret", `{}`)
		if strings.Contains(res.Text, "s3cr3t") || !strings.Contains(res.Text, "secret=[vault:KB_TOKEN]") {
			t.Errorf("result = %q", res.Text)
		}
	})
}

func httpServer(t *testing.T, o mcptest.Options) (*mcptest.HTTP, *httptest.Server) {
	h := mcptest.NewHTTP(o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func TestHTTP(t *testing.T) {
	h, srv := httpServer(t, mcptest.Options{})
	sec := newSecrets("KB_TOKEN", kbToken)
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{{Name: "kb", Transport: config.MCPHTTP, URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer {{vault:KB_TOKEN}}"}}},
		Resolve: sec.resolve, Redact: sec.red.Redact,
	})
	tools := byName(t, m)
	contract(t, tools, "kb")
	if got := h.LastAuthorization(); got != "Bearer "+kbToken {
		t.Errorf("server saw Authorization %q, want the resolved vault value", got)
	}
	t.Run("echoed credential is redacted in every encoding", func(t *testing.T) {
		res := call(t, t.Context(), tools, "kb__whoami", `{}`)
		if !res.IsError || !strings.Contains(res.Text, "[vault:KB_TOKEN]") {
			t.Errorf("result = %q", res.Text)
		}
		if strings.Contains(res.Text, "s3cr3t") {
			t.Errorf("secret leaked: %q", res.Text)
		}
	})
	t.Run("run token replaces Authorization", func(t *testing.T) {
		res := call(t, mcp.WithRunToken(t.Context(), "user-tok"), tools, "kb__get_auth", `{}`)
		if !strings.HasSuffix(res.Text, "\nBearer user-tok") {
			t.Errorf("get_auth with run token = %q", res.Text)
		}
		res = call(t, t.Context(), tools, "kb__get_auth", `{}`)
		if !strings.HasSuffix(res.Text, "\nBearer [vault:KB_TOKEN]") {
			t.Errorf("get_auth without run token = %q", res.Text)
		}
	})
	t.Run("lost run token is refused, never replaced by the shared credential", func(t *testing.T) {
		call(t, mcp.WithRunToken(t.Context(), "user-tok"), tools, "kb__get_auth", `{}`)
		res := call(t, mcp.WithLostRunToken(t.Context()), tools, "kb__get_auth", `{}`)
		if !res.IsError || !strings.Contains(res.Text, "authToken") || !strings.Contains(res.Text, "submitted again") {
			t.Errorf("call with a lost run token = %+v, want a refusal that says to resubmit", res)
		}
		if got := h.LastAuthorization(); got != "Bearer user-tok" {
			t.Errorf("server saw Authorization %q after the refused call: the request went out", got)
		}
	})
}

func TestMissingCredentialThenRetry(t *testing.T) {
	_, srv := httpServer(t, mcptest.Options{})
	sec := newSecrets()
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{{Name: "kb", Transport: config.MCPHTTP, URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer {{vault:KB_TOKEN}}"}}},
		Resolve: sec.resolve, Redact: sec.red.Redact,
	})
	if n := len(m.Tools()); n != 0 {
		t.Fatalf("tools without credential = %d", n)
	}
	st := m.Status()[0]
	if st.Connected || st.WaitingFor != "KB_TOKEN" || !strings.Contains(st.Error, "KB_TOKEN") {
		t.Errorf("status = %+v", st)
	}
	sec.set("KB_TOKEN", kbToken)
	added := m.Retry(t.Context())
	if len(added) == 0 || len(m.Tools()) != len(added) || !m.Status()[0].Connected {
		t.Errorf("after the credential arrived: added %d, status %+v", len(added), m.Status()[0])
	}
}

func TestNoVaultFailsClosed(t *testing.T) {
	h, srv := httpServer(t, mcptest.Options{})
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{{Name: "kb", Transport: config.MCPHTTP, URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer {{vault:KB_TOKEN}}"}}},
	})
	if len(m.Tools()) != 0 || h.Requests.Load() != 0 {
		t.Errorf("tools %d, requests %d: a reference without a vault must fail closed before any request", len(m.Tools()), h.Requests.Load())
	}
	if st := m.Status()[0]; !strings.Contains(st.Error, "vault disabled") {
		t.Errorf("status error = %q", st.Error)
	}
}

func TestDeadServersDoNotBlockBoot(t *testing.T) {
	// A listener that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedURL := "http://" + closed.Addr().String() + "/mcp"
	closed.Close()

	m := open(t, mcp.Options{
		ConnectTimeout: 2 * time.Second,
		Servers: []config.MCPServer{
			{Name: "hang", Transport: config.MCPHTTP, URL: "http://" + ln.Addr().String() + "/mcp"},
			{Name: "refused", Transport: config.MCPHTTP, URL: closedURL},
			{Name: "nobin", Transport: config.MCPStdio, Command: []string{filepath.Join(t.TempDir(), "no-such-binary")}},
			{Name: "exits", Transport: config.MCPStdio, Command: []string{"/bin/sh", "-c", "exit 1"}},
			stdioServer("good", nil),
		},
		Env: map[string]string{"PATH": os.Getenv("PATH")},
	})
	for _, st := range m.Status() {
		if (st.Name == "good") != st.Connected {
			t.Errorf("%s: connected=%v err=%q", st.Name, st.Connected, st.Error)
		}
		if st.Name != "good" && st.Error == "" {
			t.Errorf("%s: no error reported", st.Name)
		}
	}
	tools := byName(t, m)
	if _, ok := tools["good__echo"]; !ok {
		t.Fatalf("the good server's tools are missing")
	}
	for n := range tools {
		if !strings.HasPrefix(n, "good__") {
			t.Errorf("tool %s from a dead server", n)
		}
	}
}

func TestManyTools(t *testing.T) {
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{stdioServer("big", map[string]string{mcptest.EnvTools: "300"})},
		Env:     map[string]string{"PATH": os.Getenv("PATH")},
	})
	tools := byName(t, m)
	gen := 0
	for n := range tools {
		if strings.HasPrefix(n, "big__gen_") {
			gen++
		}
	}
	if gen != 300 {
		t.Errorf("generated tools = %d, want 300", gen)
	}
	if r := call(t, t.Context(), tools, "big__gen_299", `{}`); r.IsError || !strings.HasSuffix(r.Text, "gen_299") {
		t.Errorf("gen_299 = %+v", r)
	}
}

func TestSessionExpiryReconnects(t *testing.T) {
	h, srv := httpServer(t, mcptest.Options{})
	m := open(t, mcp.Options{Servers: []config.MCPServer{{Name: "kb", Transport: config.MCPHTTP, URL: srv.URL}}})
	tools := byName(t, m)
	for i, name := range []string{"create_note", "get_note"} {
		if r := call(t, t.Context(), tools, "kb__"+name, `{"text":"a"}`); r.IsError {
			t.Fatalf("%s: %q", name, r.Text)
		}
		h.Expire() // the server forgets the session: the next call gets 404
		// A 404 proves the server never ran the call, so even a mutating
		// call is safe to send again on a fresh session.
		r := call(t, t.Context(), tools, "kb__"+name, `{"text":"b"}`)
		if r.IsError || !strings.Contains(r.Text, name+" #2") {
			t.Errorf("after expiry %d: %+v", i, r)
		}
		if got := h.Counters.Get(name); got != 2 {
			t.Errorf("%s ran %d times, want 2 (once per call, never replayed)", name, got)
		}
	}
	if st := m.Status()[0]; !st.Connected {
		t.Errorf("status after reconnect = %+v", st)
	}
}

func TestBrokenPipeNoReplay(t *testing.T) {
	crash := filepath.Join(t.TempDir(), "crashed")
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{stdioServer("local", map[string]string{mcptest.EnvCrashFile: crash})},
		Env:     map[string]string{"PATH": os.Getenv("PATH")},
	})
	tools := byName(t, m)

	// A mutating call dies with the child: in doubt, never replayed.
	r := call(t, t.Context(), tools, "local__crash_note", `{}`)
	if !r.IsError || !strings.Contains(r.Text, "[in doubt]") || !strings.Contains(r.Text, "verify") {
		t.Errorf("in-doubt mutating call = %+v", r)
	}
	if b, _ := os.ReadFile(crash); string(b) != "crash_note" {
		t.Fatalf("crash marker = %q", b)
	}
	// The server comes back for the next call.
	if r := call(t, t.Context(), tools, "local__crash_note", `{}`); r.IsError || !strings.Contains(r.Text, "crash_note survived") {
		t.Errorf("next call after respawn = %+v", r)
	}

	// A read-only call that dies with the child is re-run on a new child.
	if err := os.Remove(crash); err != nil {
		t.Fatal(err)
	}
	r = call(t, t.Context(), tools, "local__get_crash", `{}`)
	if r.IsError || !strings.Contains(r.Text, "get_crash survived") {
		t.Errorf("read-only call after crash = %+v", r)
	}
	if b, _ := os.ReadFile(crash); string(b) != "get_crash" {
		t.Errorf("crash marker = %q: the first attempt should have crashed", b)
	}
}

func TestCallCeiling(t *testing.T) {
	m := open(t, mcp.Options{
		Servers:     []config.MCPServer{stdioServer("local", nil)},
		Env:         map[string]string{"PATH": os.Getenv("PATH")},
		CallTimeout: 200 * time.Millisecond,
	})
	tools := byName(t, m)
	r := call(t, t.Context(), tools, "local__slow", `{}`)
	if !r.IsError || !strings.Contains(r.Text, "no answer within its time limit") {
		t.Errorf("slow = %+v", r)
	}
	if r := call(t, t.Context(), tools, "local__echo", `{"text":"still alive"}`); r.IsError {
		t.Errorf("server unusable after a timed-out call: %+v", r)
	}
}

func TestReadOnlyName(t *testing.T) {
	cases := map[string]bool{
		"get_account": true, "list": true, "search_docs": true, "read.file": true, "version": true, "get_versions": true,
		"file_upload": true, "Get_Thing": true, "get_or_create": true, "docs.search": true,
		"create_note": false, "propose_change": false, "getter": false, "target": false, "budget": false, "update_file_x": true,
		"": false, "delete": false, "listing": false, "__": false,
	}
	for name, want := range cases {
		if got := mcp.ReadOnlyName(name); got != want {
			t.Errorf("ReadOnlyName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestToolName(t *testing.T) {
	cases := []struct {
		server, tool, name string
		ok                 bool
	}{
		{"crm", "get_account", "crm__get_account", true},
		{"crm", "get-account", "crm__get-account", true},
		{"crm", "get.account", "crm__get_account", true}, // MCP servers often namespace with dots
		{"crm", "repo/list", "crm__repo_list", true},
		{"crm", "get account", "crm__get_account", true},
		{"crm", "ünïcode", "crm___n_code", true},
		{"crm", "", "crm__", false},
		{"crm", strings.Repeat("x", 59), "crm__" + strings.Repeat("x", 59), true},  // 64, the most OpenAI takes
		{"crm", strings.Repeat("x", 60), "crm__" + strings.Repeat("x", 60), false}, // 65: every request offering it would be refused
	}
	for _, c := range cases {
		name, ok := mcp.ToolName(c.server, c.tool)
		if ok != c.ok || name != c.name {
			t.Errorf("ToolName(%q, %q) = %q, %v; want %q, %v", c.server, c.tool, name, ok, c.name, c.ok)
		}
	}
}

func FuzzToolName(f *testing.F) {
	for _, s := range []string{"get", "a b", "x.y", "", strings.Repeat("z", 200), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, ok := mcp.ToolName("srv", s)
		if ok && (len(name) > mcp.MaxToolName || strings.ContainsAny(name, " .\n")) {
			t.Errorf("accepted %q", name)
		}
		_ = mcp.ReadOnlyName(s)
	})
}

// oauth is a fake token endpoint and the bearer check of the MCP server it
// protects: each grant spends the refresh token and issues a new pair.
type oauth struct {
	mu      sync.Mutex
	refresh string // the only refresh token accepted
	access  string // the only access token the MCP server accepts
	grants  atomic.Int32
	n       int
}

func (o *oauth) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("client_id") != "delta-agent" {
		http.Error(w, "bad grant", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if r.Form.Get("refresh_token") != o.refresh {
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	o.grants.Add(1)
	o.n++
	o.refresh, o.access = fmt.Sprintf("r%d", o.n), fmt.Sprintf("a%d", o.n)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": o.access, "refresh_token": o.refresh, "token_type": "Bearer", "expires_in": 60})
}

func (o *oauth) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		ok := r.Header.Get("Authorization") == "Bearer "+o.access || r.Header.Get("Authorization") == "Bearer user-tok"
		o.mu.Unlock()
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (o *oauth) expire() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.access = "expired"
}

func TestRefreshRotation(t *testing.T) {
	o := &oauth{refresh: "r0", access: "none-yet"}
	tokenSrv := httptest.NewServer(http.HandlerFunc(o.token))
	t.Cleanup(tokenSrv.Close)
	h := mcptest.NewHTTP(mcptest.Options{})
	mcpSrv := httptest.NewServer(o.guard(h))
	t.Cleanup(mcpSrv.Close)
	file := filepath.Join(t.TempDir(), "refresh-token")

	m := open(t, mcp.Options{
		Servers: []config.MCPServer{{Name: "crm", Transport: config.MCPHTTP, URL: mcpSrv.URL}},
		Refresh: &config.MCPRefresh{URL: tokenSrv.URL, File: file, Server: "crm", ClientID: "delta-agent", Token: "r0"},
	})
	if st := m.Status()[0]; !st.Connected {
		t.Fatalf("boot: %+v", st)
	}
	fileIs := func(want string) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("refresh file = %q (%v), want %q", b, err, want)
		}
		if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 1 {
			t.Errorf("leftover temp files: %v", ents)
		}
	}
	if o.grants.Load() != 1 {
		t.Errorf("grants at boot = %d, want 1 (seeded file, one rotation)", o.grants.Load())
	}
	fileIs("r1")

	// The access token expires; concurrent calls all get 401 and share one rotation.
	o.expire()
	tools := byName(t, m)
	var wg sync.WaitGroup
	results := make([]tool.Result, 8)
	for i := range results {
		wg.Go(func() { results[i] = call(t, t.Context(), tools, "crm__get_note", `{"text":"x"}`) })
	}
	wg.Wait()
	for i, r := range results {
		if r.IsError {
			t.Errorf("call %d after expiry: %q", i, r.Text)
		}
	}
	if g := o.grants.Load(); g != 2 {
		t.Errorf("grants after concurrent 401s = %d, want 2 (one coalesced rotation)", g)
	}
	fileIs("r2")

	// A per-run token that is refused is not answered by rotating.
	o.expire()
	r := call(t, mcp.WithRunToken(t.Context(), "bad-user-tok"), tools, "crm__get_note", `{"text":"x"}`)
	if !r.IsError || !strings.Contains(r.Text, "401") {
		t.Errorf("run-token 401 = %+v", r)
	}
	if g := o.grants.Load(); g != 2 {
		t.Errorf("grants after a run-token 401 = %d, want still 2", g)
	}
}

// A token endpoint that redirects never gets the refresh token forwarded:
// a 307 would repeat the POST, the token in its body, to wherever it
// points. The grant fails naming the redirect instead.
func TestRefreshGrantFollowsNoRedirect(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		leaked.Store(r.Form.Get("refresh_token"))
		http.Error(w, "no", http.StatusBadRequest)
	}))
	t.Cleanup(elsewhere.Close)
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/token", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(tokenSrv.Close)
	o := &oauth{refresh: "r0", access: "none-yet"}
	mcpSrv := httptest.NewServer(o.guard(mcptest.NewHTTP(mcptest.Options{})))
	t.Cleanup(mcpSrv.Close)

	m := open(t, mcp.Options{
		Servers: []config.MCPServer{{Name: "crm", Transport: config.MCPHTTP, URL: mcpSrv.URL}},
		Refresh: &config.MCPRefresh{URL: tokenSrv.URL, File: filepath.Join(t.TempDir(), "refresh-token"), Server: "crm", ClientID: "delta-agent", Token: "r0-secret"},
	})
	if v := leaked.Load().(string); v != "" {
		t.Errorf("the redirect target received the refresh token %q", v)
	}
	st := m.Status()[0]
	if st.Connected || !strings.Contains(st.Error, "redirect") {
		t.Errorf("status = %+v, want not connected, naming the redirect", st)
	}
}
