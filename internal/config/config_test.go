package config

import (
	"errors"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func mapLookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func mustLoad(t *testing.T, m map[string]string) Config {
	t.Helper()
	c, err := Load(mapLookup(m))
	if err != nil {
		t.Fatalf("Load(%v): %v", m, err)
	}
	return c
}

func TestLoadDefaults(t *testing.T) {
	c := mustLoad(t, map[string]string{"FLY_MACHINE_ID": "m1"})
	want := Config{
		Port: 8080, Bind: "127.0.0.1", DB: "data/delta.db", Workspace: "workspace",
		MaxConcurrency: 8, ModelBaseURL: "https://openrouter.ai/api/v1", ModelAPI: APIChat,
		ModelPrimary: "anthropic/claude-sonnet-4.5", UtilityModel: "anthropic/claude-haiku-4.5",
		ModelTimeout: 300 * time.Second, ToolTimeout: 120 * time.Second, ToolResultMaxBytes: 20000, CompactAtTokens: 120000,
		Profile: ProfileTrusted, PolicyMaxTokens: 800, SelfMaxTokens: 800, Inspect: true, Skills: SkillsMCP, PromoteMinRuns: 2,
		MaxBodyBytes: 1 << 20, LeaseHolder: "m1", LeaseTTL: 30 * time.Second, Broker: BrokerSpec{AllowedHosts: []string{DefaultBrokerAllowedHost}},
		RetentionSweep: time.Hour, RetentionEventsDays: 30, RetentionJournalDays: 30, OTLP: OTLPConfig{ServiceName: DefaultOTLPServiceName},
	}
	c.MCP.ChildEnv = nil // the process plumbing of whoever runs the test
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if got := c.Budget(""); got != (Budget{Steps: 100, Tokens: 2_000_000, CostUSD: 5}) {
		t.Fatalf("default budget = %+v", got)
	}
}

func TestLoadValues(t *testing.T) {
	i := func(n int) *int { return &n }
	i64 := func(n int64) *int64 { return &n }
	f := func(n float64) *float64 { return &n }
	for _, tt := range []struct {
		name string
		env  map[string]string
		got  func(Config) any
		want any
	}{
		{"port", map[string]string{"PORT": " 9090 "}, func(c Config) any { return c.Port }, 9090},
		{"empty port is default", map[string]string{"PORT": ""}, func(c Config) any { return c.Port }, 8080},
		{"bind", map[string]string{"DELTA_BIND": "0.0.0.0", "DELTA_CONTROL_TOKEN": "t"}, func(c Config) any { return c.Bind }, "0.0.0.0"},
		{"loopback bind needs no token", map[string]string{"DELTA_BIND": "::1"}, func(c Config) any { return c.Bind }, "::1"},
		{"localhost bind needs no token", map[string]string{"DELTA_BIND": "localhost"}, func(c Config) any { return c.Bind }, "localhost"},
		{"concurrency", map[string]string{"DELTA_MAX_CONCURRENCY": "3"}, func(c Config) any { return c.MaxConcurrency }, 3},
		{"concurrency clamp low", map[string]string{"DELTA_MAX_CONCURRENCY": "0"}, func(c Config) any { return c.MaxConcurrency }, 1},
		{"concurrency clamp negative", map[string]string{"DELTA_MAX_CONCURRENCY": "-9"}, func(c Config) any { return c.MaxConcurrency }, 1},
		{"concurrency clamp high", map[string]string{"DELTA_MAX_CONCURRENCY": "1000"}, func(c Config) any { return c.MaxConcurrency }, 256},
		{"model key wins", map[string]string{"MODEL_API_KEY": "a", "OPENROUTER_API_KEY": "b"}, func(c Config) any { return c.ModelAPIKey }, "a"},
		{"openrouter fallback", map[string]string{"OPENROUTER_API_KEY": "b"}, func(c Config) any { return c.ModelAPIKey }, "b"},
		{"empty model key suppresses fallback", map[string]string{"MODEL_API_KEY": "", "OPENROUTER_API_KEY": "b"}, func(c Config) any { return c.ModelAPIKey }, ""},
		{"base url", map[string]string{"MODEL_BASE_URL": "http://127.0.0.1:9/v1"}, func(c Config) any { return c.ModelBaseURL }, "http://127.0.0.1:9/v1"},
		{"api anthropic", map[string]string{"MODEL_API": "Anthropic"}, func(c Config) any { return c.ModelAPI }, APIAnthropic},
		{"api responses", map[string]string{"MODEL_API": "responses"}, func(c Config) any { return c.ModelAPI }, APIResponses},
		{"api other is chat", map[string]string{"MODEL_API": "openai"}, func(c Config) any { return c.ModelAPI }, APIChat},
		{"primary", map[string]string{"DELTA_MODEL_PRIMARY": "p", "DELTA_MODEL": "legacy"}, func(c Config) any { return c.ModelPrimary }, "p"},
		{"legacy model", map[string]string{"DELTA_MODEL": "legacy"}, func(c Config) any { return c.ModelPrimary }, "legacy"},
		{"empty primary falls to legacy", map[string]string{"DELTA_MODEL_PRIMARY": " ", "DELTA_MODEL": "legacy"}, func(c Config) any { return c.ModelPrimary }, "legacy"},
		{"fallbacks trimmed", map[string]string{"DELTA_MODEL_FALLBACKS": " a , ,b,"}, func(c Config) any { return c.ModelFallbacks }, []string{"a", "b"}},
		{"model timeout zero", map[string]string{"DELTA_MODEL_TIMEOUT_MS": "0"}, func(c Config) any { return c.ModelTimeout }, time.Duration(0)},
		{"tool timeout", map[string]string{"DELTA_TOOL_TIMEOUT_MS": "1500"}, func(c Config) any { return c.ToolTimeout }, 1500 * time.Millisecond},
		{"prices kept raw", map[string]string{"DELTA_MODEL_PRICES": ` {"my-model":{"in":2}} `},
			func(c Config) any { return c.ModelPrices }, `{"my-model":{"in":2}}`},
		{"effort", map[string]string{"DELTA_REASONING_EFFORT": "  HIGH "}, func(c Config) any { return c.ReasoningEffort }, "high"},
		{"utility empty", map[string]string{"DELTA_UTILITY_MODEL": ""}, func(c Config) any { return c.UtilityModel }, ""},
		{"utility set", map[string]string{"DELTA_UTILITY_MODEL": "u"}, func(c Config) any { return c.UtilityModel }, "u"},
		{"arg bound off by default", map[string]string{}, func(c Config) any { return c.ToolArgMaxBytes }, 0},
		{"arg bound", map[string]string{"DELTA_TOOL_ARG_MAX_BYTES": "4096"}, func(c Config) any { return c.ToolArgMaxBytes }, 4096},
		{"compact dial", map[string]string{"DELTA_COMPACT_AT_TOKENS": "40000"}, func(c Config) any { return c.CompactAtTokens }, 40000},
		{"vision unset", map[string]string{}, func(c Config) any { return c.VisionModels == nil }, true},
		{"vision matches", map[string]string{"DELTA_VISION_MODELS": "^(gpt-5|anthropic/claude)"}, func(c Config) any { return c.VisionModels.MatchString("anthropic/claude-sonnet-4.5") }, true},
		{"trust review metadata", map[string]string{"DELTA_TRUST_REVIEW_METADATA": "1"}, func(c Config) any { return c.TrustReviewMetadata }, true},
		{"reflect", map[string]string{"DELTA_REFLECT": "1"}, func(c Config) any { return c.Reflect }, true},
		{"reflect off by default", map[string]string{}, func(c Config) any { return c.Reflect }, false},
		{"hydrate reads", map[string]string{"DELTA_HYDRATE_TOOLS": " crm__get_dashboard, ,crm__list_recent_notes,crm__get_dashboard"}, func(c Config) any { return strings.Join(c.HydrateTools, " ") }, "crm__get_dashboard crm__list_recent_notes"},
		{"hydrate reads malformed drop the list", map[string]string{"DELTA_HYDRATE_TOOLS": "crm__get_dashboard,bad name!"}, func(c Config) any {
			return len(c.HydrateTools) == 0 && len(c.Warnings) == 1 && strings.Contains(c.Warnings[0], "no hydration reads")
		}, true},
		{"hydrate search", map[string]string{"DELTA_HYDRATE_SEARCH_TOOL": " crm__search_knowledge "}, func(c Config) any { return c.HydrateSearchTool }, "crm__search_knowledge"},
		{"hydrate search malformed", map[string]string{"DELTA_HYDRATE_SEARCH_TOOL": "a b"}, func(c Config) any { return c.HydrateSearchTool == "" && len(c.Warnings) == 1 }, true},
		{"profile work alias", map[string]string{"DELTA_PROFILE": "work"}, func(c Config) any { return c.Profile }, ProfileTrusted},
		{"profile chat alias", map[string]string{"DELTA_PROFILE": "Chat"}, func(c Config) any { return c.Profile }, ProfileSafe},
		{"steps fraction floors", map[string]string{"DELTA_MAX_STEPS": "2.9"}, func(c Config) any { return c.MaxSteps }, i(2)},
		{"steps below one", map[string]string{"DELTA_MAX_STEPS": "0"}, func(c Config) any { return c.MaxSteps }, i(1)},
		{"steps negative", map[string]string{"DELTA_MAX_STEPS": "-4"}, func(c Config) any { return c.MaxSteps }, i(1)},
		{"steps empty is unset", map[string]string{"DELTA_MAX_STEPS": ""}, func(c Config) any { return c.MaxSteps }, (*int)(nil)},
		{"tokens", map[string]string{"DELTA_MAX_TOKENS": "250000"}, func(c Config) any { return c.MaxTokens }, i64(250000)},
		{"tokens zero", map[string]string{"DELTA_MAX_TOKENS": "0"}, func(c Config) any { return c.MaxTokens }, i64(0)},
		{"tokens empty is unset", map[string]string{"DELTA_MAX_TOKENS": ""}, func(c Config) any { return c.MaxTokens }, (*int64)(nil)},
		{"cost", map[string]string{"DELTA_MAX_COST_USD": "1.5"}, func(c Config) any { return c.MaxCostUSD }, f(1.5)},
		{"cost empty is unset", map[string]string{"DELTA_MAX_COST_USD": ""}, func(c Config) any { return c.MaxCostUSD }, (*float64)(nil)},
		{"inspect off", map[string]string{"DELTA_INSPECT": "off"}, func(c Config) any { return c.Inspect }, false},
		{"inspect on", map[string]string{"DELTA_INSPECT": "on"}, func(c Config) any { return c.Inspect }, true},
		{"inspect write yes", map[string]string{"DELTA_INSPECT_WRITE": "YES"}, func(c Config) any { return c.InspectWrite }, true},
		{"capture 1", map[string]string{"DELTA_CAPTURE_CALLS": "1"}, func(c Config) any { return c.CaptureCalls }, true},
		{"capture empty", map[string]string{"DELTA_CAPTURE_CALLS": ""}, func(c Config) any { return c.CaptureCalls }, false},
		{"strict tenant", map[string]string{"DELTA_STRICT_TENANT": "true"}, func(c Config) any { return c.StrictTenant }, true},
		{"body cap", map[string]string{"DELTA_MAX_BODY_BYTES": "4096"}, func(c Config) any { return c.MaxBodyBytes }, int64(4096)},
		{"lease holder wins", map[string]string{"DELTA_LEASE_HOLDER": "h", "FLY_MACHINE_ID": "m"}, func(c Config) any { return c.LeaseHolder }, "h"},
		{"fly machine id", map[string]string{"FLY_MACHINE_ID": "m"}, func(c Config) any { return c.LeaseHolder }, "m"},
		{"lease ttl", map[string]string{"DELTA_LEASE_TTL_MS": "12000"}, func(c Config) any { return c.LeaseTTL }, 12 * time.Second},
		{"lease ttl floor", map[string]string{"DELTA_LEASE_TTL_MS": "100"}, func(c Config) any { return c.LeaseTTL }, 5 * time.Second},
		{"self cap", map[string]string{"DELTA_SELF_MAX_TOKENS": "100"}, func(c Config) any { return c.SelfMaxTokens }, 100},
		{"skills local", map[string]string{"DELTA_SKILLS": " Local "}, func(c Config) any { return c.Skills }, SkillsLocal},
		{"skills off", map[string]string{"DELTA_SKILLS": "off"}, func(c Config) any { return c.Skills }, SkillsOff},
		{"skills empty is the default", map[string]string{"DELTA_SKILLS": ""}, func(c Config) any { return c.Skills }, SkillsMCP},
		{"skills mcp is quiet", map[string]string{"DELTA_SKILLS": "mcp"}, func(c Config) any { return len(c.Warnings) }, 0},
		{"promote min runs default", map[string]string{}, func(c Config) any { return c.PromoteMinRuns }, 2},
		{"promote min runs set", map[string]string{"DELTA_PROMOTE_MIN_RUNS": "3"}, func(c Config) any { return c.PromoteMinRuns }, 3},
		{"vocab raw", map[string]string{"DELTA_VOCAB": `{"writeNoun":"crm"}`}, func(c Config) any { return c.Vocab }, `{"writeNoun":"crm"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.env)
			if got := tt.got(c); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestLeaseHolderDefaultsToHostname(t *testing.T) {
	h, err := os.Hostname()
	if err != nil || h == "" {
		t.Skip("no hostname on this machine")
	}
	if got := mustLoad(t, nil).LeaseHolder; got != h {
		t.Fatalf("LeaseHolder = %q, want hostname %q", got, h)
	}
}

func TestLoadErrorsNameTheVariable(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		wantInMsg   string
	}{
		{"DELTA_BIND", "0.0.0.0", "DELTA_CONTROL_TOKEN"},
		{"DELTA_BIND", "::", "DELTA_CONTROL_TOKEN"},
		{"DELTA_BIND", "192.168.1.10", "DELTA_CONTROL_TOKEN"},
		{"PORT", "0", "1 to 65535"},
		{"PORT", "70000", "1 to 65535"},
		{"PORT", "http", "integer from 1 to 65535"},
		{"PORT", "99999999999999999999999", "integer from 1 to 65535"}, // past int64: still the range
		{"DELTA_RETENTION_EVENTS_DAYS", "1e3", "integer from 1 to 36500"},
		{"DELTA_MAX_CONCURRENCY", "99999999999999999999999", "held to 1–256"},
		{"DELTA_MODEL_TIMEOUT_MS", "30s", "milliseconds, an integer ≥ 0 (0 = no timeout)"},
		{"DELTA_LEASE_TTL_MS", "-5", "(below 5000 becomes 5000)"},
		{"DELTA_RETENTION_SWEEP_MS", "-1", "(0 = only at boot)"},
		{"DELTA_RETENTION_SWEEP_MS", "99999999999999999999999", "(0 = only at boot)"},
		{"DELTA_MAX_CONCURRENCY", "eight", "integer"},
		{"DELTA_MAX_CONCURRENCY", "2.5", "integer"},
		{"MODEL_BASE_URL", "openrouter.ai/api/v1", "URL"},
		{"MODEL_BASE_URL", "ftp://x/v1", "URL"},
		{"DELTA_MODEL_TIMEOUT_MS", "-1", "≥ 0"},
		{"DELTA_TOOL_TIMEOUT_MS", "1s", "integer"},
		{"DELTA_TOOL_RESULT_MAX_BYTES", "0", "from 1"},
		{"DELTA_PROFILE", "admin", "trusted or safe"},
		{"DELTA_PROFILE", "trusted!", "trusted or safe"},
		{"DELTA_MAX_STEPS", "many", "number"},
		{"DELTA_MAX_STEPS", "NaN", "number"},
		{"DELTA_MAX_STEPS", "Inf", "number"},
		{"DELTA_MAX_TOKENS", "-5", "≥ 0"},
		{"DELTA_MAX_TOKENS", "1.5", "integer"},
		{"DELTA_MAX_TOKENS", "lots", "integer"},
		{"DELTA_MAX_COST_USD", "-0.01", "≥ 0"},
		{"DELTA_MAX_COST_USD", "$5", "number"},
		{"DELTA_POLICY_MAX_TOKENS", "0", "from 1"},
		{"DELTA_SELF_MAX_TOKENS", "x", "integer"},
		{"DELTA_INSPECT", "maybe", "off"},
		{"DELTA_INSPECT_WRITE", "2", "boolean"},
		{"DELTA_SKILLS", "yes", "one of mcp, local, off"},
		{"DELTA_CAPTURE_CALLS", "enabled", "boolean"},
		{"DELTA_STRICT_TENANT", "y", "boolean"},
		{"DELTA_MAX_BODY_BYTES", "-1", "from 1"},
		{"DELTA_VISION_MODELS", "gpt-(4o", "regular expression"},
		{"DELTA_TOOL_ARG_MAX_BYTES", "-1", "from 0"},
		{"DELTA_COMPACT_AT_TOKENS", "1000", "from 4000"},
		{"DELTA_TRUST_REVIEW_METADATA", "sure", "boolean"},
		{"DELTA_REFLECT", "sure", "boolean"},
		{"DELTA_DB", "mysql://delta:hunter2@db.internal:3306/delta", "postgres://"},
		{"DELTA_DB", "sqlite://data/delta.db", "file path"},
	} {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			c, err := Load(mapLookup(map[string]string{tt.name: tt.value}))
			if err == nil {
				t.Fatalf("Load accepted %s=%q: %+v", tt.name, tt.value, c)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Var != tt.name {
				t.Fatalf("error %v is not a *FieldError for %s", err, tt.name)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, tt.name) || !strings.Contains(msg, tt.wantInMsg) {
				t.Fatalf("error %q: want it to start with %s and mention %q", msg, tt.name, tt.wantInMsg)
			}
			if !reflect.DeepEqual(c, Config{}) {
				t.Fatalf("Config on error is not zero: %+v", c)
			}
		})
	}
}

// A database URL in DELTA_DB other than PostgreSQL's is refused without
// echoing it: it usually carries a password, and the error ends up in
// logs. A PostgreSQL URL is kept as given (the daemon runs as a worker on
// it), by the container's entrypoint too.
func TestLoadRefusesDatabaseURLWithoutEchoingIt(t *testing.T) {
	_, err := Load(mapLookup(map[string]string{"DELTA_DB": "mysql://delta:hunter2@db.internal/delta"}))
	if err == nil {
		t.Fatal("Load accepted a MySQL URL as DELTA_DB")
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2") || strings.Contains(msg, "db.internal") {
		t.Fatalf("error echoes the database URL: %q", msg)
	}
	for _, u := range []string{"postgres://delta:hunter2@db.internal/delta", "postgresql://db.internal/delta?sslmode=require"} {
		c, err := Load(mapLookup(map[string]string{"DELTA_DB": u}))
		if err != nil || c.DB != u {
			t.Fatalf("DELTA_DB=%q: got %q, %v; want the URL kept", u, c.DB, err)
		}
	}
	_, err = LoadEntrypoint(mapLookup(map[string]string{"DELTA_DB": "mysql://delta:hunter2@db.internal/delta"}))
	if err == nil {
		t.Fatal("the entrypoint accepted a MySQL URL")
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2") || strings.Contains(msg, "db.internal") {
		t.Fatalf("error echoes the database URL: %q", msg)
	}
	for _, path := range []string{"data/delta.db", "/data/delta.db", "./postgres.db", "C:/state/delta.db"} {
		c, err := Load(mapLookup(map[string]string{"DELTA_DB": path}))
		if err != nil || c.DB != path {
			t.Fatalf("DELTA_DB=%q: got %q, %v; want the path kept", path, c.DB, err)
		}
	}
}

func TestLoadJoinsEveryProblem(t *testing.T) {
	_, err := Load(mapLookup(map[string]string{"PORT": "x", "DELTA_PROFILE": "root", "DELTA_MAX_COST_USD": "-1"}))
	if err == nil {
		t.Fatal("want error")
	}
	for _, v := range []string{"PORT", "DELTA_PROFILE", "DELTA_MAX_COST_USD"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("joined error %q does not name %s", err, v)
		}
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	const secret = "sk-very-secret-value"
	fe := &FieldError{Var: "MODEL_API_KEY", Value: secret, Err: ErrInvalid}
	if strings.Contains(fe.Error(), secret) {
		t.Fatalf("FieldError printed a secret: %q", fe.Error())
	}
	for _, name := range []string{"MODEL_API_KEY", "DELTA_CONTROL_TOKEN", "EXA_API_KEY", "DELTA_BROKER_AUTH"} {
		if !IsSecret(name) {
			t.Errorf("IsSecret(%s) = false", name)
		}
	}
	if IsSecret("DELTA_MAX_TOKENS") {
		t.Error("DELTA_MAX_TOKENS is a budget, not a secret")
	}
	// Secrets alongside an invalid variable stay out of the message.
	_, err := Load(mapLookup(map[string]string{
		"PORT": "bad", "MODEL_API_KEY": secret, "DELTA_CONTROL_TOKEN": secret, "DELTA_INSPECT_TOKEN": secret,
	}))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("error %v leaks a secret or is nil", err)
	}
	// A non-secret's value is echoed to help the operator.
	if msg := (&FieldError{Var: "PORT", Value: "abc", Err: ErrInvalid}).Error(); !strings.Contains(msg, `"abc"`) {
		t.Fatalf("non-secret value missing from %q", msg)
	}
	// A password in a refused URL is not.
	for name, v := range map[string]string{
		"MODEL_BASE_URL":              "ftp://user:" + secret + "@models.example/v1",
		"DELTA_CONTROL_URL":           "control.example://ops:" + secret + "@host",
		"TELEMETRY_URL":               "http://u:" + secret + "@collector.example/ingest",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://u:" + secret + "@otel.example:4317",
	} {
		_, err := Load(mapLookup(map[string]string{name: v}))
		if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "xxxxx@") {
			t.Errorf("%s=%s: error %v, want it named with the password hidden", name, v, err)
		}
	}
	if _, err := LoadScheduler(mapLookup(map[string]string{"DELTA_URL": "ftp://u:" + secret + "@daemon"})); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("DELTA_URL with a password: %v", err)
	}
}

// recorder is a lookup that remembers every name asked for.
type recorder struct {
	env   map[string]string
	asked []string
}

func (r *recorder) lookup(k string) (string, bool) {
	r.asked = append(r.asked, k)
	v, ok := r.env[k]
	return v, ok
}

func TestForeignProviderKeysNeverRead(t *testing.T) {
	for _, env := range []map[string]string{
		nil,
		{"OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "y"},
		{"MODEL_API": "anthropic", "OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "y"},
		{"MODEL_API": "responses", "MODEL_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "x"},
	} {
		r := &recorder{env: env}
		c, err := Load(r.lookup)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range r.asked {
			if name == "OPENAI_API_KEY" || name == "ANTHROPIC_API_KEY" {
				t.Fatalf("Load looked up %s (env %v)", name, env)
			}
		}
		if c.ModelAPIKey != "" {
			t.Fatalf("ModelAPIKey = %q from a foreign provider key", c.ModelAPIKey)
		}
	}
}

// TestVarsIsComplete keeps Vars the single source of truth: every Config
// field's variables are documented, and Load, LoadEntrypoint, LoadSmoke and
// LoadScheduler together read exactly what is documented.
func TestVarsIsComplete(t *testing.T) {
	documented := map[string]VarDoc{}
	for _, v := range Vars() {
		if _, dup := documented[v.Name]; dup {
			t.Errorf("Vars lists %s twice", v.Name)
		}
		if v.Doc == "" || strings.Contains(v.Doc, "\n") {
			t.Errorf("Vars %s: want a one-line doc, got %q", v.Name, v.Doc)
		}
		documented[v.Name] = v
	}
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("env")
		if tag == "" {
			if f.Name != "Warnings" {
				t.Errorf("Config.%s has no env tag", f.Name)
			}
			continue
		}
		for name := range strings.SplitSeq(tag, ",") {
			if _, ok := documented[name]; !ok {
				t.Errorf("Config.%s reads %s, which Vars does not document", f.Name, name)
			}
		}
	}
	r := &recorder{}
	if _, err := Load(r.lookup); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadEntrypoint(r.lookup); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSmoke(r.lookup); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScheduler(r.lookup); err != nil {
		t.Fatal(err)
	}
	for name := range documented {
		if !slices.Contains(r.asked, name) {
			t.Errorf("Vars documents %s but Load never reads it", name)
		}
	}
	for _, name := range r.asked {
		if _, ok := documented[name]; !ok && !slices.Contains(removedVars, name) {
			t.Errorf("Load reads %s, which Vars does not document", name)
		}
	}
	if d := documented["PORT"].Default; d != "8080" {
		t.Errorf("PORT default documented as %q", d)
	}
	if d := documented["DELTA_MAX_STEPS"].Default; d != "trusted 100 / safe 30" {
		t.Errorf("DELTA_MAX_STEPS default documented as %q", d)
	}
}

func TestRemovedVarsWarn(t *testing.T) {
	c := mustLoad(t, map[string]string{"DELTA_PLAYBOOK_FILE": "p.md", "DELTA_STEERING_MAX_TOKENS": "5"})
	if len(c.Warnings) != 2 {
		t.Fatalf("Warnings = %q, want 2", c.Warnings)
	}
	for i, name := range []string{"DELTA_PLAYBOOK_FILE", "DELTA_STEERING_MAX_TOKENS"} {
		if !strings.HasPrefix(c.Warnings[i], name) {
			t.Errorf("warning %q does not name %s", c.Warnings[i], name)
		}
	}
	if c := mustLoad(t, nil); len(c.Warnings) != 0 {
		t.Fatalf("unexpected warnings %q", c.Warnings)
	}
}

func TestBudgetAndPlacement(t *testing.T) {
	trusted := Budget{100, 2_000_000, 5}
	safe := Budget{30, 250_000, 1}
	for _, tt := range []struct {
		name          string
		env           map[string]string
		request       string
		wantPlacement string
		want          Budget
	}{
		{"trusted default", nil, "", "trusted", trusted},
		{"narrow to safe", nil, "safe", "safe", safe},
		{"narrow by alias", nil, "chat", "safe", safe},
		{"unknown stays at ceiling", nil, "root", "trusted", trusted},
		{"safe ceiling", map[string]string{"DELTA_PROFILE": "safe"}, "", "safe", safe},
		{"safe cannot widen", map[string]string{"DELTA_PROFILE": "safe"}, "trusted", "safe", safe},
		{"safe cannot widen by alias", map[string]string{"DELTA_PROFILE": "chat"}, "work", "safe", safe},
		{"overrides raise ceiling", map[string]string{"DELTA_MAX_STEPS": "200", "DELTA_MAX_TOKENS": "5000000", "DELTA_MAX_COST_USD": "20"},
			"", "trusted", Budget{200, 5_000_000, 20}},
		{"overrides lower ceiling", map[string]string{"DELTA_MAX_TOKENS": "1000", "DELTA_MAX_COST_USD": "0.5"},
			"", "trusted", Budget{100, 1000, 0.5}},
		{"narrowed run never exceeds lowered ceiling", map[string]string{"DELTA_MAX_TOKENS": "1000", "DELTA_MAX_STEPS": "10"},
			"safe", "safe", Budget{10, 1000, 1}},
		{"narrowed run keeps its own smaller default", map[string]string{"DELTA_MAX_STEPS": "500"},
			"safe", "safe", safe},
		{"override on safe ceiling", map[string]string{"DELTA_PROFILE": "safe", "DELTA_MAX_STEPS": "200"},
			"trusted", "safe", Budget{200, 250_000, 1}},
		{"empty override is unset", map[string]string{"DELTA_MAX_TOKENS": "", "DELTA_MAX_COST_USD": ""}, "", "trusted", trusted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.env)
			if got := c.Placement(tt.request); got != tt.wantPlacement {
				t.Fatalf("Placement(%q) = %q, want %q", tt.request, got, tt.wantPlacement)
			}
			if got := c.Budget(tt.request); got != tt.want {
				t.Fatalf("Budget(%q) = %+v, want %+v", tt.request, got, tt.want)
			}
		})
	}
	// The zero Config is not a loaded one: it must fail closed.
	if got := (Config{}).Placement("trusted"); got != ProfileSafe {
		t.Fatalf("zero Config placement = %q, want safe", got)
	}
}

func TestStepsHugeValueIsBounded(t *testing.T) {
	c := mustLoad(t, map[string]string{"DELTA_MAX_STEPS": "1e300"})
	if *c.MaxSteps != math.MaxInt32 {
		t.Fatalf("MaxSteps = %d", *c.MaxSteps)
	}
}

func TestClientTokens(t *testing.T) {
	r := &recorder{env: map[string]string{"DELTA_CONTROL_TOKEN": " c ", "DELTA_INSPECT_TOKEN": "i", "MODEL_API_KEY": "k"}}
	c, i := ClientTokens(r.lookup)
	if c != "c" || i != "i" {
		t.Fatalf("ClientTokens = %q, %q", c, i)
	}
	if !slices.Equal(r.asked, []string{"DELTA_CONTROL_TOKEN", "DELTA_INSPECT_TOKEN"}) {
		t.Fatalf("ClientTokens read %v", r.asked)
	}
}
