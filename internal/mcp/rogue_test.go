package mcp_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/mcp/mcptest"
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
