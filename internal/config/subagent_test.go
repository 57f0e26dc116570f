package config

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSubagentEnvIsDefaultDeny: the child's environment carries the
// allowlisted provider and run settings and none of the parent's secrets.
func TestSubagentEnvIsDefaultDeny(t *testing.T) {
	canaries := map[string]string{
		"DELTA_CONTROL_TOKEN": "canary-control", "DELTA_INSPECT_TOKEN": "canary-inspect",
		"EXA_API_KEY": "canary-exa", "DELTA_VAULT_KEY": "canary-vault-key-0123456789",
		"OPENROUTER_API_KEY": "canary-openrouter", "OPENAI_API_KEY": "canary-openai",
		"DELTA_MCP_SERVERS":      `[{"name":"canary-mcp","command":["x"]}]`,
		"MODEL_HEADERS":          `{"X-Canary":"canary-header"}`,
		"DELTA_BROKER_TOKEN_URL": "https://canary-broker.example/mint", "DELTA_BROKER_AUTH": "canary-broker-auth",
		"DELTA_MODEL_PRICES": `{"m":{"in":1,"out":1}}`, "DELTA_CODE_CLI": "canary-cli", "DELTA_AGENT_ID": "canary-agent",
		"DELTA_REASONING_EFFORT": "high",
	}
	vars := map[string]string{
		"MODEL_API_KEY": "the-primary-key", "MODEL_BASE_URL": "http://127.0.0.1:9/v1", "MODEL_API": "responses",
		"DELTA_MODEL_PRIMARY": "p/model", "DELTA_MODEL_FALLBACKS": "f/one, f/two", "DELTA_WORKSPACE": "/srv/ws",
		"DELTA_SELF_MAX_TOKENS": "800", "DELTA_SKILLS": "local",
	}
	for k, v := range canaries {
		vars[k] = v
	}
	cfg, err := Load(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range cfg.SubagentEnv() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
		if strings.Contains(strings.ToLower(v), "canary") {
			t.Errorf("child env %s carries a parent secret or setting", k)
		}
	}
	for k := range canaries {
		if _, ok := env[k]; ok {
			t.Errorf("child env has %s", k)
		}
	}
	want := map[string]string{
		"MODEL_API_KEY": "the-primary-key", "MODEL_BASE_URL": "http://127.0.0.1:9/v1", "MODEL_API": "responses",
		"DELTA_MODEL_PRIMARY": "p/model", "DELTA_MODEL": "p/model", "DELTA_MODEL_FALLBACKS": "f/one,f/two",
		"DELTA_WORKSPACE": "/srv/ws", "DELTA_PROFILE": "trusted", "DELTA_UTILITY_MODEL": DefaultUtilityModel,
		"DELTA_MODEL_TIMEOUT_MS": "300000", "DELTA_TOOL_RESULT_MAX_BYTES": "20000",
		"DELTA_SELF_MAX_TOKENS": "800", "DELTA_POLICY_MAX_TOKENS": strconv.Itoa(DefaultPolicyMaxTokens), "DELTA_SKILLS": "local",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("child env %s = %q, want %q", k, env[k], v)
		}
	}
	for k := range env {
		plumbing := k == "PATH" || k == "HOME" || k == "SHELL" || k == "TMPDIR" || k == "LANG" || k == "TERM" || strings.HasPrefix(k, "LC_")
		if _, ok := want[k]; !ok && !plumbing {
			t.Errorf("child env has unexpected %s", k)
		}
	}
}

func TestSubagentDepth(t *testing.T) {
	for _, tc := range []struct {
		val     string
		want    int
		wantErr bool
	}{{"", 0, false}, {"1", 1, false}, {"-1", 0, true}, {"x", 0, true}, {"99", 0, true}} {
		cfg, err := Load(func(k string) (string, bool) {
			if k == "DELTA_SUBAGENT_DEPTH" {
				return tc.val, true
			}
			return "", false
		})
		if (err != nil) != tc.wantErr || (err == nil && cfg.SubagentDepth != tc.want) {
			t.Errorf("DELTA_SUBAGENT_DEPTH=%q: depth %d, err %v", tc.val, cfg.SubagentDepth, err)
		}
	}
}

// A parent on the MCP skill registry gives its child no skills backend: the
// child never gets the MCP servers the registry lives on.
func TestSubagentEnvSkillsOffUnlessLocal(t *testing.T) {
	cfg, err := Load(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range cfg.SubagentEnv() {
		if v, ok := strings.CutPrefix(kv, "DELTA_SKILLS="); ok && v != SkillsOff {
			t.Fatalf("child DELTA_SKILLS = %q under the MCP default, want off", v)
		}
	}
	if !slices.Contains(cfg.SubagentEnv(), "DELTA_SKILLS="+SkillsOff) {
		t.Fatal("child env lacks DELTA_SKILLS=off")
	}
}
