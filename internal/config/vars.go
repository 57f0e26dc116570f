package config

import (
	"fmt"
	"strconv"
)

// VarDoc documents one environment variable for the README table.
type VarDoc struct {
	Name    string
	Default string // "" = none
	Doc     string // one line
}

// Vars lists every variable Load reads, in Config field order, then those
// only `delta entrypoint` (LoadEntrypoint), `delta smoke` (LoadSmoke) and `delta scheduler` (LoadScheduler)
// read. It is the single source of truth for the README's configuration
// table; a test checks that every Config field's variables appear here and
// that the loaders together read exactly these.
func Vars() []VarDoc {
	ms := func(d interface{ Milliseconds() int64 }) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return []VarDoc{
		{"PORT", strconv.Itoa(DefaultPort), "HTTP port, 1–65535 (delta dev: --port or a free port)."},
		{"DELTA_BIND", DefaultBind, "Listen address. Loopback by default; any other address refuses to boot without DELTA_CONTROL_TOKEN (set DELTA_INSPECT_TOKEN too for remote inspection)."},
		{"DELTA_DB", DefaultDB, "SQLite database path (delta dev: <bundle>/.delta/delta.db). Or a PostgreSQL URL (postgres://…): the daemon is then one of several workers sharing that database (per-session leases; every worker must use the same DELTA_WORKSPACE). Other URLs are refused."},
		{"DELTA_WORKSPACE", DefaultWorkspace, "Workspace directory holding the bundle files (delta dev: the bundle directory)."},
		{"DELTA_AGENT_ID", "", "Stable agent identity; scopes local memory. Keep it for the life of the agent."},
		{"DELTA_BUILD", "", "Build label reported by /healthz; omitted when unset."},
		{"DELTA_MAX_CONCURRENCY", strconv.Itoa(DefaultMaxConcurrency), "Sessions run at once, clamped to 1–256; a non-integer refuses to boot."},
		{"MODEL_API_KEY", "", "Primary provider credential; wins over OPENROUTER_API_KEY even when set empty."},
		{"OPENROUTER_API_KEY", "", "Fallback credential when MODEL_API_KEY is not defined. OPENAI_API_KEY and ANTHROPIC_API_KEY are never read."},
		{"MODEL_BASE_URL", DefaultModelBaseURL, "Primary provider endpoint (absolute http or https URL)."},
		{"MODEL_API", APIChat, "Wire format: anthropic, responses, anything else = Chat Completions."},
		{"DELTA_MODEL_PRIMARY", DefaultModelPrimary, "Main model ID."},
		{"DELTA_MODEL", "", "Legacy alias of DELTA_MODEL_PRIMARY, used only when the primary is unset."},
		{"DELTA_MODEL_FALLBACKS", "", "Comma-separated model IDs tried next on the same endpoint."},
		{"DELTA_PROVIDERS", "", `Fallback endpoints, JSON array: [{"baseUrl","models","api","label","apiKey","apiKeyEnv","brokerMintUrl","brokerAuthEnv"}]; bad entries skipped with a warning.`},
		{"MODEL_HEADERS", "", "JSON object of extra static headers for the primary only; auth, account, protocol, cookie and hop-by-hop names refuse boot."},
		{"DELTA_BROKER_TOKEN_URL", "", "Subscription broker mint URL (GET; https except loopback). Turns the primary into codex-sign-in."},
		{"DELTA_BROKER_AUTH", "", "Bearer presented to the broker."},
		{"DELTA_BROKER_ALLOWED_HOSTS", DefaultBrokerAllowedHost, "Exact HTTPS hosts that may receive subscription tokens, comma-separated."},
		{"DELTA_MODEL_TIMEOUT_MS", ms(DefaultModelTimeout), "Timeout of one model wire attempt in ms; 0 = none."},
		{"DELTA_MODEL_PRICES", "", `Price overrides, $/M tokens: {"model":{"in":2,"out":10,"cacheRead":0.2,"cacheWrite":2.5}}; negative or non-numeric refuses to boot.`},
		{"DELTA_REASONING_EFFORT", "", "Default reasoning effort (trimmed, lowercased); empty = provider default."},
		{"DELTA_TEXT_VERBOSITY", "", "text.verbosity (low, medium, high) on the native OpenAI Responses lane; reported as unmapped elsewhere."},
		{"DELTA_REASONING_SUMMARY", "", "reasoning.summary (auto) on the native OpenAI Responses lane; reported as unmapped elsewhere."},
		{"DELTA_UTILITY_MODEL", DefaultUtilityModel, "Model for compaction, reflection and judging; set empty to use the main cascade."},
		{"DELTA_TOOL_TIMEOUT_MS", ms(DefaultToolTimeout), "Timeout of one ordinary tool call in ms; 0 = none."},
		{"DELTA_TOOL_RESULT_MAX_BYTES", strconv.Itoa(DefaultToolResultMaxBytes), "Tool result size kept inline; larger results spill to a file."},
		{"DELTA_TOOL_ARG_MAX_BYTES", "0", "Ceiling on a successful call's stored arguments (largest values shrunk first; the journal keeps them whole); 0 = off, 4096 recommended."},
		{"DELTA_COMPACT_AT_TOKENS", strconv.Itoa(DefaultCompactAtTokens), "Context dial in tokens: a larger request (estimated from its serialized bytes) or a previous prompt past it compacts older history first; the reply's reserve (4096) and the summary's room (4096) each shrink to an eighth of a dial under 32768; at least 4000, and a dial the system prompt and the offered tools' schemas leave no room under refuses to boot, naming the smallest that works."},
		{"DELTA_VISION_MODELS", "", "Regular expression of model IDs that receive verified images inline (up to 4, each under 3.4 MB); empty = none; invalid refuses boot."},
		{"DELTA_FETCH_ALLOW_PRIVATE", "off", "web_fetch may reach loopback and private addresses (development only)."},
		{"EXA_API_KEY", "", "Exa key for web_search; without it the tool is listed as unusable."},
		{"DELTA_CODE_CLI", "codex exec --sandbox workspace-write --skip-git-repo-check --disable apps --disable plugins", "Coding CLI for the code tool, split on spaces; an explicit value is used verbatim."},
		{"DELTA_RETENTION_SWEEP_MS", "3600000", "Period of the events and journal retention sweep; it also runs at boot. 0 = only at boot."},
		{"DELTA_RETENTION_EVENTS_DAYS", "30", "Days events are kept."},
		{"DELTA_RETENTION_JOURNAL_DAYS", "30", "Days tool-journal rows of finished runs are kept (a live run's rows are never pruned)."},
		{"TELEMETRY_URL", "", "Collector endpoint; setting it turns the NDJSON telemetry exporter on. Plain http only to a loopback host unless TELEMETRY_ALLOW_INSECURE=1."},
		{"TELEMETRY_TOKEN", "", "Bearer the exporter presents; when unset DELTA_CONTROL_TOKEN is used, with a boot warning."},
		{"TELEMETRY_ALLOW_INSECURE", "off", "Boolean: accept a plain-http TELEMETRY_URL on a non-loopback host."},
		{"DELTA_CAPTURE_PAYLOADS", "off", "Boolean: the exporter also ships tool arguments, tool results (their 200-character preview), error text and the tool-call count; off, only the operational attributes leave."},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "", "OTLP/HTTP base URL (http or https); setting it turns the trace exporter on and traces go to <endpoint>/v1/traces. Plain http with OTEL_EXPORTER_OTLP_HEADERS only to a loopback host unless TELEMETRY_ALLOW_INSECURE=1."},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "OTLP/HTTP traces URL used as is; wins over OTEL_EXPORTER_OTLP_ENDPOINT and also turns the trace exporter on."},
		{"OTEL_EXPORTER_OTLP_HEADERS", "", "Headers sent with every OTLP request, key=value pairs separated by commas, values percent-encoded (e.g. Authorization=Bearer%20…); never logged or shown."},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "none", "gzip compresses OTLP request bodies (less bandwidth, more CPU on the box); none or gzip, anything else refuses to boot."},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", "", "PEM file of the CA certificates the OTLP exporter trusts instead of the system's; read at boot, a bad file refuses to boot."},
		{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "", "Wins over OTEL_EXPORTER_OTLP_CERTIFICATE."},
		{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "", "PEM file of the client certificate the OTLP exporter presents (with OTEL_EXPORTER_OTLP_CLIENT_KEY)."},
		{"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "", "Wins over OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE."},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "", "PEM file of the client certificate's private key."},
		{"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "", "Wins over OTEL_EXPORTER_OTLP_CLIENT_KEY."},
		{"OTEL_SERVICE_NAME", "delta", "service.name of the exported traces; wins over a service.name in OTEL_RESOURCE_ATTRIBUTES."},
		{"OTEL_RESOURCE_ATTRIBUTES", "", "Extra resource attributes of the exported traces, key=value pairs separated by commas, values percent-encoded."},
		{"DELTA_MCP_SERVERS", "", `MCP servers, JSON array of {name, command/args/env (stdio) or url/headers (http), transport}; bad entries skipped with a warning.`},
		{"DELTA_MCP_REFRESH_URL", "", "OAuth2 token endpoint for the one rotating MCP credential (refresh_token grant). A redirect it answers is not followed (the grant fails naming where it pointed), so the refresh token is sent nowhere else."},
		{"DELTA_MCP_REFRESH_FILE", "", "File holding the rotating refresh token; authoritative, rewritten atomically."},
		{"DELTA_MCP_REFRESH_SERVER", "", "Name of the MCP server that uses the rotating credential."},
		{"DELTA_MCP_REFRESH_CLIENT_ID", "", "Optional OAuth2 client_id for the refresh grant."},
		{"DELTA_MCP_REFRESH_TOKEN", "", "Initial refresh token, used only to seed an absent refresh file."},
		{"DELTA_VAULT_KEY_FILE", "", "File with the vault key material (preferred); enables the secret vault."},
		{"DELTA_VAULT_KEY", "", "Vault key material, at least 16 characters, when no key file is given."},
		{"DELTA_PROFILE", ProfileTrusted, "Tier ceiling: trusted or safe (aliases work, chat); any other value refuses to boot."},
		{"DELTA_SAFE_MODE", "off", "Boolean: recovery boot — safe tier ceiling, no code tool, no MCP servers, no vault; DELTA_ALLOWED_TOOLS ignored; status safe_mode:true."},
		{"DELTA_ALLOWED_TOOLS", "", "Comma-separated tool names intersected with the tier's set (narrows only); set but empty or malformed = the safe tool floor."},
		{"DELTA_PINNED_TOOLS", "", "Comma-separated tools offered every turn, beside the built-ins and vocab core-verb MCP tools, once a run may call more than 60 tools (a smaller set is offered whole; the rest wait for search_tools). Names the run may not call are ignored; a pinned set over 60 falls back to built-ins plus core verbs with a warning. /v1/status shows pinned, pinning_effective and resident."},
		{"DELTA_MAX_STEPS", profileDoc(func(b Budget) string { return strconv.Itoa(b.Steps) }), "Step budget override: fractions floor, below 1 becomes 1; empty = profile default."},
		{"DELTA_MAX_TOKENS", profileDoc(func(b Budget) string { return strconv.FormatInt(b.Tokens, 10) }), "Fresh-token budget override, integer ≥ 0; empty = profile default."},
		{"DELTA_MAX_COST_USD", profileDoc(func(b Budget) string { return strconv.FormatFloat(b.CostUSD, 'f', -1, 64) }), "Model-dollar budget override, ≥ 0; empty = profile default."},
		{"DELTA_POLICY_MAX_TOKENS", strconv.Itoa(DefaultPolicyMaxTokens), "Token cap of a custom POLICY.md (≈4 bytes/token); over it the daemon refuses to boot."},
		{"DELTA_SELF_MAX_TOKENS", strconv.Itoa(DefaultSelfMaxTokens), "Token cap of DELTA.md; the byte ceiling is 4× (3,200 bytes by default)."},
		{"DELTA_VOCAB", "", "Vocabulary JSON that wins over vocab.json; malformed falls back to neutral defaults."},
		{"DELTA_MEMORY_NAMESPACE", "", "Memory namespace; default derived from the vocabulary's writeNoun."},
		{"DELTA_REFLECT", "off", "Boolean: reflect after every successful run (one lesson at most, on the utility lane, after the response is released; metadata.reflect:true does it for one run). Durable: owed reflections survive a crash."},
		{"DELTA_SKILLS", SkillsMCP, "Skills backend: local reads skills/<name>/SKILL.md from the workspace (skill_search, skill_get, a directory block per attempt; found without a restart); off offers none and never mentions them; mcp binds a connected server's skill registry only when it has a skill create, update or propose tool (search {limit:25}, get {name}; a capability block per attempt, 20 s wait; reflected procedures are promoted to it). Any other value refuses to boot."},
		{"DELTA_PROMOTE_MIN_RUNS", strconv.Itoa(DefaultPromoteMinRuns), "Distinct runs the same lowercased, whitespace-normalized lesson must come from before it is promoted to the product (facts, preferences, pitfalls to the writeVerbSuffix tool; procedures to the skill registry); 1–100. User memory is never promoted."},
		{"DELTA_HYDRATE_TOOLS", "", "Comma-separated MCP tool names (<server>__<tool>) read before the first turn of a new session, each called with the run's subject fields (metadata keys named by vocab subjectKeys, as k, k_id or kId) plus limit: 20, only when the run's metadata has one. Results become one user-role block framed as untrusted data (at most 16,000 characters with the search; 20 s wait). Configure read-only tools: hydration bypasses the tool journal. A malformed name drops the list with a warning."},
		{"DELTA_HYDRATE_SEARCH_TOOL", "", "MCP tool called at the same moment with q and query (the task text, trimmed and clipped to 500 characters, at least two non-space characters), the subject fields and limit: 8; only for a run that carries metadata.authToken, which its HTTP MCP call presents as the bearer."},
		{"DELTA_CONTROL_TOKEN", "", "Bearer token required on run-driving endpoints; empty = open. Also the bearer the schedule tools present to DELTA_CONTROL_URL, and the one delta scheduler requires."},
		{"DELTA_CONTROL_URL", "", "Scheduling control plane base URL (e.g. delta scheduler's); with DELTA_CONTROL_TOKEN set too the agent gets schedule_create, schedule_list and schedule_cancel (15 s per call, the token as bearer)."},
		{"DELTA_INSPECT_TOKEN", "", "Bearer token required on inspection endpoints (/dev, /v1/dev/*); a browser trades it for an 8-hour session cookie at POST /v1/dev/session (the /dev sign-in form). Empty = loopback clients only, others get 403."},
		{"DELTA_INSPECT", "on", "Set off to remove /dev and the inspection API."},
		{"DELTA_INSPECT_WRITE", "off", "Boolean: allow the inspection writes: cancelling runs (/v1/dev/runs/{id}/cancel), rotating and deleting vault secrets (/v1/dev/secrets), restoring a DELTA.md revision (/v1/dev/revisions/{id}/restore) and editing workspace files from the Cockpit (PUT /v1/dev/files; .delta and secrets files are always refused) (delta dev: on)."},
		{"DELTA_PPROF", "off", "Boolean: serve Go runtime profiles (CPU, heap, allocs, goroutines, block, mutex, execution trace) under /v1/dev/pprof/, behind the inspection gate. Off, the route answers 404."},
		{"DELTA_CAPTURE_CALLS", "off", "Boolean (delta dev: on): store each successfully served main-loop model call, normalized before the wire (system spine, messages, per-turn blocks, tool schemas, effort; images as markers) with its response, usage, cost and latency, in the calls table with its checkpoint. Read through /v1/dev/runs/{id}/calls, redacted on read; the database keeps full prompts and nothing prunes the table. Reported in /v1/status."},
		{"DELTA_STRICT_TENANT", "off", "Boolean: enforce owner scoping strictly."},
		{"DELTA_TRUST_REVIEW_METADATA", "off", "Boolean: keep review_kind and widen_authorized in request metadata (stripped by default)."},
		{"DELTA_MAX_BODY_BYTES", strconv.Itoa(DefaultMaxBodyBytes), "HTTP request body cap; larger bodies get 413."},
		{"DELTA_LEASE_HOLDER", "", "Single-writer lease holder ID; default FLY_MACHINE_ID, then the host name. On a PostgreSQL DELTA_DB it opens the worker's session-lease name (with the pid and a random suffix)."},
		{"FLY_MACHINE_ID", "", "Read only as the default lease holder."},
		{"DELTA_SUBAGENT_DEPTH", "0", "Delegation nesting depth, set by the parent on its child (0–8); at 1 or more spawn_subagent, eval_n and research are not offered."},
		{"DELTA_LEASE_TTL_MS", ms(DefaultLeaseTTL), "Writer lease lifetime in ms, renewed every third of it; values below 5000 become 5000. On a PostgreSQL DELTA_DB the lifetime of each session lease: a dead worker's runs resume elsewhere after it."},
		{"DELTA_SELF_MD_B64", "", "delta entrypoint: base64 of DELTA.md, written into DELTA_WORKSPACE only when the file is absent; malformed is skipped with a warning."},
		{"DELTA_POLICY_MD_B64", "", "delta entrypoint: base64 of POLICY.md, written only when absent."},
		{"DELTA_CONTEXT_MD_B64", "", "delta entrypoint: base64 of PROMPT_CONTEXT.md, written only when absent."},
		{"DELTA_VOCAB_JSON_B64", "", "delta entrypoint: base64 of vocab.json, written only when absent. delta.env is never seeded."},
		{"LITESTREAM_CONFIG", DefaultLitestreamConfig, "delta entrypoint: Litestream configuration; used when the file exists, and a named file that is missing refuses to start. It must list DELTA_DB."},
		{"LITESTREAM_REPLICA_URL", "", "delta entrypoint: Litestream replica URL for DELTA_DB when there is no configuration file (1 s sync, 1 h snapshots, 168 h retention)."},
		{"DELTA_BOOTSTRAP", "off", "delta entrypoint, boolean: with backup configured and no local database, start empty instead of restoring (a genuine first boot against an empty replica). Remove it once the database exists."},
		{"DELTA_URL", "", "delta smoke: base URL of the daemon to check (http or https); delta scheduler: the daemon firings are posted to (default " + DefaultDaemonURL + ")."},
		{"SMOKE_INPUT", "", "delta smoke: the task text of the acceptance run; empty = a short built-in task."},
		{"DELTA_SCHEDULER_DB", DefaultSchedulerDB, "delta scheduler: its own SQLite file of schedules and firings (--db)."},
		{"DELTA_SCHEDULER_LISTEN", DefaultSchedulerListen, "delta scheduler: listen address (--listen); a non-loopback address requires DELTA_CONTROL_TOKEN."},
		{"DELTA_SCHEDULER_DAEMON_TOKEN", "", "delta scheduler: the daemon's control token it fires with; default DELTA_CONTROL_TOKEN."},
		{"SMOKE_TOOL", "", "delta smoke: a required tool (e.g. an MCP tool) that /v1/dev/config must list and the run must call."},
	}
}

func profileDoc(f func(Budget) string) string {
	return fmt.Sprintf("trusted %s / safe %s", f(profileBudgets[ProfileTrusted]), f(profileBudgets[ProfileSafe]))
}
