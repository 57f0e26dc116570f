package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// echoAgent calls the named tool with args on the user's turn, then answers
// with the tool's result.
func echoAgent(toolName, args string) modeltest.Script {
	return func(req modeltest.ChatRequest) modeltest.Reply {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			m := req.Messages[i]
			if m.Role == "tool" {
				return modeltest.TextReply("The tool said: " + m.Content)
			}
			if m.Role == "assistant" {
				break
			}
		}
		if !req.HasTool(toolName) {
			return modeltest.TextReply("missing tool " + toolName)
		}
		return modeltest.ToolReply(modeltest.ToolCall{ID: "call_1", Name: toolName, Arguments: args})
	}
}

// runWithMCP starts a daemon on fake with one MCP server (its
// DELTA_MCP_SERVERS entry), sends input as a response and fails the test
// unless the run completes with each of want in its answer.
func runWithMCP(t *testing.T, fake *modeltest.Server, server map[string]any, input string, want ...string) *daemon {
	t.Helper()
	servers, _ := json.Marshal([]map[string]any{server})
	d := newDaemon(t, fake, "DELTA_MCP_SERVERS="+string(servers))
	body, _ := json.Marshal(map[string]string{"input": input})
	s, resp := d.call("POST", "/v1/responses", string(body))
	out, _ := resp["output_text"].(string)
	ok := s == 200 && resp["status"] == "completed"
	for _, w := range want {
		ok = ok && strings.Contains(out, w)
	}
	if !ok {
		t.Fatalf("run: %d %v\nlog:\n%s", s, resp, d.logText())
	}
	return d
}

// TestMCPReferenceServerThroughAgentRun connects the reference
// server-everything over stdio and has the agent call its echo tool.
func TestMCPReferenceServerThroughAgentRun(t *testing.T) {
	bin := peer(t, ".bin/mcp-server-everything", "server-everything")
	fake := startScript(t, echoAgent("everything__echo", `{"message":"hello from the agent"}`))
	d := runWithMCP(t, fake, map[string]any{"name": "everything", "command": []string{bin, "stdio"}}, "echo something",
		"hello from the agent", "untrusted data")
	_, st := d.call("GET", "/v1/status", "")
	b, _ := json.Marshal(st["mcp_servers"])
	if !strings.Contains(string(b), `"connected":true`) {
		t.Fatalf("mcp status %s", b)
	}
}

func TestVaultRoutesAndRedaction(t *testing.T) {
	fake := startScript(t, echoAgent("list_secrets", `{}`))
	off := newDaemon(t, fake)
	if s, m := off.call("PUT", "/v1/secrets/KB_TOKEN", `{"value":"x-secret-value-123","purpose":"kb"}`); s != 503 {
		t.Fatalf("without a key: %d %v", s, m)
	}
	d := newDaemon(t, fake, "DELTA_VAULT_KEY=0123456789abcdef-test-key")
	if s, m := d.call("PUT", "/v1/secrets/KB_TOKEN", `{"value":"x-secret-value-123","purpose":"knowledge base"}`); s != 201 {
		t.Fatalf("create: %d %v", s, m)
	}
	if s, m := d.call("PUT", "/v1/secrets/KB_TOKEN", `{"value":"other","purpose":"kb"}`); s != 409 {
		t.Fatalf("create-only: %d %v", s, m)
	}
	if s, m := d.call("PUT", "/v1/secrets/bad-name", `{"value":"v","purpose":"kb"}`); s != 400 {
		t.Fatalf("bad name: %d %v", s, m)
	}
	s, list := d.call("GET", "/v1/secrets", "")
	b, _ := json.Marshal(list)
	if s != 200 || !strings.Contains(string(b), "KB_TOKEN") || strings.Contains(string(b), "x-secret-value-123") {
		t.Fatalf("list: %d %s", s, b)
	}
	_, resp := d.call("POST", "/v1/responses", `{"input":"which secrets exist?"}`)
	if out, _ := resp["output_text"].(string); !strings.Contains(out, "KB_TOKEN: knowledge base") {
		t.Fatalf("list_secrets through the agent: %v", resp)
	}
	db, _ := os.ReadFile(filepath.Join(d.dir, "state", "delta.db"))
	wal, _ := os.ReadFile(filepath.Join(d.dir, "state", "delta.db-wal"))
	if strings.Contains(string(db)+string(wal), "x-secret-value-123") {
		t.Fatal("the secret value is stored in clear")
	}
}

// TestFilesystemReferenceServerThroughAgentRun: the agent reads a workspace
// file through the reference server-filesystem over stdio.
func TestFilesystemReferenceServerThroughAgentRun(t *testing.T) {
	bin := peer(t, ".bin/mcp-server-filesystem", "server-filesystem")
	dir := t.TempDir()
	note := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(note, []byte("the launch is on Tuesday"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"path": note})
	fake := startScript(t, echoAgent("fs__read_text_file", string(args)))
	runWithMCP(t, fake, map[string]any{"name": "fs", "command": []string{bin, dir}}, "read the note", "the launch is on Tuesday")
}

// TestProgressiveLoadingWith300MCPTools: a 300-tool MCP server is connected;
// its tools are not all offered, search_tools activates the one the agent
// needs, and the next turn can call it.
func TestProgressiveLoadingWith300MCPTools(t *testing.T) {
	srv := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{Tools: 300}))
	t.Cleanup(srv.Close)
	var offeredFirst int
	script := func(req modeltest.ChatRequest) modeltest.Reply {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			m := req.Messages[i]
			if m.Role == "assistant" {
				break
			}
			if m.Role != "tool" {
				continue
			}
			if strings.Contains(m.Content, "big__gen_123") && !strings.HasPrefix(m.Content, "MCP result") {
				if !req.HasTool("big__gen_123") {
					return modeltest.TextReply("search said it activated big__gen_123 but the tool is not offered")
				}
				return modeltest.ToolReply(modeltest.ToolCall{ID: "call_2", Name: "big__gen_123", Arguments: `{}`})
			}
			return modeltest.TextReply("The tool said: " + m.Content)
		}
		offeredFirst = len(req.Tools)
		if req.HasTool("big__gen_123") || !req.HasTool("search_tools") {
			return modeltest.TextReply("unexpected first tool set")
		}
		return modeltest.ToolReply(modeltest.ToolCall{ID: "call_1", Name: "search_tools", Arguments: `{"query":"gen 123"}`})
	}
	runWithMCP(t, startScript(t, script), map[string]any{"name": "big", "url": srv.URL}, "use generated tool 123",
		"gen_123", "MCP result from server big")
	if offeredFirst == 0 || offeredFirst > 60 {
		t.Fatalf("first turn offered %d tools; want the resident set only", offeredFirst)
	}
}

// TestGuessedToolOutsideResidentSetIsRefused: with 300 MCP tools most are
// not offered; a model that calls one by a guessed name gets an error result
// pointing to search_tools, and the server never sees the call.
func TestGuessedToolOutsideResidentSetIsRefused(t *testing.T) {
	h := mcptest.NewHTTP(mcptest.Options{Tools: 300})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	script := func(req modeltest.ChatRequest) modeltest.Reply {
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != "assistant"; i-- {
			if m := req.Messages[i]; m.Role == "tool" {
				return modeltest.TextReply("The tool said: " + m.Content)
			}
		}
		if req.HasTool("big__create_note") {
			return modeltest.TextReply("unexpected: big__create_note is offered")
		}
		return modeltest.ToolReply(modeltest.ToolCall{ID: "call_1", Name: "big__create_note", Arguments: `{"text":"x"}`})
	}
	runWithMCP(t, startScript(t, script), map[string]any{"name": "big", "url": srv.URL}, "make a note", "search_tools", "did not run")
	if n := h.Counters.Get("create_note"); n != 0 {
		t.Fatalf("the MCP server ran create_note %d times; a tool outside the resident set must not run", n)
	}
}

// TestReviewPolicyFollowsConnectedWriteTool: with the starter POLICY.md
// (comments only), the embedded review policy reaches the system prompt
// when an MCP server offers a reviewed-write tool (…propose_change), and
// not when none does.
func TestReviewPolicyFollowsConnectedWriteTool(t *testing.T) {
	for _, tc := range []struct {
		name    string
		propose bool
	}{{"with propose_change", true}, {"without", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{ProposeChange: tc.propose}))
			t.Cleanup(srv.Close)
			fake := startScript(t, modeltest.Sequence(modeltest.TextReply("ok")))
			runWithMCP(t, fake, map[string]any{"name": "crm", "url": srv.URL}, "hello")
			reqs := fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model requests, want 1", len(reqs))
			}
			system, _ := prompt(reqs[0])
			has := strings.Contains(system, "# Review policy") && strings.Contains(system, "`propose_change`")
			if has != tc.propose {
				t.Fatalf("review policy in the system prompt = %v, want %v; system:\n%s", has, tc.propose, system)
			}
			if tc.propose && !reqs[0].HasTool("crm__propose_change") {
				t.Fatalf("crm__propose_change not offered")
			}
		})
	}
}

// TestShutdownDuringMCPCall: the daemon is stopped while a run waits on an
// MCP call the server never answers and never gives up on. The daemon
// exits within its shutdown steps instead of waiting on the call, and the
// acknowledged task is not lost: after a restart, with the server
// answering again, it finishes.
func TestShutdownDuringMCPCall(t *testing.T) {
	h := mcptest.NewHTTP(mcptest.Options{})
	var hang atomic.Bool
	hang.Store(true)
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if hang.Load() && bytes.Contains(body, []byte(`"tools/call"`)) {
			arrived <- struct{}{}
			<-release // deaf to the client going away
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for its handlers
	fake := startScript(t, echoAgent("kb__get_note", `{"text":"status"}`))
	servers, _ := json.Marshal([]map[string]any{{"name": "kb", "url": srv.URL}})
	d := newDaemon(t, fake, "DELTA_MCP_SERVERS="+string(servers))
	_, ack := d.call("POST", "/v1/tasks", `{"input":"check the note"}`)
	id, _ := ack["id"].(string)
	if id == "" {
		t.Fatalf("task not acknowledged: %v", ack)
	}
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatalf("the MCP call never reached the server\nlog:\n%s", d.logText())
	}
	start := time.Now()
	d.stop() // SIGTERM; killed after 10 s
	if took := time.Since(start); took > 9*time.Second {
		t.Fatalf("shutdown took %s with an MCP call in flight\nlog:\n%s", took, d.logText())
	}
	hang.Store(false)
	d.start()
	v := d.waitStatus(id, "done", "failed", "cancelled")
	out, _ := v["result"].(map[string]any)["output_text"].(string)
	if v["status"] != "done" || !strings.Contains(out, "get_note #1") {
		t.Fatalf("task after restart: %v\nlog:\n%s", v, d.logText())
	}
}
