package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/tool"
)

// logBuf collects a Manager's log lines, for what an operator would read.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// rogueServer is a stdio entry for the misbehaving peer (mcptest.EnvRogue).
func rogueServer(name, modes string, env map[string]string) config.MCPServer {
	e := map[string]string{mcptest.EnvRogue: modes}
	for k, v := range env {
		e[k] = v
	}
	return stdioServer(name, e)
}

// A server that redirects elsewhere never gets Delta to hand its
// credentials to the other host; a redirect within its own origin is
// followed as before.
func TestRedirectToAnotherOriginKeepsCredentials(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, k := r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"); a != "" || k != "" {
			leaked.Store(a + " " + k)
		}
		mcptest.NewHTTP(mcptest.Options{}).ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	h := mcptest.NewHTTP(mcptest.Options{})
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/mcp", http.StatusPermanentRedirect)
		default:
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(home.Close)
	sec := newSecrets("KB_TOKEN", kbToken)
	headers := map[string]string{"Authorization": "Bearer {{vault:KB_TOKEN}}", "X-Api-Key": "literal-api-key"}
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{
			{Name: "away", Transport: config.MCPHTTP, URL: home.URL + "/away", Headers: headers},
			{Name: "moved", Transport: config.MCPHTTP, URL: home.URL + "/moved", Headers: headers},
		},
		Resolve: sec.resolve, Redact: sec.red.Redact,
	})
	if got := leaked.Load().(string); got != "" {
		t.Errorf("the other host received the credentials %q", got)
	}
	st := m.Status()
	if st[0].Connected || !strings.Contains(st[0].Error, "redirected to another origin") || !strings.Contains(st[0].Error, other.URL[len("http://"):]) {
		t.Errorf("away status = %+v, want not connected, naming the redirect and its target", st[0])
	}
	if !st[1].Connected {
		t.Errorf("moved status = %+v: a same-origin redirect must still be followed", st[1])
	}
	tools := byName(t, m)
	if _, ok := tools["away__echo"]; ok {
		t.Error("the redirected server's tools were registered")
	}
	if r := call(t, t.Context(), tools, "moved__get_auth", `{}`); r.IsError || !strings.HasSuffix(r.Text, "Bearer [vault:KB_TOKEN]") {
		t.Errorf("moved__get_auth = %+v", r)
	}
}

// pidsIn reads the pids a rogue peer (and its grandchildren) recorded.
func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file holds %q", b)
		}
		out = append(out, n)
	}
	return out
}

// Close while a call waits on a server that never answers: Close returns
// at once instead of after the call's ceiling, the call says the daemon is
// shutting down, and no later call starts the server again.
func TestCloseEndsCallsInFlight(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	m := mcp.New(mcp.Options{
		Servers:        []config.MCPServer{rogueServer("r", "plain", map[string]string{mcptest.EnvRoguePIDFile: pids})},
		Env:            map[string]string{"PATH": os.Getenv("PATH")},
		ConnectTimeout: 20 * time.Second, CallTimeout: 30 * time.Second,
	})
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	tools := byName(t, m)
	started := len(pidsIn(t, pids))
	got := make(chan tool.Result, 1)
	go func() { got <- call(t, context.Background(), tools, "r__get_hang", `{}`) }()
	time.Sleep(100 * time.Millisecond) // let the call reach the server
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s with a call in flight, want well under the 30 s call ceiling", d)
	}
	select {
	case r := <-got:
		if !r.IsError || !strings.Contains(r.Text, "shutting down") {
			t.Errorf("call in flight at Close = %+v, want an error saying the daemon is shutting down", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight did not return after Close")
	}
	if r := call(t, context.Background(), tools, "r__echo", `{"text":"late"}`); !r.IsError || !strings.Contains(r.Text, "shutting down") {
		t.Errorf("call after Close = %+v, want a refusal", r)
	}
	if n := len(pidsIn(t, pids)); n != started {
		t.Errorf("servers started: %d before Close, %d after: a call after Close started one", started, n)
	}
}

// envManagerChild makes the test binary a daemon stand-in: it opens a
// Manager with a stdio server deaf to stdin EOF and SIGTERM, whose pid it
// appends to the file the variable names, says "ready" and waits to be
// killed.
const envManagerChild = "MCP_TEST_MANAGER_CHILD"

func runManagerChild(pidFile string) {
	m := mcp.New(mcp.Options{
		Servers:        []config.MCPServer{rogueServer("deaf", mcptest.RogueDeaf, map[string]string{mcptest.EnvRoguePIDFile: pidFile})},
		Env:            map[string]string{"PATH": os.Getenv("PATH")},
		ConnectTimeout: 20 * time.Second,
	})
	if err := m.Open(context.Background()); err != nil || !m.Status()[0].Connected {
		fmt.Println("open failed:", err, m.Status())
		os.Exit(1)
	}
	fmt.Println("ready")
	select {}
}

// A daemon killed with SIGKILL runs no stop sequence, yet its stdio
// servers do not outlive it: each is killed with its parent, even one that
// ignores its closed stdin and SIGTERM.
func TestStdioServerDiesWithTheDaemon(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envManagerChild+"="+pids)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("daemon stand-in said %q, %v", line, err)
	}
	server := pidsIn(t, pids)
	if len(server) != 1 || !alive(server[0]) {
		t.Fatalf("server pids %v", server)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(3 * time.Second)
	for alive(server[0]) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(server[0]) {
		t.Errorf("stdio server %d still running after its daemon was killed", server[0])
		_ = syscall.Kill(server[0], syscall.SIGKILL)
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state …: a zombie has exited and only waits to be reaped.
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// Stopping a stdio server stops everything it started, even a server deaf
// to stdin EOF and SIGTERM whose helper holds its pipes: Close returns
// after the stop sequence, and no process of the server is left running.
func TestStdioStopLeavesNoProcess(t *testing.T) {
	defer mcp.SetTerminateAfter(200 * time.Millisecond)()
	dir := t.TempDir()
	politePIDs, deafPIDs := filepath.Join(dir, "polite"), filepath.Join(dir, "deaf")
	m := mcp.New(mcp.Options{
		Servers: []config.MCPServer{
			rogueServer("polite", mcptest.RogueGrandchild, map[string]string{mcptest.EnvRoguePIDFile: politePIDs}),
			rogueServer("deaf", mcptest.RogueDeaf+","+mcptest.RogueGrandchild, map[string]string{mcptest.EnvRoguePIDFile: deafPIDs}),
		},
		Env:            map[string]string{"PATH": os.Getenv("PATH")},
		ConnectTimeout: 20 * time.Second,
	})
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, st := range m.Status() {
		if !st.Connected {
			t.Fatalf("%s: %+v", st.Name, st)
		}
	}
	pids := append(pidsIn(t, politePIDs), pidsIn(t, deafPIDs)...)
	if len(pids) != 4 {
		t.Fatalf("pids %v, want each server and its helper", pids)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %s; the stop sequence is three steps of 200 ms", d)
	} else if d < 400*time.Millisecond {
		t.Errorf("Close took %s: the deaf peer stopped before SIGKILL, so this test proves nothing", d)
	}
	// A killed process takes a moment to go; it must not take long.
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d still running after Close", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// An answer past MaxMessageBytes is refused on either transport, at once
// rather than at the call's ceiling and without buffering it all, and the
// call is not repeated, read-only or not: the same call would bring the
// same answer. The model is told how to get a result; the server works for
// the next call.
func TestTooLargeAnswerRefused(t *testing.T) {
	var calls atomic.Int32
	h := mcptest.NewHTTP(mcptest.Options{})
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) || bytes.Contains(body, []byte(`"echo"`)) {
			h.ServeHTTP(w, r)
			return
		}
		calls.Add(1)
		// An answer that starts and never ends: 64 MiB of padding, then
		// silence until the client goes away.
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`)
		pad := bytes.Repeat([]byte(" "), 1<<16)
		for range 1024 {
			if _, err := w.Write(pad); err != nil {
				return
			}
		}
		<-r.Context().Done()
	}))
	t.Cleanup(endless.Close)
	pids := filepath.Join(t.TempDir(), "pids")
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{
			{Name: "web", Transport: config.MCPHTTP, URL: endless.URL},
			rogueServer("local", "plain", map[string]string{mcptest.EnvRogueHugeBytes: strconv.Itoa(mcp.MaxMessageBytes + 1), mcptest.EnvRoguePIDFile: pids}),
			rogueServer("roomy", "plain", map[string]string{mcptest.EnvRogueHugeBytes: strconv.Itoa(mcp.MaxMessageBytes - 1024)}),
		},
		Env:         map[string]string{"PATH": os.Getenv("PATH")},
		CallTimeout: 20 * time.Second,
	})
	tools := byName(t, m)
	for _, c := range []struct{ tool, again string }{{"web__get_note", "web__echo"}, {"local__get_huge", "local__echo"}} {
		start := time.Now()
		r := call(t, t.Context(), tools, c.tool, `{"text":"x"}`)
		if !r.IsError || !strings.Contains(r.Text, "larger than 16 MiB") || !strings.Contains(r.Text, "asking for less") {
			t.Errorf("%s = %.300q, want a refusal naming the limit and how to ask for less", c.tool, r.Text)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %s: the refusal waited for the call's ceiling", c.tool, d)
		}
		if r := call(t, t.Context(), tools, c.again, `{"text":"still here"}`); r.IsError || !strings.Contains(r.Text, "still here") {
			t.Errorf("%s after the refusal = %+v", c.again, r)
		}
	}
	if r := call(t, t.Context(), tools, "roomy__get_huge", `{}`); r.IsError || len(r.Text) < mcp.MaxMessageBytes-1024 {
		t.Errorf("an answer just under the limit = %d bytes, error %v: %.200q", len(r.Text), r.IsError, r.Text)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the HTTP call ran %d times, want 1: it was repeated", n)
	}
	// One child for get_huge, one more for the echo after it; a repeat of
	// get_huge would have started another in between.
	if n := len(pidsIn(t, pids)); n != 2 {
		t.Errorf("stdio children started: %d, want 2", n)
	}
}

// A tool whose input schema a model API would refuse (or that would cost
// every request a fortune) is dropped with a warning naming it and why,
// since one such definition fails every request it is offered in; the
// server's other tools stay, and an overlong description is clipped.
func TestUnusableSchemasDropped(t *testing.T) {
	var logs logBuf
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{rogueServer("odd", mcptest.RogueSchemas, nil)},
		Env:     map[string]string{"PATH": os.Getenv("PATH")},
		Logger:  logs.logger(),
	})
	tools := byName(t, m)
	dropped := []string{"string_schema", "array_schema", "bad_properties", "bad_required", "huge_schema"}
	for _, n := range dropped {
		if _, ok := tools["odd__"+n]; ok {
			t.Errorf("odd__%s registered: %.200s", n, tools["odd__"+n].Spec().Parameters)
		}
		if !strings.Contains(logs.String(), "tool="+n) {
			t.Errorf("no log line names the dropped %s", n)
		}
	}
	if st := m.Status()[0]; st.Dropped != len(dropped) || st.Tools != len(tools) {
		t.Errorf("status = %+v, want %d dropped and %d tools", st, len(dropped), len(tools))
	}
	for _, n := range append(slices.Clone(mcptest.RogueTools), "ok_no_props", "huge_description") {
		tl, ok := tools["odd__"+n]
		if !ok {
			t.Errorf("odd__%s missing", n)
			continue
		}
		sp := tl.Spec()
		var s map[string]any
		if err := json.Unmarshal(sp.Parameters, &s); err != nil || s["type"] != "object" || s["properties"] == nil {
			t.Errorf("%s parameters = %s (%v)", sp.Name, sp.Parameters, err)
		}
		if len(sp.Description) > mcp.MaxDescriptionBytes+len("…") {
			t.Errorf("%s description is %d bytes", sp.Name, len(sp.Description))
		}
	}
}

// Two servers whose tools end up with the same full name: the first
// configured keeps it, the other is dropped and counted, so the registry
// never holds two tools under one name (or silently the wrong one).
func TestSameFullNameAcrossServers(t *testing.T) {
	var logs logBuf
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{
			rogueServer("crm", "plain", map[string]string{mcptest.EnvRogueExtra: "notes__get"}),
			rogueServer("crm__notes", "plain", map[string]string{mcptest.EnvRogueExtra: "get"}),
		},
		Env:    map[string]string{"PATH": os.Getenv("PATH")},
		Logger: logs.logger(),
	})
	var names []string
	for _, tl := range m.Tools() {
		names = append(names, tl.Spec().Name)
	}
	if n := strings.Count(strings.Join(names, " ")+" ", "crm__notes__get "); n != 1 {
		t.Fatalf("crm__notes__get listed %d times in %v", n, names)
	}
	tool.NewRegistry().Add(m.Tools()...) // panics on a duplicate name
	if r := call(t, t.Context(), byName(t, m), "crm__notes__get", `{"text":"x"}`); r.IsError || !strings.Contains(r.Text, "from server crm (") {
		t.Errorf("crm__notes__get = %+v, want the first configured server's tool", r)
	}
	st := m.Status()
	if st[0].Dropped != 0 || st[1].Dropped != 1 || st[1].Tools != len(mcptest.RogueTools) {
		t.Errorf("status = %+v, want the second server's tool counted as dropped", st)
	}
	if l := logs.String(); !strings.Contains(l, "same full name") || !strings.Contains(l, "kept_from=crm") {
		t.Errorf("no warning names the collision:\n%s", l)
	}
}

// A server that never answers initialize is reported, at boot as on a
// reconnect, as not answering within the connect timeout, not as a bare
// "context deadline exceeded".
func TestBootTimeoutSaysNoAnswer(t *testing.T) {
	m := open(t, mcp.Options{
		Servers:        []config.MCPServer{rogueServer("mute", mcptest.RogueSilent, nil)},
		Env:            map[string]string{"PATH": os.Getenv("PATH")},
		ConnectTimeout: 300 * time.Millisecond,
	})
	if st := m.Status()[0]; st.Connected || !strings.Contains(st.Error, "no answer to initialize within 300ms") {
		t.Errorf("status = %+v", st)
	}
}

// When a stdio server's connection fails, the status and the log say why
// in the server's own terms: its exit status and its last stderr lines
// (redacted). A line on stdout that is not a protocol message is skipped
// and logged, not a failure.
func TestStdioFailureSaysWhy(t *testing.T) {
	var logs logBuf
	sec := newSecrets("KB_TOKEN", kbToken)
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{
			{Name: "exits", Transport: config.MCPStdio, Env: map[string]string{"TOKEN": "{{vault:KB_TOKEN}}"},
				Command: []string{"/bin/sh", "-c", `echo "starting" >&2; echo "fatal: token $TOKEN rejected" >&2; exit 3`}},
			rogueServer("banner", mcptest.RogueBanner, nil),
			rogueServer("crashy", "plain", nil),
		},
		Env:     map[string]string{"PATH": os.Getenv("PATH")},
		Resolve: sec.resolve, Redact: sec.red.Redact,
		Logger: logs.logger(),
	})
	st := m.Status()
	for _, want := range []string{"exit status 3", `its last stderr: "starting" "fatal: token [vault:KB_TOKEN] rejected"`} {
		if !strings.Contains(st[0].Error, want) {
			t.Errorf("exits: status error %q lacks %q", st[0].Error, want)
		}
	}
	// A server that prints a banner and debug lines on stdout still
	// serves: those lines are skipped, and the log names the first.
	if !st[1].Connected {
		t.Errorf("banner: status %+v, want connected", st[1])
	}
	if r := call(t, t.Context(), byName(t, m), "banner__echo", `{"text":"through the noise"}`); r.IsError || !strings.Contains(r.Text, "through the noise") {
		t.Errorf("banner__echo = %+v", r)
	}
	if l := logs.String(); !strings.Contains(l, `not a JSON-RPC message; skipped`) || !strings.Contains(l, "Weather MCP server v0.1 listening on stdio") {
		t.Errorf("no log line names the skipped banner:\n%s", l)
	}
	r := call(t, t.Context(), byName(t, m), "crashy__exit_now", `{}`)
	if !r.IsError || !strings.Contains(r.Text, "[in doubt]") {
		t.Errorf("exit_now = %+v", r)
	}
	if st := m.Status()[2]; !strings.Contains(st.Error, "exit status 4") {
		t.Errorf("crashy: status after the crash = %+v, want its exit status", st)
	}
	l := logs.String()
	if !strings.Contains(l, "exit status 4") || !strings.Contains(l, "mcp_server=crashy") {
		t.Errorf("no log line gives crashy's exit status:\n%s", l)
	}
	if strings.Contains(l, "s3cr3t") || strings.Contains(fmt.Sprint(m.Status()), "s3cr3t") {
		t.Error("the vault value reached a log line or the status")
	}
}

// A server that writes its answer and exits at once still has its answer
// read: the exit must not close stdout under the unread bytes. The next
// read-only call starts it again and works (a mutating one may have been
// written to the dying process, and is then reported in doubt).
func TestAnswerBeforeExitIsRead(t *testing.T) {
	var servers []config.MCPServer
	for i := range 8 {
		servers = append(servers, rogueServer(fmt.Sprintf("brief%d", i), mcptest.RogueExitListed, map[string]string{mcptest.EnvRogueExtra: "get_text"}))
	}
	m := open(t, mcp.Options{Servers: servers, Env: map[string]string{"PATH": os.Getenv("PATH")}})
	for _, st := range m.Status() {
		if st.Tools != len(mcptest.RogueTools)+1 {
			t.Errorf("%s: %+v, want its tools listed", st.Name, st)
		}
	}
	if r := call(t, t.Context(), byName(t, m), "brief0__get_text", `{"text":"again"}`); r.IsError || !strings.Contains(r.Text, "again") {
		t.Errorf("brief0__get_text = %+v", r)
	}
}

// Credentials written literally in a server's entry (not as vault
// references) are scrubbed like vault values from everything the server
// makes Delta show: results, errors, the status and log lines. And a vault
// value a server echoes in an error body never reaches a log line either.
func TestLiteralCredentialsNeverShown(t *testing.T) {
	const bearer, apiKey, envSecret = "literal-bearer-0123456789", "literal-key-abcdefgh", "plain-env-secret-123"
	var logs logBuf
	h := mcptest.NewHTTP(mcptest.Options{})
	var refuse atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			// A 401 whose JSON-RPC error quotes the credentials it got.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32001,
				"message": "token " + r.Header.Get("Authorization") + " / " + r.Header.Get("X-Vault-Key") + " / " + r.Header.Get("X-Api-Key") + " refused"}})
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	sec := newSecrets("KB_TOKEN", kbToken)
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{
			{Name: "kb", Transport: config.MCPHTTP, URL: srv.URL, Headers: map[string]string{
				"Authorization": "Bearer " + bearer, "X-Api-Key": apiKey, "X-Vault-Key": "{{vault:KB_TOKEN}}", "Accept-Language": "en-US,en"}},
			stdioServer("local", map[string]string{mcptest.EnvSecret: envSecret, mcptest.EnvRogue: "", "MODE": "production"}),
			rogueServer("noisy", mcptest.RogueEchoEnvToErr, map[string]string{mcptest.EnvSecret: envSecret}),
		},
		Env:     map[string]string{"PATH": os.Getenv("PATH")},
		Resolve: sec.resolve, Redact: sec.red.Redact,
		Logger: logs.logger(),
	})
	tools := byName(t, m)
	var shown []string
	r := call(t, t.Context(), tools, "kb__whoami", `{}`)
	if !strings.Contains(r.Text, "[mcp:kb header Authorization]") {
		t.Errorf("whoami = %q, want the credential's marker", r.Text)
	}
	shown = append(shown, r.Text)
	r = call(t, t.Context(), tools, "local__get_secret", `{}`)
	if !strings.Contains(r.Text, "secret=[mcp:local env "+mcptest.EnvSecret+"]") {
		t.Errorf("get_secret = %q, want the env value's marker", r.Text)
	}
	shown = append(shown, r.Text)
	refuse.Store(true)
	r = call(t, t.Context(), tools, "kb__get_note", `{"text":"x"}`)
	if !r.IsError {
		t.Errorf("get_note on a refusing server = %+v", r)
	}
	shown = append(shown, r.Text, fmt.Sprint(m.Status()), logs.String())
	for _, s := range shown {
		for _, secret := range []string{bearer, apiKey, envSecret, "s3cr3t"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q shown in:\n%.2000s", secret, s)
			}
		}
	}
	if !strings.Contains(logs.String(), "starting with token [mcp:noisy env "+mcptest.EnvSecret+"]") {
		t.Errorf("the stderr line is missing or not scrubbed:\n%.3000s", logs.String())
	}
	// Ordinary values stay readable.
	if r := call(t, t.Context(), tools, "local__echo", `{"text":"production en-US,en"}`); !strings.Contains(r.Text, "production en-US,en") {
		t.Errorf("echo = %q: a non-credential value was scrubbed", r.Text)
	}
}

// An HTTP error status with no JSON-RPC error in its body reaches the model
// as that status, with what to do: a 500 leaves a mutating call in doubt,
// a 503 is a call that did not run, a refused credential is not retried.
// The server works again once it recovers.
func TestHTTPErrorStatusReachesTheModel(t *testing.T) {
	h := mcptest.NewHTTP(mcptest.Options{})
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if code := int(status.Load()); code != 0 && bytes.Contains(body, []byte(`"tools/call"`)) {
			http.Error(w, "<html>upstream error</html>", code)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	m := open(t, mcp.Options{Servers: []config.MCPServer{{Name: "kb", Transport: config.MCPHTTP, URL: srv.URL}}})
	tools := byName(t, m)
	cases := []struct {
		code        int
		tool        string
		want, avoid []string
	}{
		{500, "create_note", []string{"HTTP 500 Internal Server Error to create_note", "may or may not have taken effect"}, []string{"rejected by transport"}},
		{500, "get_note", []string{"HTTP 500 Internal Server Error to get_note", "Try again later"}, []string{"taken effect"}},
		{503, "create_note", []string{"HTTP 503 Service Unavailable to create_note twice", "did not run"}, []string{"rejected by transport"}},
		{401, "get_note", []string{"401 unauthorized", "Retrying will not help"}, nil},
	}
	for _, c := range cases {
		status.Store(int32(c.code))
		r := call(t, t.Context(), tools, "kb__"+c.tool, `{"text":"x"}`)
		if !r.IsError {
			t.Errorf("%d %s: not an error: %q", c.code, c.tool, r.Text)
		}
		for _, w := range c.want {
			if !strings.Contains(r.Text, w) {
				t.Errorf("%d %s: %q lacks %q", c.code, c.tool, r.Text, w)
			}
		}
		for _, w := range c.avoid {
			if strings.Contains(r.Text, w) {
				t.Errorf("%d %s: %q says %q", c.code, c.tool, r.Text, w)
			}
		}
	}
	status.Store(0)
	if r := call(t, t.Context(), tools, "kb__get_note", `{"text":"x"}`); r.IsError {
		t.Errorf("after recovery: %+v", r)
	}
}

// A server flooding its stderr stays usable and does not flood the log:
// its lines are logged up to a rate, and the rest counted.
func TestStderrFloodIsRateLimited(t *testing.T) {
	var logs logBuf
	m := mcp.New(mcp.Options{
		Servers:        []config.MCPServer{rogueServer("chatty", mcptest.RogueStderrFlood, nil)},
		Env:            map[string]string{"PATH": os.Getenv("PATH")},
		Logger:         logs.logger(),
		ConnectTimeout: 20 * time.Second,
	})
	start := time.Now()
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := call(t, t.Context(), byName(t, m), "chatty__echo", `{"text":"heard"}`); r.IsError || !strings.Contains(r.Text, "heard") {
		t.Errorf("echo = %+v", r)
	}
	time.Sleep(100 * time.Millisecond) // the flood goes on
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	seconds := int(time.Since(start)/time.Second) + 1
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(logs.String(), "stderr lines not logged") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	l := logs.String()
	if n := strings.Count(l, `msg="mcp server stderr"`); n > 100*seconds {
		t.Errorf("%d stderr lines logged in about %d s", n, seconds)
	}
	if !strings.Contains(l, "stderr lines not logged") {
		t.Error("no line counts the stderr lines not logged")
	}
}

// A server that went away is reported as down, with what the model can
// do. Calls during the pause after a failed reconnection are answered at
// once, saying when the next attempt is, and try nothing; the pause grows
// with each failure in a row. Once the server is back, the first call
// after the pause reconnects and works.
func TestServerDownThenBack(t *testing.T) {
	defer mcp.SetRetryPause(300 * time.Millisecond)()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	first := &http.Server{Handler: mcptest.NewHTTP(mcptest.Options{})}
	first.SetKeepAlivesEnabled(false) // the next call dials, as after a real restart
	go func() { _ = first.Serve(ln) }()
	back := mcptest.NewHTTP(mcptest.Options{})
	second := &http.Server{Handler: back}
	t.Cleanup(func() { _ = second.Close() }) // after the Manager's Close
	m := open(t, mcp.Options{Servers: []config.MCPServer{{Name: "kb", Transport: config.MCPHTTP, URL: "http://" + addr + "/mcp"}}})
	tools := byName(t, m)
	if r := call(t, t.Context(), tools, "kb__create_note", `{"text":"a"}`); r.IsError {
		t.Fatalf("create_note while up: %+v", r)
	}
	_ = first.Close()
	r := call(t, t.Context(), tools, "kb__create_note", `{"text":"b"}`)
	for _, w := range []string{"MCP server kb is not connected", "connection refused", "create_note did not run", "try again later"} {
		if !strings.Contains(r.Text, w) {
			t.Errorf("call while down = %q, lacks %q", r.Text, w)
		}
	}
	if st := m.Status()[0]; st.Connected || !strings.Contains(st.Error, "connection refused") {
		t.Errorf("status while down = %+v", st)
	}
	r = call(t, t.Context(), tools, "kb__create_note", `{"text":"b"}`)
	if p := pauseIn(r.Text, 1); p <= 0 || p > 300*time.Millisecond || !strings.Contains(r.Text, "connection refused") {
		t.Errorf("call during the pause = %q, want the pause and the last failure", r.Text)
	}
	time.Sleep(350 * time.Millisecond)
	r = call(t, t.Context(), tools, "kb__create_note", `{"text":"b"}`) // tries, fails: the pause doubles
	if r = call(t, t.Context(), tools, "kb__create_note", `{"text":"b"}`); pauseIn(r.Text, 2) <= 300*time.Millisecond {
		t.Errorf("call after a second failure = %q, want a doubled pause", r.Text)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	go func() { _ = second.Serve(ln) }()
	time.Sleep(650 * time.Millisecond)
	if r := call(t, t.Context(), tools, "kb__create_note", `{"text":"c"}`); r.IsError || back.Counters.Get("create_note") != 1 {
		t.Errorf("call once back = %+v (ran %d times)", r, back.Counters.Get("create_note"))
	}
	if st := m.Status()[0]; !st.Connected || st.Error != "" {
		t.Errorf("status once back = %+v", st)
	}
}

// pauseIn is the pause an answer names after fails failed attempts, 0
// when it names none.
func pauseIn(text string, fails int) time.Duration {
	_, after, ok := strings.Cut(text, fmt.Sprintf("after %d failed connection attempts in a row; the next in ", fails))
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(strings.Fields(after)[0])
	if err != nil {
		return 0
	}
	return d
}

// A connection that drops under a call before any answer (the server
// closes it) is a lost connection, not a rejection: a mutating call is
// reported in doubt, a read-only one runs again on a new session.
func TestConnectionDroppedUnderCall(t *testing.T) {
	h := mcptest.NewHTTP(mcptest.Options{})
	var drops atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && drops.Add(-1) >= 0 {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = c.Close() // gone, no answer
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	m := open(t, mcp.Options{Servers: []config.MCPServer{{Name: "kb", Transport: config.MCPHTTP, URL: srv.URL}}})
	tools := byName(t, m)
	drops.Store(1)
	r := call(t, t.Context(), tools, "kb__create_note", `{"text":"a"}`)
	if !r.IsError || !strings.Contains(r.Text, "[in doubt]") || strings.Contains(r.Text, "rejected") {
		t.Errorf("create_note on a dropped connection = %q, want it in doubt", r.Text)
	}
	drops.Store(1)
	if r := call(t, t.Context(), tools, "kb__get_note", `{"text":"a"}`); r.IsError || h.Counters.Get("get_note") != 1 {
		t.Errorf("get_note on a dropped connection = %q (ran %d times), want it run again once", r.Text, h.Counters.Get("get_note"))
	}
}

// Closing while an HTTP server is down is no failure of Delta's shutdown:
// the session could not be ended on the server, which is logged.
func TestCloseWithHTTPServerDown(t *testing.T) {
	var logs logBuf
	srv := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{}))
	m := mcp.New(mcp.Options{Servers: []config.MCPServer{{Name: "kb", Transport: config.MCPHTTP, URL: srv.URL}}, Logger: logs.logger()})
	if err := m.Open(t.Context()); err != nil || !m.Status()[0].Connected {
		t.Fatalf("Open: %v, %+v", err, m.Status())
	}
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Errorf("Close = %v, want nil", err)
	}
	if !strings.Contains(logs.String(), "mcp session not ended on the server") {
		t.Errorf("no warning logged:\n%s", logs.String())
	}
}

// A server that floods notifications/tools/list_changed gets its tools
// listed again a few times, not once per notification.
func TestListChangedFloodIsCoalesced(t *testing.T) {
	var added atomic.Int32
	m := open(t, mcp.Options{
		Servers:      []config.MCPServer{rogueServer("fickle", mcptest.RogueListFlood, nil)},
		Env:          map[string]string{"PATH": os.Getenv("PATH")},
		OnToolsAdded: func(ts []tool.Tool) { added.Add(int32(len(ts))) },
	})
	tools := byName(t, m)
	call(t, t.Context(), tools, "fickle__flood", `{}`)
	time.Sleep(300 * time.Millisecond) // the notifications arrive and are handled
	r := call(t, t.Context(), tools, "fickle__get_lists", `{}`)
	var lists int
	if _, err := fmt.Sscanf(r.Text[strings.LastIndex(r.Text, "lists="):], "lists=%d", &lists); err != nil {
		t.Fatalf("get_lists = %q", r.Text)
	}
	t.Logf("%d tools/list answered", lists)
	if lists > 20 {
		t.Errorf("the server answered %d tools/list after 2,000 notifications, want a few", lists)
	}
	if n := added.Load(); n != 0 {
		t.Errorf("%d tools added, but the list never changed", n)
	}
}

// A stdio server wedged by a call (it answers nothing any more, ping
// included) is stopped once its call times out, and the next call gets a
// fresh one; a server only slow at one tool keeps its session.
func TestWedgedServerIsRestarted(t *testing.T) {
	defer mcp.SetTerminateAfter(100 * time.Millisecond)()
	pids := filepath.Join(t.TempDir(), "pids")
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{
			rogueServer("stuck", mcptest.RogueWedge, map[string]string{mcptest.EnvRoguePIDFile: pids}),
			rogueServer("slowish", "plain", nil),
		},
		Env:            map[string]string{"PATH": os.Getenv("PATH")},
		ConnectTimeout: 500 * time.Millisecond,
		CallTimeout:    300 * time.Millisecond,
	})
	tools := byName(t, m)
	for _, n := range []string{"stuck", "slowish"} {
		if r := call(t, t.Context(), tools, n+"__get_hang", `{}`); !strings.Contains(r.Text, "no answer within its time limit") {
			t.Errorf("%s get_hang = %q", n, r.Text)
		}
	}
	first := pidsIn(t, pids)
	deadline := time.Now().Add(5 * time.Second)
	for m.Status()[0].Connected && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := m.Status()[0]; st.Connected || !strings.Contains(st.Error, "no answer to a ping") {
		t.Errorf("stuck status = %+v, want it dropped as wedged", st)
	}
	for alive(first[0]) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(first[0]) {
		t.Errorf("the wedged process %d is still running", first[0])
	}
	if r := call(t, t.Context(), tools, "stuck__echo", `{"text":"fresh"}`); r.IsError || !strings.Contains(r.Text, "fresh") {
		t.Errorf("echo after the wedge = %+v", r)
	}
	time.Sleep(200 * time.Millisecond) // with the waits above, past slowish's ping limit
	if st := m.Status()[1]; !st.Connected {
		t.Errorf("slowish status = %+v: a server that answers a ping must keep its session", st)
	}
}

// Hosted MCP servers often carry their key in the URL's path
// (https://host/api/<key>/mcp). Such a segment is scrubbed like the URL's
// password from every error, the status and the logs; ordinary segments
// stay readable.
func TestKeyInURLPathNeverShown(t *testing.T) {
	const key = "sk-ak-0123456789abcdefXYZ"
	var logs logBuf
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every request fails with the URL in its error
	m := mcp.New(mcp.Options{
		Servers:        []config.MCPServer{{Name: "zap", Transport: config.MCPHTTP, URL: "http://" + addr + "/api/" + key + "/mcp"}},
		Logger:         logs.logger(),
		ConnectTimeout: 5 * time.Second,
	})
	_ = m.Open(t.Context())
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	st := m.Status()[0]
	shown := fmt.Sprint(st) + logs.String()
	if st.Connected || !strings.Contains(shown, "/api/[mcp:zap url]/mcp") {
		t.Errorf("status and logs do not show the scrubbed URL:\n%.3000s", shown)
	}
	if strings.Contains(shown, key) || strings.Contains(shown, "0123456789abcdef") {
		t.Errorf("the key in the URL's path is shown:\n%.3000s", shown)
	}
}
