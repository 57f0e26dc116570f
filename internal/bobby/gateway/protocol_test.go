package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestProtocolVersionsHTTP: bobby speaks 2025-11-25 (and older) through
// initialize. The Go SDK in use knows 2026-07-28, but serves it over
// streamable HTTP only statelessly, without the MCP session that holds a
// client's phase, handles and notification stream; so a client preferring
// 2026-07-28 lands on 2025-11-25, and a request pinned to 2026-07-28 is
// refused with the versions bobby does speak.
func TestProtocolVersionsHTTP(t *testing.T) {
	_, base := httpGateway(t)
	if v := connectHTTP(t, base, "alice-token", nil).InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("the go-sdk client negotiated %s, want 2025-11-25", v)
	}
	post := func(body string, hdr map[string]string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, base+MCPPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer alice-token")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	status, body := post(initialize, nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"protocolVersion":"2025-11-25"`) {
		t.Errorf("initialize asking 2026-07-28 = %d %s, want 2025-11-25 offered", status, body)
	}
	status, body = post(initialize, map[string]string{"MCP-Protocol-Version": "2026-07-28"})
	var rpc struct {
		Error struct {
			Code int
			Data struct{ Supported []string }
		}
	}
	if err := json.Unmarshal(body, &rpc); status != http.StatusBadRequest || err != nil ||
		len(rpc.Error.Data.Supported) == 0 || rpc.Error.Data.Supported[0] != "2025-11-25" {
		t.Errorf("a request pinned to 2026-07-28 = %d %s, want 400 naming 2025-11-25 first", status, body)
	}
}
