package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/tool"
)

// An MCP call ends at DELTA_TOOL_TIMEOUT_MS, the documented ceiling of a
// tool call, not at a ceiling of the MCP client's own: an operator who
// gives slow tools more time gives it to MCP tools too.
func TestMCPCallsEndAtTheToolTimeout(t *testing.T) {
	srv := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{}))
	t.Cleanup(srv.Close)
	servers, _ := json.Marshal([]map[string]any{{"name": "kb", "url": srv.URL}})
	env := map[string]string{"DELTA_WORKSPACE": t.TempDir(), "DELTA_CODE_CLI": "/bin/true",
		"DELTA_MCP_SERVERS": string(servers), "DELTA_TOOL_TIMEOUT_MS": "300"}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	p, err := build(context.Background(), cfg, ":memory:", true, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.close(context.Background()) })
	var slow tool.Tool
	for _, tl := range p.mcp.Tools() {
		if tl.Spec().Name == "kb__slow" {
			slow = tl
		}
	}
	if slow == nil {
		t.Fatalf("kb__slow not registered: %+v", p.mcp.Status())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	res, err := slow.Run(ctx, tool.Call{CallID: "c1", Args: json.RawMessage(`{}`)})
	if err != nil || !res.IsError || !strings.Contains(res.Text, "no answer within its time limit") {
		t.Errorf("slow = %+v, %v", res, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call ended after %s, want about the 300 ms tool timeout", d)
	}
}
