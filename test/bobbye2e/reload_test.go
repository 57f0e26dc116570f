package bobbye2e

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/gatewaytest"
	"github.com/deltaharness/delta/test/bobbytest"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "1"}, nil)
	// Rotation ends MCP sessions, which 2026-07-28 does not have.
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// waitLog waits until the serve log holds want (the reload's report line),
// or fails after a minute.
func waitLog(t *testing.T, s bobbytest.Served, want string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(s.Log(), want) {
			return
		}
	}
	t.Fatalf("the serve log never said %q:\n%s", want, s.Log())
}

// TestSIGHUPRotatesToken: the real `bobby serve` rereads its principals on
// SIGHUP. After the config rotates the principal's token, the old token is
// refused, a request on the old MCP session with the new token is told to
// initialize again, and a new session with the new token works, with no
// restart. A config that no longer parses keeps the previous principals.
func TestSIGHUPRotatesToken(t *testing.T) {
	oldToken, newToken := "old-"+rand.Text(), "new-"+rand.Text()
	expires := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	s := bobbytest.Serve(t, bobbyBin, func(addr, dir string) string { return serveTOML(addr, dir, "agent", oldToken, expires) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, err := connect(ctx, s.MCPURL, oldToken)
	if err != nil {
		t.Fatalf("connect with the first token: %v", err)
	}
	defer sess.Close()
	if _, err := sess.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}

	if err := os.WriteFile(s.CfgPath, []byte(serveTOML(s.Addr, s.Dir, "agent", newToken, expires)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, s, "MCP sessions ended (they must initialize again) for: agent")

	post := func(token, sid string) (int, string) {
		t.Helper()
		a := gatewaytest.Post(t, ctx, s.MCPURL, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "Authorization", gatewaytest.Bearer(token), "Mcp-Session-Id", sid)
		return a.Status, a.Body
	}
	if status, _ := post(oldToken, sess.ID()); status != http.StatusUnauthorized {
		t.Errorf("the rotated-out token: status %d, want 401", status)
	}
	if status, body := post(newToken, sess.ID()); status != http.StatusNotFound || !strings.Contains(body, "send initialize again") {
		t.Errorf("the old session with the new token: %d %s", status, body)
	}
	fresh, err := connect(ctx, s.MCPURL, newToken)
	if err != nil {
		t.Fatalf("connect with the rotated token: %v", err)
	}
	defer fresh.Close()
	if _, err := fresh.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list on the new session: %v", err)
	}

	if err := os.WriteFile(s.CfgPath, []byte("[http\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, s, "failed, the previous principals stay")
	if _, err := fresh.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list after a failed reload: %v", err)
	}
}
