// MCP servers, the rotating MCP refresh credential and the vault key.
//
// Nothing here can stop the daemon from booting: the guide promises that a
// malformed DELTA_MCP_SERVERS, an unusable entry or a partial refresh
// configuration only warns, and that a missing vault key means "no vault".
// Every warning names the variable and, for an entry, its index and name.

package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// MCP transports.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
)

// MinVaultKeyLen is the shortest accepted vault key material.
const MinVaultKeyLen = 16

// MCPServer is one entry of DELTA_MCP_SERVERS.
type MCPServer struct {
	Name      string            `json:"name"`
	Transport string            `json:"transport"`         // MCPStdio or MCPHTTP, explicit or inferred
	URL       string            `json:"url,omitempty"`     // http
	Headers   map[string]string `json:"headers,omitempty"` // http; values may hold {{vault:NAME}}
	Command   []string          `json:"command,omitempty"` // stdio: program then its arguments
	Env       map[string]string `json:"env,omitempty"`     // stdio; values may hold {{vault:NAME}}
	// Inferred is set when the entry gave no transport and it was inferred
	// from its shape (url → http, command → stdio); the daemon logs it.
	Inferred bool `json:"-"`
}

// MCPRefresh is the one rotating OAuth2 refresh credential
// (DELTA_MCP_REFRESH_*), attached to the HTTP server named Server.
type MCPRefresh struct {
	URL      string // token endpoint
	File     string // authoritative refresh-token file
	Server   string // the DELTA_MCP_SERVERS entry it authenticates
	ClientID string // optional
	Token    string // optional seed, written to File only when File is absent
}

// MCPConfig is what LoadMCP returns.
type MCPConfig struct {
	Servers []MCPServer
	Refresh *MCPRefresh // nil unless URL, File and Server are all set
	// VaultKey is the vault key material (DELTA_VAULT_KEY_FILE preferred,
	// else DELTA_VAULT_KEY); empty means no vault.
	VaultKey string
	// ChildEnv is the process plumbing a stdio MCP child may inherit:
	// PATH, HOME, SHELL, TMPDIR, LANG, LC_* and TERM, nothing else.
	ChildEnv map[string]string
	// Warnings are the findings the daemon logs at boot; none is fatal.
	Warnings []string
}

// mcpNamePattern keeps a server name usable as the prefix of a tool name.
var mcpNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// MCPFromOS reads the MCP and vault settings from the process environment.
func MCPFromOS() MCPConfig { return LoadMCP(os.LookupEnv, os.Environ(), os.ReadFile) }

// LoadMCP reads DELTA_MCP_SERVERS, DELTA_MCP_REFRESH_*, DELTA_VAULT_KEY_FILE
// and DELTA_VAULT_KEY through lookup, and the child plumbing from environ
// (KEY=VALUE strings, needed to enumerate LC_*). readFile reads the key file.
func LoadMCP(lookup func(string) (string, bool), environ []string, readFile func(string) ([]byte, error)) MCPConfig {
	var c MCPConfig
	warn := func(format string, a ...any) { c.Warnings = append(c.Warnings, fmt.Sprintf(format, a...)) }

	if raw, ok := lookup("DELTA_MCP_SERVERS"); ok && strings.TrimSpace(raw) != "" {
		c.Servers = parseMCPServers(raw, warn)
	}
	c.Refresh = loadRefresh(lookup, c.Servers, warn)
	c.VaultKey = loadVaultKey(lookup, readFile, warn)
	c.ChildEnv = childEnv(environ)
	return c
}

// rawMCPServer accepts command as a string or an array, plus args.
type rawMCPServer struct {
	Name      *string           `json:"name"`
	Transport string            `json:"transport"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"`
	Command   json.RawMessage   `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
}

func parseMCPServers(raw string, warn func(string, ...any)) []MCPServer {
	var entries []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		var v any
		if json.Unmarshal([]byte(raw), &v) == nil {
			warn("DELTA_MCP_SERVERS must be a JSON array of server objects, got %s: no MCP servers configured", jsonKind(v))
		} else {
			warn("DELTA_MCP_SERVERS is not valid JSON (%v): no MCP servers configured", err)
		}
		return nil
	}
	var out []MCPServer
	seen := map[string]bool{}
	for i, e := range entries {
		s, problem := parseMCPServer(e)
		if problem != "" {
			label := fmt.Sprintf("entry %d", i)
			if s.Name != "" {
				label += fmt.Sprintf(" (%q)", s.Name)
			}
			warn("DELTA_MCP_SERVERS %s skipped: %s", label, problem)
			continue
		}
		if seen[s.Name] {
			warn("DELTA_MCP_SERVERS entry %d (%q) skipped: duplicate server name", i, s.Name)
			continue
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	return out
}

// parseMCPServer validates one entry; the problem is empty when it is usable.
func parseMCPServer(e json.RawMessage) (MCPServer, string) {
	var r rawMCPServer
	dec := json.NewDecoder(bytes.NewReader(e))
	if err := dec.Decode(&r); err != nil {
		return MCPServer{}, fmt.Sprintf("not a server object (%v)", err)
	}
	s := MCPServer{Transport: strings.ToLower(strings.TrimSpace(r.Transport)), URL: strings.TrimSpace(r.URL), Headers: r.Headers, Env: r.Env}
	if r.Name == nil || strings.TrimSpace(*r.Name) == "" {
		return s, "no name"
	}
	s.Name = strings.TrimSpace(*r.Name)
	if !mcpNamePattern.MatchString(s.Name) {
		return s, "name must be 1-64 letters, digits, '_' or '-' (it prefixes every tool name)"
	}
	if len(r.Command) > 0 && string(r.Command) != "null" {
		var one string
		if json.Unmarshal(r.Command, &one) == nil {
			if strings.TrimSpace(one) != "" {
				s.Command = []string{one}
			}
		} else if err := json.Unmarshal(r.Command, &s.Command); err != nil {
			return s, "command must be a string or an array of strings"
		}
	}
	s.Command = append(s.Command, r.Args...)
	if s.Transport == "" {
		switch {
		case s.URL != "" && len(s.Command) == 0:
			s.Transport = MCPHTTP
		case len(s.Command) > 0 && s.URL == "":
			s.Transport = MCPStdio
		case s.URL != "":
			return s, "both url and command given and no transport: set transport to \"http\" or \"stdio\""
		default:
			return s, "no transport, url or command"
		}
		s.Inferred = true
	}
	switch s.Transport {
	case MCPHTTP:
		if s.URL == "" {
			return s, "http entry without url"
		}
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return s, "url must start with http:// or https://"
		}
		s.Command, s.Env = nil, nil
	case MCPStdio:
		if len(s.Command) == 0 || strings.TrimSpace(s.Command[0]) == "" {
			return s, "stdio entry without command"
		}
		s.URL, s.Headers = "", nil
	default:
		return s, fmt.Sprintf("unknown transport %q (want \"http\" or \"stdio\")", r.Transport)
	}
	return s, ""
}

func loadRefresh(lookup func(string) (string, bool), servers []MCPServer, warn func(string, ...any)) *MCPRefresh {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	r := MCPRefresh{
		URL: get("DELTA_MCP_REFRESH_URL"), File: get("DELTA_MCP_REFRESH_FILE"), Server: get("DELTA_MCP_REFRESH_SERVER"),
		ClientID: get("DELTA_MCP_REFRESH_CLIENT_ID"), Token: get("DELTA_MCP_REFRESH_TOKEN"),
	}
	if r == (MCPRefresh{}) {
		return nil
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"DELTA_MCP_REFRESH_URL", r.URL}, {"DELTA_MCP_REFRESH_FILE", r.File}, {"DELTA_MCP_REFRESH_SERVER", r.Server}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		warn("rotating MCP credential disabled: %s not set", strings.Join(missing, ", "))
		return nil
	}
	for _, s := range servers {
		if s.Name != r.Server {
			continue
		}
		if s.Transport != MCPHTTP {
			warn("rotating MCP credential disabled: DELTA_MCP_REFRESH_SERVER %q is not an http server", r.Server)
			return nil
		}
		for k := range s.Headers {
			if strings.EqualFold(k, "Authorization") {
				warn("MCP server %q has a static Authorization header and the rotating credential: the static header overwrites the rotated token", r.Server)
			}
		}
		return &r
	}
	warn("rotating MCP credential disabled: DELTA_MCP_REFRESH_SERVER %q names no configured MCP server", r.Server)
	return nil
}

func loadVaultKey(lookup func(string) (string, bool), readFile func(string) ([]byte, error), warn func(string, ...any)) string {
	if path, ok := lookup("DELTA_VAULT_KEY_FILE"); ok && strings.TrimSpace(path) != "" {
		b, err := readFile(strings.TrimSpace(path))
		if err != nil {
			warn("DELTA_VAULT_KEY_FILE: cannot read the key (%v): vault disabled", err)
			return ""
		}
		k := strings.TrimSpace(string(b))
		if len(k) < MinVaultKeyLen {
			warn("DELTA_VAULT_KEY_FILE: key shorter than %d characters: vault disabled", MinVaultKeyLen)
			return ""
		}
		return k
	}
	if k, ok := lookup("DELTA_VAULT_KEY"); ok && strings.TrimSpace(k) != "" {
		k = strings.TrimSpace(k)
		if len(k) < MinVaultKeyLen {
			warn("DELTA_VAULT_KEY: key shorter than %d characters: vault disabled", MinVaultKeyLen)
			return ""
		}
		return k
	}
	return ""
}

// childEnv keeps the process plumbing from environ.
func childEnv(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && IsChildPlumbing(k) {
			out[k] = v
		}
	}
	return out
}

// IsChildPlumbing reports whether a variable is process plumbing a stdio
// MCP child may inherit from the daemon.
func IsChildPlumbing(k string) bool {
	switch k {
	case "PATH", "HOME", "SHELL", "TMPDIR", "LANG", "TERM":
		return true
	}
	return strings.HasPrefix(k, "LC_")
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "a non-array value"
}
