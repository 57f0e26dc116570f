package config

import (
	"path/filepath"
	"strconv"
	"strings"
)

// MaxSubagentDepth bounds DELTA_SUBAGENT_DEPTH; only depth 0 spawns, so
// anything above 1 means a hand-set value.
const MaxSubagentDepth = 8

// SubagentEnv is the default-deny environment a spawn_subagent child starts
// with: process plumbing (PlumbingEnv) plus the primary provider and run
// settings it needs, and one static primary key as MODEL_API_KEY. Values come
// from c, not from the environment again, so the child runs what the parent
// resolved. The operator's DELTA_ALLOWED_TOOLS goes along, so the child
// narrows as the parent does. The caller appends the remaining budgets and
// the child's depth.
//
// Deliberately absent: MCP servers and refresh credentials, the vault key,
// the Exa key, control and inspect tokens, the broker, fallback providers,
// MODEL_HEADERS, custom prices, reasoning settings, the code CLI and the
// agent ID. A broker-only parent therefore cannot power a child.
// DELTA_SKILLS is local when the parent's is, off otherwise.
func (c Config) SubagentEnv() []string {
	ws := c.Workspace
	if abs, err := filepath.Abs(ws); err == nil {
		ws = abs
	}
	env := PlumbingEnv()
	add := func(k, v string) { env = append(env, k+"="+v) }
	add("MODEL_BASE_URL", c.ModelBaseURL)
	add("MODEL_API", c.ModelAPI)
	add("DELTA_MODEL_PRIMARY", c.ModelPrimary)
	add("DELTA_MODEL", c.ModelPrimary)
	if len(c.ModelFallbacks) > 0 {
		add("DELTA_MODEL_FALLBACKS", strings.Join(c.ModelFallbacks, ","))
	}
	// Set even when empty: an empty utility model means "use the main cascade".
	add("DELTA_UTILITY_MODEL", c.UtilityModel)
	if c.Profile != "" {
		add("DELTA_PROFILE", c.Profile)
	}
	// The operator's allowlist holds for the child too: delegating must not
	// hand a task the tools the parent was denied. A floor allowlist never
	// gets here, since the safe floor offers no delegation tool.
	if c.AllowedTools != nil && !c.ToolFloor {
		add("DELTA_ALLOWED_TOOLS", strings.Join(c.AllowedTools, ","))
	}
	add("DELTA_MODEL_TIMEOUT_MS", strconv.FormatInt(c.ModelTimeout.Milliseconds(), 10))
	if c.ToolResultMaxBytes > 0 {
		add("DELTA_TOOL_RESULT_MAX_BYTES", strconv.Itoa(c.ToolResultMaxBytes))
	}
	// The child reads the same DELTA.md and POLICY.md from the shared
	// workspace: it shows them within the same limits as the parent.
	add("DELTA_SELF_MAX_TOKENS", strconv.Itoa(c.SelfMaxTokens))
	add("DELTA_POLICY_MAX_TOKENS", strconv.Itoa(c.PolicyMaxTokens))
	// Local skills live in the shared workspace, so the child can read them
	// too; the MCP registry needs the MCP servers a child never gets.
	if c.Skills == SkillsLocal {
		add("DELTA_SKILLS", SkillsLocal)
	} else {
		add("DELTA_SKILLS", SkillsOff)
	}
	// Always defined, even empty, so the child never falls back to an
	// OPENROUTER_API_KEY of its own.
	add("MODEL_API_KEY", c.ModelAPIKey)
	add("DELTA_WORKSPACE", ws)
	return env
}
