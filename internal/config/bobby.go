// bobby's configuration: the TOML file and the bootstrap variables. This file
// belongs to bobby (the browser MCP runtime); it lives in package config
// because config is the only package allowed to read the environment.
//
// The file (path from --config or BOBBY_CONFIG) looks like:
//
//	[http]
//	listen = "127.0.0.1:8765"        # loopback unless allow_non_loopback = true
//	max_download_bytes = 104857600
//	downloads_root = "/var/lib/bobby/downloads"
//
//	[browser]
//	path = "/usr/bin/chromium"
//	flags = ["--lang=en-US"]          # added after bobby's own launch flags
//	data_dir = "/var/lib/bobby"       # profile data; a temporary dir when empty
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
	DefaultBobbyListen           = "127.0.0.1:8765"
	DefaultBobbyMaxDownloadBytes = 100 << 20
	DefaultBobbyBrowserPath      = "/usr/bin/chromium"
	DefaultBobbyStartPhase       = "explore"
	DefaultBobbyProfile          = "default"
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
	EnvBobbyConfig           = "BOBBY_CONFIG"
	EnvBootstrapURL          = "AUTOMATION_RUNTIME_BOOTSTRAP_URL"
	EnvBootstrapPrincipal    = "AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL"
	EnvBootstrapToken        = "AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN"
	EnvBootstrapCapabilities = "AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES"
)

// BobbyConfig is bobby's whole configuration file.
type BobbyConfig struct {
	HTTP       BobbyHTTP               `toml:"http"`
	Browser    BobbyBrowser            `toml:"browser"`
	Toolset    BobbyToolset            `toml:"toolset"`
	Profiles   map[string]BobbyProfile `toml:"profiles"`
	Principals []BobbyPrincipal        `toml:"principals"`
	Nodes      map[string]BobbyNode    `toml:"nodes"`

	// Path is the file the configuration came from ("" for defaults).
	Path string `toml:"-"`
}

// BobbyHTTP is the [http] section: the streamable HTTP listener and download limits.
type BobbyHTTP struct {
	Listen string `toml:"listen"`
	// AllowNonLoopback must be true to listen on anything but a loopback
	// address: bobby drives a browser with the principal's authority.
	AllowNonLoopback bool   `toml:"allow_non_loopback"`
	MaxDownloadBytes int64  `toml:"max_download_bytes"`
	DownloadsRoot    string `toml:"downloads_root"`
}

// BobbyBrowser is the [browser] section.
type BobbyBrowser struct {
	Path    string   `toml:"path"`
	Flags   []string `toml:"flags"`
	DataDir string   `toml:"data_dir"`
}

// BobbyToolset is the [toolset] section.
type BobbyToolset struct {
	StartPhase string `toml:"start_phase"`
}

// BobbyProfile is one [profiles.<name>] table: how a session's browser
// context looks to sites. Zero values leave Chromium's defaults.
type BobbyProfile struct {
	UserAgent      string `toml:"user_agent"`
	Locale         string `toml:"locale"`
	Timezone       string `toml:"timezone"`
	ViewportWidth  int    `toml:"viewport_width"`
	ViewportHeight int    `toml:"viewport_height"`
	Proxy          string `toml:"proxy"`
}

// BobbyPrincipal is one [[principals]] entry: a bearer token's identity.
type BobbyPrincipal struct {
	Name string `toml:"name"`
	// TokenSHA256 is the lowercase hex SHA-256 of the token. When the file
	// gives token_env instead, loading reads that variable and fills this in.
	TokenSHA256  string    `toml:"token_sha256"`
	TokenEnv     string    `toml:"token_env"`
	Capabilities []string  `toml:"capabilities"`
	ExpiresAt    time.Time `toml:"expires_at"` // zero: never expires
}

// BobbyNode is one [nodes.<name>] table (a vision node). Parsed and reported;
// no vision provider is wired in this version.
type BobbyNode struct {
	URL   string `toml:"url"`
	Model string `toml:"model"`
	Kind  string `toml:"kind"`
}

// BobbyKeyError is one invalid configuration key.
type BobbyKeyError struct {
	Key string // dotted TOML key, e.g. "principals[1].token_sha256"
	Err error
}

func (e *BobbyKeyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *BobbyKeyError) Unwrap() error { return e.Err }

// DefaultBobby returns the configuration used when no file is given.
func DefaultBobby() BobbyConfig {
	return BobbyConfig{
		HTTP: BobbyHTTP{
			Listen:           DefaultBobbyListen,
			MaxDownloadBytes: DefaultBobbyMaxDownloadBytes,
		},
		Browser:  BobbyBrowser{Path: DefaultBobbyBrowserPath},
		Toolset:  BobbyToolset{StartPhase: DefaultBobbyStartPhase},
		Profiles: map[string]BobbyProfile{DefaultBobbyProfile: {}},
	}
}

// LoadBobby reads and validates the configuration file at path. An empty
// path gives DefaultBobby. token_env variables are read from the process
// environment.
func LoadBobby(path string) (BobbyConfig, error) {
	if path == "" {
		return DefaultBobby(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return BobbyConfig{}, fmt.Errorf("read bobby config: %w", err)
	}
	cfg, err := ParseBobby(data, os.LookupEnv)
	if err != nil {
		return BobbyConfig{}, fmt.Errorf("bobby config %s: %w", path, err)
	}
	cfg.Path = path
	return cfg, nil
}

// ParseBobby decodes and validates TOML. lookup resolves token_env names.
func ParseBobby(data []byte, lookup func(string) (string, bool)) (BobbyConfig, error) {
	cfg := DefaultBobby()
	cfg.Profiles = nil // the file's profiles replace the default set; "default" is re-added below
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&cfg)
	if err != nil {
		return BobbyConfig{}, fmt.Errorf("parse toml: %w", err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		var errs []error
		for _, k := range undecoded {
			errs = append(errs, &BobbyKeyError{Key: k.String(), Err: errors.New("unknown key")})
		}
		return BobbyConfig{}, errors.Join(errs...)
	}
	if cfg.Profiles == nil {
		cfg.Profiles = map[string]BobbyProfile{}
	}
	if _, ok := cfg.Profiles[DefaultBobbyProfile]; !ok {
		cfg.Profiles[DefaultBobbyProfile] = BobbyProfile{}
	}
	for i := range cfg.Principals {
		p := &cfg.Principals[i]
		if p.TokenEnv == "" || p.TokenSHA256 != "" {
			continue
		}
		tok, ok := lookup(p.TokenEnv)
		if !ok || tok == "" {
			return BobbyConfig{}, &BobbyKeyError{
				Key: fmt.Sprintf("principals[%d].token_env", i),
				Err: fmt.Errorf("variable %s is unset or empty", p.TokenEnv),
			}
		}
		sum := sha256.Sum256([]byte(tok))
		p.TokenSHA256 = hex.EncodeToString(sum[:])
	}
	if err := cfg.Validate(); err != nil {
		return BobbyConfig{}, err
	}
	return cfg, nil
}

var (
	bobbyHexSHA256   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	bobbyProfileName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	bobbyPhaseNames  = []string{"explore", "act", "intent", "verify"}
)

// Validate reports every invalid key, joined. Capability names are checked
// by the gateway (package policy owns them), not here.
func (c BobbyConfig) Validate() error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, &BobbyKeyError{Key: key, Err: fmt.Errorf(format, args...)})
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
	if c.HTTP.MaxDownloadBytes <= 0 {
		bad("http.max_download_bytes", "must be positive")
	}
	if c.Browser.Path == "" {
		bad("browser.path", "must not be empty")
	}
	if !bobbyContains(bobbyPhaseNames, c.Toolset.StartPhase) {
		bad("toolset.start_phase", "must be one of %s", strings.Join(bobbyPhaseNames, ", "))
	}
	for _, name := range bobbySortedKeys(c.Profiles) {
		p := c.Profiles[name]
		key := "profiles." + name
		if !bobbyProfileName.MatchString(name) {
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
		case !bobbyHexSHA256.MatchString(p.TokenSHA256):
			bad(key+".token_sha256", "must be 64 lowercase hex digits")
		case hashes[p.TokenSHA256]:
			bad(key+".token_sha256", "two principals share one token")
		}
		hashes[p.TokenSHA256] = true
		if len(p.Capabilities) == 0 {
			bad(key+".capabilities", "must name at least one capability")
		}
	}
	for _, name := range bobbySortedKeys(c.Nodes) {
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

// BobbyEnv is what bobby reads from the environment.
type BobbyEnv struct {
	ConfigPath            string // BOBBY_CONFIG
	BootstrapURL          string
	BootstrapPrincipal    string
	BootstrapToken        string
	BootstrapCapabilities []string // split on commas, trimmed, empties dropped
	capabilitiesSet       bool
}

// CapabilitiesSet reports whether AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES
// was present (an empty value then means "no capabilities").
func (e BobbyEnv) CapabilitiesSet() bool { return e.capabilitiesSet }

// BobbyEnvFrom reads bobby's variables through lookup.
func BobbyEnvFrom(lookup func(string) (string, bool)) BobbyEnv {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	env := BobbyEnv{
		ConfigPath:         get(EnvBobbyConfig),
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

// ReadBobbyEnv reads bobby's variables from the process environment.
func ReadBobbyEnv() BobbyEnv { return BobbyEnvFrom(os.LookupEnv) }

func bobbyContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func bobbySortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
