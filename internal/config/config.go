// Package config turns the process environment into a typed, validated
// Config. It is the only package in Delta that reads environment variables:
// everything else receives its settings as arguments.
//
// Load takes a lookup function (os.LookupEnv in production, a map in tests)
// so that what the daemon reads is explicit and testable. Every problem is
// reported as a *FieldError naming the variable; several problems are joined
// with errors.Join so an operator fixes them in one pass. The value of a
// secret (a name ending in _KEY, _TOKEN, _SECRET or _AUTH) never appears in
// an error.
//
// Settings fail closed: an unknown DELTA_PROFILE, a negative or non-numeric price, and a garbage budget
// value all refuse to boot, and an exported-but-empty budget variable means
// "unset", not zero.
package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/clip"
)

// Defaults. Vars renders them for the README; Load applies them.
const (
	DefaultPort               = 8080
	DefaultBind               = "127.0.0.1"
	DefaultDB                 = "data/delta.db"
	DefaultWorkspace          = "workspace"
	DefaultMaxConcurrency     = 8
	MinConcurrency            = 1
	MaxConcurrency            = 256
	DefaultModelBaseURL       = "https://openrouter.ai/api/v1"
	DefaultModelPrimary       = "anthropic/claude-sonnet-4.5"
	DefaultUtilityModel       = "anthropic/claude-haiku-4.5"
	DefaultModelTimeout       = 300 * time.Second
	DefaultToolTimeout        = 120 * time.Second
	DefaultToolResultMaxBytes = 20000
	DefaultCompactAtTokens    = 120000
	DefaultPolicyMaxTokens    = 800
	DefaultSelfMaxTokens      = 800
	DefaultPromoteMinRuns     = 2
	DefaultMaxBodyBytes       = 1 << 20
	DefaultLeaseTTL           = 30 * time.Second
	MinLeaseTTL               = 5 * time.Second
)

// Wire formats selected by MODEL_API.
const (
	APIChat      = "chat"      // OpenAI-compatible Chat Completions (any MODEL_API value but the two below)
	APIAnthropic = "anthropic" // native Anthropic Messages
	APIResponses = "responses" // OpenAI Responses
)

// Skills backends selected by DELTA_SKILLS.
const (
	SkillsMCP   = "mcp"   // the skill-registry MCP tools (default)
	SkillsLocal = "local" // skills/<name>/SKILL.md in the workspace
	SkillsOff   = "off"   // no skills, no skill tools, no mention
)

// Config is the daemon's whole environment-derived configuration. The field
// tag `env` names the variable(s) each field comes from; Vars documents them.
type Config struct {
	// Port the HTTP API listens on (PORT, 1–65535, default 8080).
	Port int `env:"PORT"`
	// Bind is the listen address (DELTA_BIND). Default 127.0.0.1, so a new
	// daemon is never reachable from the network by accident; any address
	// other than loopback refuses to load without DELTA_CONTROL_TOKEN.
	Bind string `env:"DELTA_BIND"`
	// DB is the SQLite database path (DELTA_DB, default data/delta.db).
	DB string `env:"DELTA_DB"`
	// Workspace is the agent's workspace directory, which also holds the
	// bundle files (DELTA_WORKSPACE, default workspace).
	Workspace string `env:"DELTA_WORKSPACE"`
	// AgentID is the stable agent identity that scopes local memory
	// (DELTA_AGENT_ID, default none).
	AgentID string `env:"DELTA_AGENT_ID"`
	// Build is the build label reported by /healthz (DELTA_BUILD; empty =
	// omitted).
	Build string `env:"DELTA_BUILD"`
	// MaxConcurrency is how many sessions run at once (DELTA_MAX_CONCURRENCY,
	// default 8, clamped to 1–256; a non-integer is an error).
	MaxConcurrency int `env:"DELTA_MAX_CONCURRENCY"`

	// ModelAPIKey is the primary provider credential: MODEL_API_KEY, else
	// OPENROUTER_API_KEY. A defined-but-empty MODEL_API_KEY suppresses the
	// fallback. OPENAI_API_KEY and ANTHROPIC_API_KEY are never read.
	ModelAPIKey string `env:"MODEL_API_KEY,OPENROUTER_API_KEY"`
	// ModelBaseURL is the primary provider endpoint (MODEL_BASE_URL, default
	// https://openrouter.ai/api/v1; must be an absolute http(s) URL).
	ModelBaseURL string `env:"MODEL_BASE_URL"`
	// ModelAPI is the wire format: APIAnthropic, APIResponses or APIChat
	// (MODEL_API; any other value, or none, selects Chat Completions).
	ModelAPI string `env:"MODEL_API"`
	// ModelPrimary is the main model ID (DELTA_MODEL_PRIMARY, else the legacy
	// DELTA_MODEL, default anthropic/claude-sonnet-4.5).
	ModelPrimary string `env:"DELTA_MODEL_PRIMARY,DELTA_MODEL"`
	// ModelFallbacks are more model IDs tried on the same endpoint
	// (DELTA_MODEL_FALLBACKS, comma-separated, blanks dropped).
	ModelFallbacks []string `env:"DELTA_MODEL_FALLBACKS"`
	// Providers are the DELTA_PROVIDERS fallback endpoints (see
	// ParseProviders); a null or malformed entry is skipped with a warning.
	Providers []ProviderSpec `env:"DELTA_PROVIDERS"`
	// ModelHeaders are extra static headers for the primary only
	// (MODEL_HEADERS); reserved names refuse boot.
	ModelHeaders map[string]string `env:"MODEL_HEADERS"`
	// Broker is the primary's subscription broker (DELTA_BROKER_TOKEN_URL,
	// DELTA_BROKER_AUTH, DELTA_BROKER_ALLOWED_HOSTS).
	Broker BrokerSpec `env:"DELTA_BROKER_TOKEN_URL,DELTA_BROKER_AUTH,DELTA_BROKER_ALLOWED_HOSTS"`
	// ModelTimeout bounds one wire attempt (DELTA_MODEL_TIMEOUT_MS, default
	// 300000; 0 = no timeout).
	ModelTimeout time.Duration `env:"DELTA_MODEL_TIMEOUT_MS"`
	// ModelPrices is the price-override document, trimmed (DELTA_MODEL_PRICES,
	// JSON {"model":{"in","out","cacheRead","cacheWrite"}} in dollars per
	// million tokens). It is kept raw so configuration needs no model types:
	// model.ParsePrices reads it, and the daemon refuses to boot on negative
	// or non-numeric prices.
	ModelPrices string `env:"DELTA_MODEL_PRICES"`
	// ReasoningEffort is the default reasoning effort, trimmed and lowercased
	// (DELTA_REASONING_EFFORT; empty = provider default).
	ReasoningEffort string `env:"DELTA_REASONING_EFFORT"`
	// TextVerbosity is text.verbosity on the native OpenAI Responses lane
	// (DELTA_TEXT_VERBOSITY: low, medium or high; empty = provider default).
	TextVerbosity string `env:"DELTA_TEXT_VERBOSITY"`
	// ReasoningSummary is reasoning.summary on the native OpenAI Responses
	// lane (DELTA_REASONING_SUMMARY: auto; empty = off).
	ReasoningSummary string `env:"DELTA_REASONING_SUMMARY"`
	// UtilityModel serves compaction, reflection and judging
	// (DELTA_UTILITY_MODEL, default anthropic/claude-haiku-4.5; set empty to
	// use the main cascade).
	UtilityModel string `env:"DELTA_UTILITY_MODEL"`

	// ToolTimeout bounds one ordinary tool call (DELTA_TOOL_TIMEOUT_MS,
	// default 120000; 0 = no timeout).
	ToolTimeout time.Duration `env:"DELTA_TOOL_TIMEOUT_MS"`
	// ToolResultMaxBytes is the inline size of a tool result before it spills
	// to a file (DELTA_TOOL_RESULT_MAX_BYTES, default 20000).
	ToolResultMaxBytes int `env:"DELTA_TOOL_RESULT_MAX_BYTES"`
	// ToolArgMaxBytes bounds the stored arguments of a successful tool call
	// on its assistant message; the journal keeps them whole
	// (DELTA_TOOL_ARG_MAX_BYTES, default 0 = off, 4096 recommended).
	ToolArgMaxBytes int `env:"DELTA_TOOL_ARG_MAX_BYTES"`
	// CompactAtTokens is the context dial: a request estimated above it, or
	// a previous call whose real prompt crossed it, compacts the session's
	// older history into a summary first (DELTA_COMPACT_AT_TOKENS, default
	// 120000; at least 4000).
	CompactAtTokens int `env:"DELTA_COMPACT_AT_TOKENS"`
	// VisionModels matches the model IDs that get verified images attached
	// inline (DELTA_VISION_MODELS, a Go regular expression; empty = none;
	// an invalid expression refuses to boot).
	VisionModels *regexp.Regexp `env:"DELTA_VISION_MODELS"`

	// FetchAllowPrivate lets web_fetch reach loopback and private addresses
	// (DELTA_FETCH_ALLOW_PRIVATE, boolean, default off): a development escape.
	FetchAllowPrivate bool `env:"DELTA_FETCH_ALLOW_PRIVATE"`
	// ExaAPIKey enables web_search (EXA_API_KEY; without it the tool is
	// listed as unusable).
	ExaAPIKey string `env:"EXA_API_KEY"`
	// CodeCLI is the coding CLI the code tool runs, split on spaces
	// (DELTA_CODE_CLI; empty = codex exec … with apps and plugins disabled).
	CodeCLI string `env:"DELTA_CODE_CLI"`

	// Profile is the daemon's tier ceiling, ProfileTrusted or ProfileSafe
	// (DELTA_PROFILE; aliases work→trusted, chat→safe; default trusted; any
	// other value refuses to boot).
	Profile string `env:"DELTA_PROFILE"`
	// SafeMode is the recovery boot (DELTA_SAFE_MODE, boolean): the safe
	// tier as ceiling, no code tool, no MCP servers, no vault, and
	// DELTA_ALLOWED_TOOLS ignored, so nothing can widen it.
	SafeMode bool `env:"DELTA_SAFE_MODE"`
	// AllowedTools narrows the tier's tool set to these names
	// (DELTA_ALLOWED_TOOLS, comma-separated; nil = unset). Set but empty or
	// malformed, it is the empty list and ToolFloor is set.
	AllowedTools []string `env:"DELTA_ALLOWED_TOOLS"`
	// ToolFloor means DELTA_ALLOWED_TOOLS was set but empty or malformed:
	// the run gets the safe tier's tools, never everything.
	ToolFloor bool `env:"DELTA_ALLOWED_TOOLS"`
	// PinnedTools are offered every turn beside the built-ins and core-verb
	// MCP tools once a run's envelope passes search.Guardrail
	// (DELTA_PINNED_TOOLS, comma-separated; malformed = none pinned, with a
	// warning). Names outside the envelope are ignored.
	PinnedTools []string `env:"DELTA_PINNED_TOOLS"`
	// MaxSteps overrides the ceiling profile's step budget (DELTA_MAX_STEPS;
	// fractions floored, values below 1 become 1; nil = profile default).
	MaxSteps *int `env:"DELTA_MAX_STEPS"`
	// MaxTokens overrides the ceiling profile's fresh-token budget
	// (DELTA_MAX_TOKENS, integer ≥ 0; nil = profile default).
	MaxTokens *int64 `env:"DELTA_MAX_TOKENS"`
	// MaxCostUSD overrides the ceiling profile's dollar budget
	// (DELTA_MAX_COST_USD, number ≥ 0; nil = profile default).
	MaxCostUSD *float64 `env:"DELTA_MAX_COST_USD"`

	// PolicyMaxTokens caps a custom POLICY.md (DELTA_POLICY_MAX_TOKENS,
	// default 800; over it the daemon refuses to boot).
	PolicyMaxTokens int `env:"DELTA_POLICY_MAX_TOKENS"`
	// SelfMaxTokens caps DELTA.md (DELTA_SELF_MAX_TOKENS, default 800, i.e.
	// a 3,200-byte ceiling at 4 bytes per token).
	SelfMaxTokens int `env:"DELTA_SELF_MAX_TOKENS"`
	// Vocab is raw vocabulary JSON that wins over vocab.json (DELTA_VOCAB);
	// package bundle parses it.
	Vocab string `env:"DELTA_VOCAB"`
	// MemoryNamespace overrides the namespace derived from vocab writeNoun
	// (DELTA_MEMORY_NAMESPACE).
	MemoryNamespace string `env:"DELTA_MEMORY_NAMESPACE"`
	// Reflect turns reflection on for every successful run (DELTA_REFLECT,
	// boolean, default off; metadata.reflect:true turns it on for one run,
	// and a per-run false cannot turn the daemon setting off).
	Reflect bool `env:"DELTA_REFLECT"`
	// Skills is the skills backend (DELTA_SKILLS): SkillsLocal reads
	// skills/<name>/SKILL.md from the workspace, SkillsOff offers no skills
	// and says nothing about them, and SkillsMCP (the default) is the
	// skill-registry MCP backend: a connected server's skill tools, bound
	// only when a skill create, update or propose tool exists. Any other
	// value refuses to boot.
	Skills string `env:"DELTA_SKILLS"`
	// PromoteMinRuns is how many distinct runs the same normalized lesson
	// must come from before it is promoted to the product
	// (DELTA_PROMOTE_MIN_RUNS, default 2, 1–100).
	PromoteMinRuns int `env:"DELTA_PROMOTE_MIN_RUNS"`
	// HydrateTools are product reads called before the first turn of a new
	// session with the run's subject fields plus limit 20
	// (DELTA_HYDRATE_TOOLS, comma-separated tool names; a malformed name
	// drops the list with a warning).
	HydrateTools []string `env:"DELTA_HYDRATE_TOOLS"`
	// HydrateSearchTool is the task-keyed search called at the same moment
	// with q and query set to the task text, the subject fields and limit 8,
	// only for a run that carries metadata.authToken
	// (DELTA_HYDRATE_SEARCH_TOOL; "" = none).
	HydrateSearchTool string `env:"DELTA_HYDRATE_SEARCH_TOOL"`

	// ControlToken is the bearer required on run-driving endpoints
	// (DELTA_CONTROL_TOKEN; empty = open).
	ControlToken string `env:"DELTA_CONTROL_TOKEN"`
	// ControlURL is the scheduling control plane's base URL
	// (DELTA_CONTROL_URL). With ControlToken set too, the daemon offers
	// schedule_create, schedule_list and schedule_cancel against it,
	// presenting ControlToken; with either missing it offers none.
	ControlURL string `env:"DELTA_CONTROL_URL"`
	// InspectToken is the bearer required on inspection endpoints
	// (DELTA_INSPECT_TOKEN; empty = loopback clients only).
	InspectToken string `env:"DELTA_INSPECT_TOKEN"`
	// Inspect enables /dev and the inspection API (DELTA_INSPECT; off, 0,
	// false or no disables).
	Inspect bool `env:"DELTA_INSPECT"`
	// InspectWrite enables the inspection writes: secret rotation and
	// deletion, and restoring a DELTA.md revision (DELTA_INSPECT_WRITE,
	// boolean, default off; delta dev turns it on).
	InspectWrite bool `env:"DELTA_INSPECT_WRITE"`
	// Profiling serves Go's runtime profiles (CPU, heap, goroutines,
	// block, mutex, execution trace) under /v1/dev/pprof/, behind the
	// inspection gate (DELTA_PPROF, boolean, default off).
	Profiling bool `env:"DELTA_PPROF"`
	// CaptureCalls is reported in /v1/status (DELTA_CAPTURE_CALLS, boolean,
	// default off; delta dev turns it on). Storing normalized model calls
	// locally is planned; nothing reads it yet.
	CaptureCalls bool `env:"DELTA_CAPTURE_CALLS"`
	// StrictTenant enforces owner scoping strictly (DELTA_STRICT_TENANT,
	// boolean, default off).
	StrictTenant bool `env:"DELTA_STRICT_TENANT"`
	// TrustReviewMetadata keeps review_kind and widen_authorized in request
	// metadata (DELTA_TRUST_REVIEW_METADATA, boolean, default off: they are
	// stripped, because a shared control token is not proof a reviewer set them).
	TrustReviewMetadata bool `env:"DELTA_TRUST_REVIEW_METADATA"`
	// MaxBodyBytes caps an HTTP request body; larger bodies get 413
	// (DELTA_MAX_BODY_BYTES, default 1 MiB), so no request can make the
	// daemon buffer an unbounded body.
	MaxBodyBytes int64 `env:"DELTA_MAX_BODY_BYTES"`
	// LeaseHolder identifies this process in the single-writer lease
	// (DELTA_LEASE_HOLDER, default FLY_MACHINE_ID, then the host name).
	LeaseHolder string `env:"DELTA_LEASE_HOLDER,FLY_MACHINE_ID"`
	// LeaseTTL is how long the writer lease lasts unrenewed; the daemon
	// renews it every third of that (DELTA_LEASE_TTL_MS, default 30000,
	// values below 5000 raised to 5000).
	LeaseTTL time.Duration `env:"DELTA_LEASE_TTL_MS"`

	// RetentionSweep is how often events and the tool journal are pruned
	// (DELTA_RETENTION_SWEEP_MS, default 3600000; 0 = only at boot).
	RetentionSweep time.Duration `env:"DELTA_RETENTION_SWEEP_MS"`
	// RetentionEventsDays keeps events this long (DELTA_RETENTION_EVENTS_DAYS, default 30).
	RetentionEventsDays int `env:"DELTA_RETENTION_EVENTS_DAYS"`
	// RetentionJournalDays keeps tool-journal rows of finished runs this long
	// (DELTA_RETENTION_JOURNAL_DAYS, default 30); a live run's rows are never pruned.
	RetentionJournalDays int `env:"DELTA_RETENTION_JOURNAL_DAYS"`

	// TelemetryURL turns the telemetry exporter on (TELEMETRY_URL; empty =
	// off): durable events are posted there as NDJSON. Plain http is
	// accepted only for a loopback host unless TelemetryAllowInsecure.
	TelemetryURL string `env:"TELEMETRY_URL"`
	// TelemetryToken is the exporter's bearer (TELEMETRY_TOKEN); when it is
	// absent DELTA_CONTROL_TOKEN is used, with a boot warning.
	TelemetryToken string `env:"TELEMETRY_TOKEN"`
	// TelemetryAllowInsecure accepts a plain-http TELEMETRY_URL on a
	// non-loopback host (TELEMETRY_ALLOW_INSECURE, boolean, default off).
	TelemetryAllowInsecure bool `env:"TELEMETRY_ALLOW_INSECURE"`
	// CapturePayloads exports prompts, tool arguments, tool results and
	// error text too (DELTA_CAPTURE_PAYLOADS, boolean, default off).
	CapturePayloads bool `env:"DELTA_CAPTURE_PAYLOADS"`

	// OTLP turns the OTLP/HTTP trace exporter on when its TracesURL is set
	// (the standard OTEL_EXPORTER_OTLP_* variables): every finished run is
	// sent as one trace.
	OTLP OTLPConfig `env:"OTEL_EXPORTER_OTLP_ENDPOINT,OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,OTEL_EXPORTER_OTLP_HEADERS,OTEL_EXPORTER_OTLP_COMPRESSION,OTEL_EXPORTER_OTLP_CERTIFICATE,OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE,OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE,OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE,OTEL_EXPORTER_OTLP_CLIENT_KEY,OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY,OTEL_SERVICE_NAME,OTEL_RESOURCE_ATTRIBUTES"`

	// SubagentDepth is how deep in spawn_subagent nesting this process runs
	// (DELTA_SUBAGENT_DEPTH, default 0 = top level). The parent sets it on
	// its child; at depth 1 or more spawn_subagent is not offered, so
	// nesting stops at one level.
	SubagentDepth int `env:"DELTA_SUBAGENT_DEPTH"`

	// MCP holds the MCP servers, the refresh credential and the vault key
	// (see LoadMCP); bad entries become Warnings, never a boot failure.
	MCP MCPConfig `env:"DELTA_MCP_SERVERS,DELTA_MCP_REFRESH_URL,DELTA_MCP_REFRESH_FILE,DELTA_MCP_REFRESH_SERVER,DELTA_MCP_REFRESH_CLIENT_ID,DELTA_MCP_REFRESH_TOKEN,DELTA_VAULT_KEY_FILE,DELTA_VAULT_KEY"`

	// Warnings are non-fatal findings, such as removed variables that are
	// still set. The daemon logs them at boot.
	Warnings []string
}

// FieldError is one invalid variable.
type FieldError struct {
	Var   string // the environment variable
	Value string // the offending value; always empty for a secret
	Err   error
}

func (e *FieldError) Error() string {
	if IsSecret(e.Var) || e.Value == "" {
		return e.Var + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s=%q: %v", e.Var, clip.Runes(RedactUserinfo(e.Value), 120), e.Err)
}

// urlPassword matches the password of a URL's userinfo (scheme://user:pw@).
var urlPassword = regexp.MustCompile(`(://[^/?#@:]*):[^/?#@]*@`)

// RedactUserinfo hides the password of a URL-shaped value: a refused
// MODEL_BASE_URL or DELTA_CONTROL_URL (or a CLI's --url) is echoed so the
// operator sees what was read, but a credential in it must not reach a log.
func RedactUserinfo(v string) string {
	return urlPassword.ReplaceAllString(v, "$1:xxxxx@")
}

func (e *FieldError) Unwrap() error { return e.Err }

// IsSecret reports whether a variable holds a credential whose value must
// never be logged or echoed.
func IsSecret(name string) bool {
	return strings.HasSuffix(name, "_KEY") || strings.HasSuffix(name, "_TOKEN") ||
		strings.HasSuffix(name, "_SECRET") || strings.HasSuffix(name, "_AUTH")
}

// ErrInvalid is wrapped by every FieldError about a malformed value, so a
// caller can tell configuration problems from I/O failures.
var ErrInvalid = errors.New("invalid value")

// FromOS loads the configuration from the process environment.
func FromOS() (Config, error) { return Load(os.LookupEnv) }

// ClientTokens returns the bearer tokens a local client command (delta send,
// delta watch) presents: they come from that command's own environment,
// never from a bundle's delta.env.
func ClientTokens(lookup func(string) (string, bool)) (control, inspect string) {
	control, _ = lookup("DELTA_CONTROL_TOKEN")
	inspect, _ = lookup("DELTA_INSPECT_TOKEN")
	return strings.TrimSpace(control), strings.TrimSpace(inspect)
}

// CollectorToken is the bearer `delta collector` requires on ingest
// (DELTA_COLLECTOR_TOKEN, from the collector's own environment; empty =
// none, allowed only on a loopback listen address).
func CollectorToken(lookup func(string) (string, bool)) string {
	v, _ := lookup("DELTA_COLLECTOR_TOKEN")
	return strings.TrimSpace(v)
}

// removedVars were dropped by the five-file bundle; setting one is a
// migration warning, not an error.
var removedVars = []string{
	"DELTA_PLAYBOOK_FILE", "DELTA_STEERING_FILE", "DELTA_CHARTER_FILES",
	"DELTA_CHARTER_TOOL", "DELTA_PLAYBOOK_MAX_TOKENS", "DELTA_STEERING_MAX_TOKENS",
}

// Load reads every variable through lookup, applies defaults and validates.
// On error the returned Config is the zero value.
func Load(lookup func(string) (string, bool)) (Config, error) {
	l := &loader{lookup: lookup}
	c := Config{
		Port:                 l.intRange("PORT", DefaultPort, 1, 65535),
		Bind:                 l.str("DELTA_BIND", DefaultBind),
		DB:                   l.dbTarget("DELTA_DB", DefaultDB),
		Workspace:            l.str("DELTA_WORKSPACE", DefaultWorkspace),
		AgentID:              l.str("DELTA_AGENT_ID", ""),
		Build:                l.str("DELTA_BUILD", ""),
		MaxConcurrency:       l.intClamp("DELTA_MAX_CONCURRENCY", DefaultMaxConcurrency, MinConcurrency, MaxConcurrency),
		ModelAPIKey:          l.apiKey(),
		ModelBaseURL:         l.baseURL("MODEL_BASE_URL", DefaultModelBaseURL),
		ModelAPI:             l.modelAPI("MODEL_API"),
		ModelPrimary:         l.primary(),
		ModelFallbacks:       l.csv("DELTA_MODEL_FALLBACKS"),
		ModelTimeout:         l.millis("DELTA_MODEL_TIMEOUT_MS", DefaultModelTimeout, "0 = no timeout"),
		ModelPrices:          l.str("DELTA_MODEL_PRICES", ""),
		ModelHeaders:         l.modelHeaders("MODEL_HEADERS"),
		Broker:               l.broker(),
		ReasoningEffort:      strings.ToLower(l.str("DELTA_REASONING_EFFORT", "")),
		UtilityModel:         l.utilityModel(),
		TextVerbosity:        l.oneOf("DELTA_TEXT_VERBOSITY", "low", "medium", "high"),
		ReasoningSummary:     l.oneOf("DELTA_REASONING_SUMMARY", "auto"),
		ToolTimeout:          l.millis("DELTA_TOOL_TIMEOUT_MS", DefaultToolTimeout, "0 = no timeout"),
		ToolResultMaxBytes:   l.intRange("DELTA_TOOL_RESULT_MAX_BYTES", DefaultToolResultMaxBytes, 1, 1<<30),
		ToolArgMaxBytes:      l.intRange("DELTA_TOOL_ARG_MAX_BYTES", 0, 0, 1<<30),
		CompactAtTokens:      l.intRange("DELTA_COMPACT_AT_TOKENS", DefaultCompactAtTokens, 4000, 1<<30),
		VisionModels:         l.regexp("DELTA_VISION_MODELS"),
		FetchAllowPrivate:    l.boolean("DELTA_FETCH_ALLOW_PRIVATE"),
		ExaAPIKey:            l.str("EXA_API_KEY", ""),
		CodeCLI:              l.str("DELTA_CODE_CLI", ""),
		Profile:              l.profile("DELTA_PROFILE"),
		SafeMode:             l.boolean("DELTA_SAFE_MODE"),
		MaxSteps:             l.steps("DELTA_MAX_STEPS"),
		MaxTokens:            l.tokens("DELTA_MAX_TOKENS"),
		MaxCostUSD:           l.cost("DELTA_MAX_COST_USD"),
		PolicyMaxTokens:      l.intRange("DELTA_POLICY_MAX_TOKENS", DefaultPolicyMaxTokens, 1, 1<<20),
		SelfMaxTokens:        l.intRange("DELTA_SELF_MAX_TOKENS", DefaultSelfMaxTokens, 1, 1<<18),
		Vocab:                l.str("DELTA_VOCAB", ""),
		MemoryNamespace:      l.str("DELTA_MEMORY_NAMESPACE", ""),
		Reflect:              l.boolean("DELTA_REFLECT"),
		Skills:               l.oneOf("DELTA_SKILLS", SkillsMCP, SkillsLocal, SkillsOff),
		PromoteMinRuns:       l.intRange("DELTA_PROMOTE_MIN_RUNS", DefaultPromoteMinRuns, 1, 100),
		ControlToken:         l.str("DELTA_CONTROL_TOKEN", ""),
		ControlURL:           l.baseURL("DELTA_CONTROL_URL", ""),
		InspectToken:         l.str("DELTA_INSPECT_TOKEN", ""),
		Inspect:              l.inspect("DELTA_INSPECT"),
		InspectWrite:         l.boolean("DELTA_INSPECT_WRITE"),
		Profiling:            l.boolean("DELTA_PPROF"),
		CaptureCalls:         l.boolean("DELTA_CAPTURE_CALLS"),
		StrictTenant:         l.boolean("DELTA_STRICT_TENANT"),
		TrustReviewMetadata:  l.boolean("DELTA_TRUST_REVIEW_METADATA"),
		MaxBodyBytes:         int64(l.intRange("DELTA_MAX_BODY_BYTES", DefaultMaxBodyBytes, 1, 1<<40)),
		LeaseHolder:          l.leaseHolder(),
		LeaseTTL:             max(l.millis("DELTA_LEASE_TTL_MS", DefaultLeaseTTL, fmt.Sprintf("below %d becomes %d", MinLeaseTTL.Milliseconds(), MinLeaseTTL.Milliseconds())), MinLeaseTTL),
		RetentionSweep:       l.millis("DELTA_RETENTION_SWEEP_MS", time.Hour, "0 = only at boot"),
		RetentionEventsDays:  l.intRange("DELTA_RETENTION_EVENTS_DAYS", 30, 1, 36500),
		RetentionJournalDays: l.intRange("DELTA_RETENTION_JOURNAL_DAYS", 30, 1, 36500),
		SubagentDepth:        l.intRange("DELTA_SUBAGENT_DEPTH", 0, 0, MaxSubagentDepth),
	}
	if c.ControlToken == "" && !loopbackHost(c.Bind) {
		l.fail("DELTA_BIND", c.Bind, "listening beyond loopback needs DELTA_CONTROL_TOKEN, or anyone who reaches the port can start runs; set DELTA_CONTROL_TOKEN, or bind 127.0.0.1")
	}
	c.TelemetryAllowInsecure = l.boolean("TELEMETRY_ALLOW_INSECURE")
	c.TelemetryURL = l.telemetryURL("TELEMETRY_URL", c.TelemetryAllowInsecure)
	c.TelemetryToken = l.str("TELEMETRY_TOKEN", "")
	c.CapturePayloads = l.boolean("DELTA_CAPTURE_PAYLOADS")
	c.OTLP = l.otlp(c.TelemetryAllowInsecure)
	if c.TelemetryURL != "" && c.TelemetryToken == "" && c.ControlToken != "" {
		c.TelemetryToken = c.ControlToken
		c.Warnings = append(c.Warnings, "TELEMETRY_TOKEN is not set: the exporter presents DELTA_CONTROL_TOKEN to the collector, which sends a control credential off the box; give the collector a dedicated TELEMETRY_TOKEN")
	}
	c.Warnings = append(c.Warnings, controlWarnings(c.ControlURL, c.ControlToken)...)
	c.AllowedTools, c.ToolFloor = l.toolList("DELTA_ALLOWED_TOOLS", &c.Warnings)
	c.PinnedTools, _ = l.toolList("DELTA_PINNED_TOOLS", &c.Warnings)
	c.HydrateTools, c.HydrateSearchTool = l.hydrateTools("DELTA_HYDRATE_TOOLS", "DELTA_HYDRATE_SEARCH_TOOL", &c.Warnings)
	if c.SafeMode {
		// Safe mode cannot be widened: the ceiling is safe whatever
		// DELTA_PROFILE says, and the allowlist is not consulted.
		c.Profile = ProfileSafe
		if c.AllowedTools != nil {
			c.Warnings = append(c.Warnings, "DELTA_SAFE_MODE=1: DELTA_ALLOWED_TOOLS is ignored")
		}
		c.AllowedTools, c.ToolFloor = nil, false
	}
	if c.Skills == "" {
		c.Skills = SkillsMCP
	}
	var pw []string
	c.Providers, pw = l.providers("DELTA_PROVIDERS")
	c.Warnings = append(c.Warnings, pw...)
	c.MCP = LoadMCP(lookup, os.Environ(), os.ReadFile)
	c.Warnings = append(c.Warnings, c.MCP.Warnings...)
	for _, name := range removedVars {
		if _, ok := lookup(name); ok {
			c.Warnings = append(c.Warnings, fmt.Sprintf(
				"%s is no longer read: the five-file bundle (DELTA.md, POLICY.md, PROMPT_CONTEXT.md, vocab.json, delta.env) replaces it", name))
		}
	}
	if len(l.errs) > 0 {
		return Config{}, errors.Join(l.errs...)
	}
	return c, nil
}
