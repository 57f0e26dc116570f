package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mcpEnv(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func noFile(string) ([]byte, error) { return nil, os.ErrNotExist }

func TestLoadMCPServers(t *testing.T) {
	cases := []struct {
		name     string
		raw      string
		servers  []MCPServer
		warnings []string // substrings, one per expected warning
	}{
		{"unset", "", nil, nil},
		{"explicit http", `[{"name":"crm","transport":"http","url":"https://crm.example/mcp","headers":{"authorization":"Bearer {{vault:KB_TOKEN}}"}}]`,
			[]MCPServer{{Name: "crm", Transport: MCPHTTP, URL: "https://crm.example/mcp", Headers: map[string]string{"authorization": "Bearer {{vault:KB_TOKEN}}"}}}, nil},
		{"stdio array command, inferred", `[{"name":"local","command":["bun","run","server.ts"],"env":{"MODE":"production"}}]`,
			[]MCPServer{{Name: "local", Transport: MCPStdio, Command: []string{"bun", "run", "server.ts"}, Env: map[string]string{"MODE": "production"}, Inferred: true}}, nil},
		{"stdio string command plus args", `[{"name":"fs","transport":"STDIO","command":"npx","args":["-y","pkg"]}]`,
			[]MCPServer{{Name: "fs", Transport: MCPStdio, Command: []string{"npx", "-y", "pkg"}}}, nil},
		{"http inferred", `[{"name":"kb","url":"http://127.0.0.1:9/mcp"}]`,
			[]MCPServer{{Name: "kb", Transport: MCPHTTP, URL: "http://127.0.0.1:9/mcp", Inferred: true}}, nil},
		{"malformed json", `[{"name":`, nil, []string{"DELTA_MCP_SERVERS is not valid JSON"}},
		{"object root", `{"name":"x"}`, nil, []string{"must be a JSON array of server objects, got an object"}},
		{"bad entries skipped, good kept", `[
			{"transport":"http","url":"https://a/"},
			{"name":"nourl","transport":"http"},
			{"name":"nocmd","transport":"stdio"},
			"just a string",
			{"name":"both","url":"https://a/","command":"x"},
			{"name":"weird","transport":"ws","url":"wss://a/"},
			{"name":"bad name!","url":"https://a/"},
			{"name":"ftp","url":"ftp://a/"},
			{"name":"cmdtype","command":7},
			{"name":"ok","url":"https://ok/"},
			{"name":"ok","url":"https://dup/"}]`,
			[]MCPServer{{Name: "ok", Transport: MCPHTTP, URL: "https://ok/", Inferred: true}},
			[]string{"entry 0 skipped: no name", `entry 1 ("nourl") skipped: http entry without url`, `entry 2 ("nocmd") skipped: stdio entry without command`,
				"entry 3 skipped: not a server object", `entry 4 ("both") skipped: both url and command`, `entry 5 ("weird") skipped: unknown transport "ws"`,
				`entry 6 ("bad name!") skipped: name must be`, `entry 7 ("ftp") skipped: url must start`, `entry 8 ("cmdtype") skipped: command must be`,
				`entry 10 ("ok") skipped: duplicate`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			if c.raw != "" {
				env["DELTA_MCP_SERVERS"] = c.raw
			}
			got := LoadMCP(mcpEnv(env), nil, noFile)
			if !reflect.DeepEqual(got.Servers, c.servers) {
				t.Errorf("servers = %+v\nwant %+v", got.Servers, c.servers)
			}
			if len(got.Warnings) != len(c.warnings) {
				t.Fatalf("warnings = %q, want %d", got.Warnings, len(c.warnings))
			}
			for i, w := range c.warnings {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got.Warnings[i], w)
				}
			}
		})
	}
}

func TestLoadMCPRefresh(t *testing.T) {
	servers := `[{"name":"crm","url":"https://crm/"},{"name":"loc","command":"x"},{"name":"auth","url":"https://a/","headers":{"Authorization":"Bearer s"}}]`
	full := func(server string) map[string]string {
		return map[string]string{"DELTA_MCP_SERVERS": servers, "DELTA_MCP_REFRESH_URL": "https://auth/token", "DELTA_MCP_REFRESH_FILE": "/data/rt",
			"DELTA_MCP_REFRESH_SERVER": server, "DELTA_MCP_REFRESH_CLIENT_ID": "delta-agent", "DELTA_MCP_REFRESH_TOKEN": "seed"}
	}
	c := LoadMCP(mcpEnv(full("crm")), nil, noFile)
	if c.Refresh == nil || *c.Refresh != (MCPRefresh{URL: "https://auth/token", File: "/data/rt", Server: "crm", ClientID: "delta-agent", Token: "seed"}) || len(c.Warnings) != 0 {
		t.Errorf("full: %+v %q", c.Refresh, c.Warnings)
	}
	for _, tc := range []struct{ server, warn string }{{"nope", "names no configured"}, {"loc", "not an http server"}, {"auth", "static Authorization header"}} {
		c := LoadMCP(mcpEnv(full(tc.server)), nil, noFile)
		if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], tc.warn) {
			t.Errorf("%s: warnings %q", tc.server, c.Warnings)
		}
	}
	partial := full("crm")
	delete(partial, "DELTA_MCP_REFRESH_FILE")
	if c := LoadMCP(mcpEnv(partial), nil, noFile); c.Refresh != nil || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "DELTA_MCP_REFRESH_FILE not set") {
		t.Errorf("partial: %+v %q", c.Refresh, c.Warnings)
	}
}

func TestLoadVaultKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "vault.key")
	short := filepath.Join(dir, "short.key")
	for path, body := range map[string]string{keyFile: "file-key-0123456789\n", short: "short"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		env  map[string]string
		want string
		warn string
	}{
		{map[string]string{}, "", ""},
		{map[string]string{"DELTA_VAULT_KEY": "env-key-0123456789"}, "env-key-0123456789", ""},
		{map[string]string{"DELTA_VAULT_KEY": "env-key-0123456789", "DELTA_VAULT_KEY_FILE": keyFile}, "file-key-0123456789", ""},
		{map[string]string{"DELTA_VAULT_KEY": "tooshort"}, "", "shorter than 16"},
		{map[string]string{"DELTA_VAULT_KEY_FILE": short, "DELTA_VAULT_KEY": "env-key-0123456789"}, "", "shorter than 16"},
		{map[string]string{"DELTA_VAULT_KEY_FILE": filepath.Join(dir, "missing")}, "", "cannot read"},
	}
	for i, c := range cases {
		got := LoadMCP(mcpEnv(c.env), nil, os.ReadFile)
		if got.VaultKey != c.want || (c.warn == "") != (len(got.Warnings) == 0) || c.warn != "" && !strings.Contains(got.Warnings[0], c.warn) {
			t.Errorf("case %d: key %q warnings %q", i, got.VaultKey, got.Warnings)
		}
		for _, w := range got.Warnings {
			if strings.Contains(w, "0123456789") {
				t.Errorf("a warning shows key material: %q", w)
			}
		}
	}
}

func TestChildEnv(t *testing.T) {
	got := LoadMCP(mcpEnv(nil), []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "LC_TIME=x", "OPENAI_API_KEY=sk", "DELTA_CONTROL_TOKEN=t", "TERM=xterm", "LANGUAGE=fr", "MALFORMED"}, noFile).ChildEnv
	want := map[string]string{"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "LC_TIME": "x", "TERM": "xterm"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ChildEnv = %v", got)
	}
}

func FuzzLoadMCPServers(f *testing.F) {
	for _, s := range []string{`[]`, `[{"name":"a","url":"http://x"}]`, `[{"name":"b","command":["x"]}]`, `[null]`, `{`, `[{"name":1}]`, `[{"command":null,"name":"c"}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c := LoadMCP(mcpEnv(map[string]string{"DELTA_MCP_SERVERS": raw}), nil, noFile)
		for _, s := range c.Servers {
			if s.Name == "" || (s.Transport == MCPHTTP) == (s.URL == "") || (s.Transport == MCPStdio) == (len(s.Command) == 0) {
				t.Errorf("unusable server accepted: %+v", s)
			}
		}
	})
}
