package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

// connectInMemory runs a client session of principal p against g without
// a transport, for measurements.
func connectInMemory(tb testing.TB, g *Gateway, p policy.Principal) *mcp.ClientSession {
	tb.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	cs := g.newClientSession(p)
	ss, err := cs.server.Connect(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	c, err := client.Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(); ss.Close(); g.removeClient(cs) })
	return c
}

// TestToolsListBudget keeps tools/list small: tool lists that are too long
// are a top complaint about browser MCP servers. It logs the size per phase
// for a principal holding every capability.
func TestToolsListBudget(t *testing.T) {
	g := newGateway(t, testConfig())
	all, _ := policy.NewPrincipal("all", policy.NewSet(policy.All...), zeroTime, "")
	c := connectInMemory(t, g, all)
	sizes := map[Phase]int{}
	for _, p := range Phases {
		if _, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "toolset_select", Arguments: map[string]any{"phase": p}}); err != nil {
			t.Fatal(err)
		}
		res, err := c.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		sizes[p] = len(b)
		t.Logf("phase %-7s %2d tools %6d bytes", p, len(res.Tools), len(b))
	}
	// The whole surface is far below the ~127,000 bytes the spec quotes for
	// its full list; the startup phase must stay compact: issue 7's goal is
	// half of @playwright/mcp's 20,296 bytes. 9,713 bytes when this budget
	// was set (abridged schemas, see advertised).
	const exploreBudget = 10000
	if sizes[PhaseExplore] > exploreBudget {
		t.Errorf("explore tools/list is %d bytes; keep it under %d", sizes[PhaseExplore], exploreBudget)
	}
}

func BenchmarkValidateClick(b *testing.B) {
	td := toolByNameForBench("click")
	p, _ := policy.NewPrincipal("x", policy.NewSet(policy.All...), zeroTime, "")
	schema := td.input(p)
	args, _ := decodeArgs(json.RawMessage(`{"workflowHandle":"wf_0123456789abcdef0123456789abcdef","target":{"role":"button","name":"Go"},"modifiers":["shift"]}`))
	for b.Loop() {
		if v := validate(schema, args); v != nil {
			b.Fatal(v)
		}
	}
}

func toolByNameForBench(name string) *toolDef {
	for _, t := range buildTools() {
		if t.name == name {
			return t
		}
	}
	return nil
}

// BenchmarkSessionListCall measures one tools/call through the gateway
// pipeline (auth re-check, validation, handler, encoding) without a browser.
func BenchmarkSessionListCall(b *testing.B) {
	g, err := New(Options{Config: testConfig(), Runtime: sharedRT})
	if err != nil {
		b.Fatal(err)
	}
	all, _ := policy.NewPrincipal("all", policy.NewSet(policy.All...), zeroTime, "")
	c := connectInMemory(b, g, all)
	ctx := context.Background()
	for b.Loop() {
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "session_list", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
