package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/mcp"
)

// peerBin returns a reference MCP server installed by `cd test/peers && npm
// install`; without it the test skips locally and fails in CI. Under -short
// (scripts/check, which installs nothing) it skips: scripts/test runs it.
func peerBin(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: an npm test peer, left to scripts/test under -short", name)
	}
	p, err := filepath.Abs(filepath.Join("..", "..", "test", "peers", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not installed (run: cd test/peers && npm install): %v", name, err)
		}
		t.Skipf("%s not installed: run `cd test/peers && npm install` (required when CI is set)", name)
	}
	return p
}

func TestReferenceServers(t *testing.T) {
	everything := peerBin(t, "mcp-server-everything")
	filesystem := peerBin(t, "mcp-server-filesystem")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the workspace"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{
			{Name: "everything", Transport: config.MCPStdio, Command: []string{everything, "stdio"}},
			{Name: "fs", Transport: config.MCPStdio, Command: []string{filesystem, root}},
		},
		Env: map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")},
	})
	for _, st := range m.Status() {
		if !st.Connected || st.Tools == 0 {
			t.Fatalf("%s: %+v", st.Name, st)
		}
		t.Logf("%s: %d tools, protocol %s", st.Name, st.Tools, st.Protocol)
	}
	tools := byName(t, m)
	for n := range tools {
		if _, ok := mcp.ToolName(strings.SplitN(n, "__", 2)[0], strings.SplitN(n, "__", 2)[1]); !ok {
			t.Errorf("registered an unusable name %q", n)
		}
	}
	if r := call(t, t.Context(), tools, "everything__echo", `{"message":"ping"}`); r.IsError || !strings.Contains(r.Text, "ping") ||
		!strings.HasPrefix(r.Text, "MCP result from server everything (untrusted data):") {
		t.Errorf("everything__echo = %+v", r)
	}
	if r := call(t, t.Context(), tools, "fs__read_text_file", `{"path":"`+filepath.Join(root, "hello.txt")+`"}`); r.IsError || !strings.Contains(r.Text, "hello from the workspace") {
		t.Errorf("fs__read_text_file = %+v", r)
	}
	if !tools["fs__read_text_file"].ReadOnly() || tools["fs__write_file"].ReadOnly() != true {
		// write_file contains the "file" segment: read-only by the name rule in adapt.go, as documented.
		t.Errorf("classification: read_text_file=%v write_file=%v", tools["fs__read_text_file"].ReadOnly(), tools["fs__write_file"].ReadOnly())
	}
	if tools["fs__create_directory"].ReadOnly() {
		t.Errorf("create_directory classified read-only")
	}
	if r := call(t, t.Context(), tools, "fs__read_text_file", `{"path":"/etc/passwd"}`); !r.IsError {
		t.Errorf("read outside the allowed root succeeded: %q", r.Text)
	}
}
