package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/gatewaytest"
	"github.com/deltaharness/delta/internal/bobby/policy"
)

// TestReloadPrincipals: a reload rotates alice's token and drops reader.
// alice's MCP session ends and a request on it, even with the new token,
// is told (HTTP 404) that the credential changed and to initialize again;
// the old token is refused, the new one starts a session; bob, unchanged,
// keeps his session. A reload that does not parse changes nothing.
func TestReloadPrincipals(t *testing.T) {
	g, base := httpGateway(t)
	alice := connectHTTP(t, base, "alice-token", nil)
	bob := connectHTTP(t, base, "bob-token", nil)
	mustOK(t, alice, "runtime_info", map[string]any{})
	mustOK(t, bob, "runtime_info", map[string]any{})

	cfg := testConfig()
	cfg.Principals[0].TokenSHA256 = policy.HashTokenHex("alice-token-2")
	cfg.Principals = slices.DeleteFunc(cfg.Principals, func(p config.Principal) bool { return p.Name == "reader" })
	ended, err := g.ReloadPrincipals(cfg)
	if err != nil || !slices.Equal(ended, []string{"alice"}) {
		t.Fatalf("ReloadPrincipals = %v, %v; want alice's sessions ended", ended, err)
	}

	post := func(token, sid, body string) (int, string) {
		t.Helper()
		a := gatewaytest.Post(t, testCtx(t), base+MCPPath, body, "Authorization", gatewaytest.Bearer(token), "Mcp-Session-Id", sid)
		return a.Status, a.Body
	}
	const list = `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	status, body := post("alice-token-2", alice.ID(), list)
	var rpc struct {
		ID    int `json:"id"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &rpc)
	if status != http.StatusNotFound || rpc.ID != 7 || !strings.Contains(rpc.Error.Message, "principal alice was rotated or revoked") ||
		!strings.Contains(rpc.Error.Message, "send initialize again") {
		t.Fatalf("a request on alice's ended session: %d %s", status, body)
	}
	if status, _ := post("alice-token", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != http.StatusUnauthorized {
		t.Errorf("the rotated-out token: status %d, want 401", status)
	}
	if status, _ := post("reader-token", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != http.StatusUnauthorized {
		t.Errorf("the removed principal's token: status %d, want 401", status)
	}
	again := connectHTTP(t, base, "alice-token-2", nil)
	mustOK(t, again, "runtime_info", map[string]any{})
	mustOK(t, bob, "runtime_info", map[string]any{}) // bob's session lives on

	bad := testConfig()
	bad.Principals[1].Name = "alice" // two principals named alice
	if _, err := g.ReloadPrincipals(bad); err == nil || !strings.Contains(err.Error(), `duplicate principal "alice"`) {
		t.Fatalf("a bad reload: %v", err)
	}
	mustOK(t, again, "runtime_info", map[string]any{})
	if _, ok := g.Principals().Lookup("reader"); ok {
		t.Error("the failed reload brought the previous principals back")
	}
}
