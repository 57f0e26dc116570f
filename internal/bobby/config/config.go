// Package config is bobby's configuration: the TOML file and the
// bootstrap variables. It is the only package of bobby (the browser MCP
// runtime) that reads the environment, and it imports nothing of delta's, so
// bobby links no harness package and delta links no TOML parser.
//
// The file (path from --config or BOBBY_CONFIG) looks like:
//
//	[http]
//	listen = "127.0.0.1:8765"        # loopback unless allow_non_loopback = true
//	max_download_bytes = 104857600
//	max_sessions = 32                 # live browser sessions; the least recently used is closed past it
//	idle_timeout = "15m"              # a browser session (and an MCP session) unused this long is closed
//	keepalive = "15s"                 # a ": ping" SSE comment on an idle GET /v1/mcp stream this often; "0s" sends none
//	downloads_root = "/var/lib/bobby/downloads"
//
//	[browser]
//	engine = "chromium"               # chromium | firefox (WebDriver BiDi; tools/list shows what runs on it)
//	path = "/usr/bin/chromium"        # default: the engine's browser (/usr/bin/firefox-esr for firefox)
//	flags = ["--lang=en-US"]          # added after bobby's own launch flags
//	data_dir = "/var/lib/bobby"       # profile data and checkpoints; the system temp dir when empty
//
//	[toolset]
//	start_phase = "explore"           # explore | act | intent | verify
//
//	[profiles.default]
//	user_agent = "…"
//	locale = "en-US"
//	timezone = "Europe/Paris"
//	viewport_width = 1280
//	viewport_height = 800
//
//	[[principals]]
//	name = "agent"
//	token_sha256 = "<hex sha256 of the bearer token>"   # or token_env = "AGENT_TOKEN"
//	capabilities = ["browser:mutate", "page:read"]
//	expires_at = 2027-01-01T00:00:00Z
//
//	[nodes.vision1]                   # parsed and reported; no vision provider is wired yet
//	url = "http://127.0.0.1:9000"
//	model = "…"
//	kind = "vision"
//
// Every key not listed here is an error naming the key, so a typo never
// silently falls back to a default.
package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Bobby defaults.
const (
	DefaultListen           = "127.0.0.1:8765"
	DefaultMaxDownloadBytes = 100 << 20
	DefaultMaxSessions      = 32
	DefaultIdleTimeout      = 15 * time.Minute
	DefaultKeepAlive        = 15 * time.Second
	DefaultBrowserPath      = "/usr/bin/chromium"
	DefaultFirefoxPath      = "/usr/bin/firefox-esr"
	DefaultStartPhase       = "explore"
	DefaultProfile          = "default"
)

// Environment variables bobby reads. The four AUTOMATION_RUNTIME_BOOTSTRAP_*
// variables configure the principal of a `bobby stdio` process (stdio has no
// bearer header):
//
//   - AUTOMATION_RUNTIME_BOOTSTRAP_URL: when set, `bobby stdio` is a bridge to
//     the streamable HTTP endpoint of a running `bobby serve` at that URL
//     (e.g. http://127.0.0.1:8765/v1/mcp) and authenticates with the token;
//     when empty, the stdio process runs its own browser runtime.
//   - AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: the principal name (default "local").
//   - AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: the principal's token. Required when
//     the config file declares principals (it must match the named one) and
//     with a bridge URL; optional otherwise.
//   - AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: comma-separated capabilities.
//     With a configured principal it can only narrow that principal's set;
//     without one it is the set (default: browser:mutate, page:read,
//     artifact:capture, artifact:read).
//
// AUTOMATION_RUNTIME_TOKEN alone is deliberately not enough.
const (
	EnvConfig                = "BOBBY_CONFIG"
	EnvBootstrapURL          = "AUTOMATION_RUNTIME_BOOTSTRAP_URL"
	EnvBootstrapPrincipal    = "AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL"
	EnvBootstrapToken        = "AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN"
	EnvBootstrapCapabilities = "AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES"
)

// Config is bobby's whole configuration file.
type Config struct {
	HTTP       HTTP               `toml:"http"`
	Browser    Browser            `toml:"browser"`
	Toolset    Toolset            `toml:"toolset"`
	Profiles   map[string]Profile `toml:"profiles"`
	Principals []Principal        `toml:"principals"`
	Nodes      map[string]Node    `toml:"nodes"`

	// Path is the file the configuration came from ("" for defaults).
	Path string `toml:"-"`
}

// HTTP is the [http] section: the streamable HTTP listener and download limits.
type HTTP struct {
	Listen string `toml:"listen"`
	// AllowNonLoopback must be true to listen on anything but a loopback
	// address: bobby drives a browser with the principal's authority.
	AllowNonLoopback bool   `toml:"allow_non_loopback"`
	MaxDownloadBytes int64  `toml:"max_download_bytes"`
	DownloadsRoot    string `toml:"downloads_root"`
	// MaxSessions caps the live browser sessions of `bobby serve`: creating
	// one more closes the least recently used (its context and pages).
	MaxSessions int `toml:"max_sessions"`
	// IdleTimeout closes a browser session of `bobby serve` that no call
	// used for this long, and ends an MCP session idle as long. A TOML
	// string such as "15m".
	IdleTimeout time.Duration `toml:"idle_timeout"`
	// KeepAlive is how often `bobby serve` writes a ": ping" SSE comment
	// on a GET /v1/mcp stream, so proxies and clients do not drop a quiet
	// notification channel; clients ignore comments. Zero sends none.
	KeepAlive time.Duration `toml:"keepalive"`
}

// The browser engines [browser] engine names.
const (
	EngineChromium = "chromium"
	EngineFirefox  = "firefox"
)

// Browser is the [browser] section.
type Browser struct {
	// Engine is "chromium" (default; "" means it) or "firefox".
	Engine  string   `toml:"engine"`
	Path    string   `toml:"path"`
	Flags   []string `toml:"flags"`
	DataDir string   `toml:"data_dir"`
}

// Toolset is the [toolset] section.
type Toolset struct {
	StartPhase string `toml:"start_phase"`
}

// Profile is one [profiles.<name>] table: how a session's browser
// context looks to sites. Zero values leave Chromium's defaults.
type Profile struct {
	UserAgent      string `toml:"user_agent"`
	Locale         string `toml:"locale"`
	Timezone       string `toml:"timezone"`
	ViewportWidth  int    `toml:"viewport_width"`
	ViewportHeight int    `toml:"viewport_height"`
	Proxy          string `toml:"proxy"`
}

// Principal is one [[principals]] entry: a bearer token's identity.
type Principal struct {
	Name string `toml:"name"`
	// TokenSHA256 is the lowercase hex SHA-256 of the token. When the file
	// gives token_env instead, loading reads that variable and fills this in.
	TokenSHA256  string    `toml:"token_sha256"`
	TokenEnv     string    `toml:"token_env"`
	Capabilities []string  `toml:"capabilities"`
	ExpiresAt    time.Time `toml:"expires_at"` // zero: never expires
}

// Node is one [nodes.<name>] table (a vision node). Parsed and reported;
// no vision provider is wired in this version.
type Node struct {
	URL   string `toml:"url"`
	Model string `toml:"model"`
	Kind  string `toml:"kind"`
}

// KeyError is one invalid configuration key.
type KeyError struct {
	Key string // dotted TOML key, e.g. "principals[1].token_sha256"
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// Default returns the configuration used when no file is given.
func Default() Config {
	return Config{
		HTTP: HTTP{
			Listen:           DefaultListen,
			MaxDownloadBytes: DefaultMaxDownloadBytes,
			MaxSessions:      DefaultMaxSessions,
			IdleTimeout:      DefaultIdleTimeout,
			KeepAlive:        DefaultKeepAlive,
		},
		Browser:  Browser{Path: DefaultBrowserPath},
		Toolset:  Toolset{StartPhase: DefaultStartPhase},
		Profiles: map[string]Profile{DefaultProfile: {}},
	}
}

// Load reads and validates the configuration file at path. An empty
// path gives Default. token_env variables are read from the process
// environment.
func Load(path string) (Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read bobby config: %w", err)
	}
	cfg, err := Parse(data, os.LookupEnv)
	if err != nil {
		return Config{}, fmt.Errorf("bobby config %s: %w", path, err)
	}
	cfg.Path = path
	return cfg, nil
}

// Parse decodes and validates TOML. lookup resolves token_env names.
func Parse(data []byte, lookup func(string) (string, bool)) (Config, error) {
	cfg := Default()
	cfg.Profiles = nil // the file's profiles replace the default set; "default" is re-added below
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&cfg)
	if err != nil {
		return Config{}, fmt.Errorf("parse toml: %w", err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		var errs []error
		for _, k := range undecoded {
			errs = append(errs, &KeyError{Key: k.String(), Err: errors.New("unknown key")})
		}
		return Config{}, errors.Join(errs...)
	}
	if cfg.Profiles == nil {
		cfg.Profiles = map[string]Profile{}
	}
	if _, ok := cfg.Profiles[DefaultProfile]; !ok {
		cfg.Profiles[DefaultProfile] = Profile{}
	}
	for i := range cfg.Principals {
		p := &cfg.Principals[i]
		if p.TokenEnv == "" || p.TokenSHA256 != "" {
			continue
		}
		tok, ok := lookup(p.TokenEnv)
		if !ok || tok == "" {
			return Config{}, &KeyError{
				Key: fmt.Sprintf("principals[%d].token_env", i),
				Err: fmt.Errorf("variable %s is unset or empty", p.TokenEnv),
			}
		}
		sum := sha256.Sum256([]byte(tok))
		p.TokenSHA256 = hex.EncodeToString(sum[:])
	}
	if cfg.Browser.Engine == EngineFirefox && cfg.Browser.Path == DefaultBrowserPath {
		cfg.Browser.Path = DefaultFirefoxPath // the engine's own browser unless the file names one
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

var (
	hexSHA256   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	profileName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	phaseNames  = []string{"explore", "act", "intent", "verify"}
)

// Validate reports every invalid key, joined. Capability names are checked
// by the gateway (package policy owns them), not here.
func (c Config) Validate() error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Err: fmt.Errorf(format, args...)})
	}
	if c.HTTP.Listen == "" {
		bad("http.listen", "must not be empty")
	} else if host, port, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
		bad("http.listen", "want host:port: %v", err)
	} else {
		if port == "" {
			bad("http.listen", "missing port")
		}
		if !c.HTTP.AllowNonLoopback && !IsLoopbackHost(host) {
			bad("http.listen", "%q is not a loopback address; set http.allow_non_loopback = true to expose bobby", host)
		}
	}
	if c.HTTP.MaxSessions <= 0 || c.HTTP.MaxSessions > 10000 {
		bad("http.max_sessions", "must be 1..10000")
	}
	if c.HTTP.IdleTimeout < time.Second {
		bad("http.idle_timeout", "must be at least 1s (a duration such as \"15m\")")
	}
	if c.HTTP.KeepAlive < 0 {
		bad("http.keepalive", "must not be negative (\"0s\" sends no keep-alive comments)")
	}
	if c.HTTP.MaxDownloadBytes <= 0 {
		bad("http.max_download_bytes", "must be positive")
	}
	if c.Browser.Path == "" {
		bad("browser.path", "must not be empty")
	}
	switch c.Browser.Engine {
	case "", EngineChromium, EngineFirefox:
	default:
		bad("browser.engine", "%q is not an engine; want chromium or firefox", c.Browser.Engine)
	}
	if !contains(phaseNames, c.Toolset.StartPhase) {
		bad("toolset.start_phase", "must be one of %s", strings.Join(phaseNames, ", "))
	}
	for _, name := range sortedKeys(c.Profiles) {
		p := c.Profiles[name]
		key := "profiles." + name
		if !profileName.MatchString(name) {
			bad(key, "profile names are 1-64 of A-Z a-z 0-9 _ . -")
		}
		if p.ViewportWidth < 0 || p.ViewportWidth > 10000 {
			bad(key+".viewport_width", "must be 0..10000")
		}
		if p.ViewportHeight < 0 || p.ViewportHeight > 10000 {
			bad(key+".viewport_height", "must be 0..10000")
		}
		if (p.ViewportWidth == 0) != (p.ViewportHeight == 0) {
			bad(key+".viewport_width", "viewport_width and viewport_height go together")
		}
	}
	names := map[string]bool{}
	hashes := map[string]bool{}
	for i, p := range c.Principals {
		key := fmt.Sprintf("principals[%d]", i)
		if p.Name == "" {
			bad(key+".name", "must not be empty")
		} else if names[p.Name] {
			bad(key+".name", "duplicate principal %q", p.Name)
		}
		names[p.Name] = true
		switch {
		case p.TokenSHA256 == "" && p.TokenEnv == "":
			bad(key+".token_sha256", "one of token_sha256 or token_env is required")
		case !hexSHA256.MatchString(p.TokenSHA256):
			bad(key+".token_sha256", "must be 64 lowercase hex digits")
		case hashes[p.TokenSHA256]:
			bad(key+".token_sha256", "two principals share one token")
		}
		hashes[p.TokenSHA256] = true
		if len(p.Capabilities) == 0 {
			bad(key+".capabilities", "must name at least one capability")
		}
	}
	for _, name := range sortedKeys(c.Nodes) {
		n := c.Nodes[name]
		if n.URL == "" {
			bad("nodes."+name+".url", "must not be empty")
		}
	}
	return errors.Join(errs...)
}

// IsLoopbackHost reports whether host (no port) names a loopback interface.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Env is what bobby reads from the environment.
type Env struct {
	ConfigPath            string // BOBBY_CONFIG
	BootstrapURL          string
	BootstrapPrincipal    string
	BootstrapToken        string
	BootstrapCapabilities []string // split on commas, trimmed, empties dropped
	capabilitiesSet       bool
}

// CapabilitiesSet reports whether AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES
// was present (an empty value then means "no capabilities").
func (e Env) CapabilitiesSet() bool { return e.capabilitiesSet }

// EnvFrom reads bobby's variables through lookup.
func EnvFrom(lookup func(string) (string, bool)) Env {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	env := Env{
		ConfigPath:         get(EnvConfig),
		BootstrapURL:       get(EnvBootstrapURL),
		BootstrapPrincipal: get(EnvBootstrapPrincipal),
		BootstrapToken:     get(EnvBootstrapToken),
	}
	if raw, ok := lookup(EnvBootstrapCapabilities); ok {
		env.capabilitiesSet = true
		for _, c := range strings.Split(raw, ",") {
			if c = strings.TrimSpace(c); c != "" {
				env.BootstrapCapabilities = append(env.BootstrapCapabilities, c)
			}
		}
	}
	return env
}

// ReadEnv reads bobby's variables from the process environment.
func ReadEnv() Env { return EnvFrom(os.LookupEnv) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
