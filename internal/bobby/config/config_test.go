package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func noEnv(string) (string, bool) { return "", false }

const fullBobby = `
[http]
listen = "127.0.0.1:9999"
max_download_bytes = 1024
downloads_root = "/tmp/dl"
max_sessions = 4
idle_timeout = "90s"

[browser]
path = "/usr/bin/chromium"
flags = ["--lang=fr"]
data_dir = "/tmp/bobby"

[toolset]
start_phase = "act"

[profiles.default]
locale = "fr-FR"

[profiles.mobile]
viewport_width = 390
viewport_height = 844
user_agent = "Mobile"

[[principals]]
name = "agent"
token_sha256 = "` + "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8" + `"
capabilities = ["browser:mutate", "page:read"]
expires_at = 2030-01-02T03:04:05Z

[[principals]]
name = "reader"
token_env = "READER_TOKEN"
capabilities = ["page:read"]

[nodes.vision1]
url = "http://127.0.0.1:9000"
model = "m"
kind = "vision"
`

func TestParseFull(t *testing.T) {
	lookup := func(k string) (string, bool) {
		if k == "READER_TOKEN" {
			return "reader-secret", true
		}
		return "", false
	}
	cfg, err := Parse([]byte(fullBobby), lookup)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.HTTP.Listen != "127.0.0.1:9999" || cfg.HTTP.MaxDownloadBytes != 1024 || cfg.HTTP.DownloadsRoot != "/tmp/dl" {
		t.Errorf("http = %+v", cfg.HTTP)
	}
	if cfg.HTTP.MaxSessions != 4 || cfg.HTTP.IdleTimeout != 90*time.Second {
		t.Errorf("session limits = %d, %s", cfg.HTTP.MaxSessions, cfg.HTTP.IdleTimeout)
	}
	if cfg.Browser.DataDir != "/tmp/bobby" || len(cfg.Browser.Flags) != 1 || cfg.Browser.Flags[0] != "--lang=fr" {
		t.Errorf("browser = %+v", cfg.Browser)
	}
	if cfg.Toolset.StartPhase != "act" {
		t.Errorf("start phase = %q", cfg.Toolset.StartPhase)
	}
	if got := cfg.Profiles["mobile"]; got.ViewportWidth != 390 || got.UserAgent != "Mobile" {
		t.Errorf("mobile profile = %+v", got)
	}
	if cfg.Profiles["default"].Locale != "fr-FR" {
		t.Errorf("default profile = %+v", cfg.Profiles["default"])
	}
	if len(cfg.Principals) != 2 {
		t.Fatalf("principals = %d", len(cfg.Principals))
	}
	want := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if !cfg.Principals[0].ExpiresAt.Equal(want) {
		t.Errorf("expires_at = %v, want %v", cfg.Principals[0].ExpiresAt, want)
	}
	sum := sha256.Sum256([]byte("reader-secret"))
	if cfg.Principals[1].TokenSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("token_env not hashed: %q", cfg.Principals[1].TokenSHA256)
	}
	if cfg.Nodes["vision1"].URL != "http://127.0.0.1:9000" {
		t.Errorf("nodes = %+v", cfg.Nodes)
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := Parse([]byte(""), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Listen != DefaultListen || cfg.Toolset.StartPhase != "explore" || cfg.Browser.Path != DefaultBrowserPath {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	if _, ok := cfg.Profiles["default"]; !ok {
		t.Error("default profile missing")
	}
	if cfg.HTTP.MaxDownloadBytes != DefaultMaxDownloadBytes {
		t.Errorf("max_download_bytes = %d", cfg.HTTP.MaxDownloadBytes)
	}
	if cfg.HTTP.KeepAlive != 15*time.Second {
		t.Errorf("keepalive default = %s", cfg.HTTP.KeepAlive)
	}
	if cfg.HTTP.MaxSessions != 32 || cfg.HTTP.IdleTimeout != 15*time.Minute {
		t.Errorf("session limit defaults = %d, %s", cfg.HTTP.MaxSessions, cfg.HTTP.IdleTimeout)
	}
}

func TestParseErrors(t *testing.T) {
	const hash = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
	for _, tt := range []struct {
		name, toml string
		wantKey    string // substring naming the offending key
	}{
		{"unknown top-level key", "colour = 1", "colour"},
		{"unknown nested key", "[http]\nlisten_addr = \"x\"", "http.listen_addr"},
		{"unknown profile key", "[profiles.a]\nheight = 3", "profiles.a.height"},
		{"non-loopback listen", "[http]\nlisten = \"0.0.0.0:80\"", "http.listen"},
		{"listen without port", "[http]\nlisten = \"127.0.0.1\"", "http.listen"},
		{"bad phase", "[toolset]\nstart_phase = \"fly\"", "toolset.start_phase"},
		{"bad hash", "[[principals]]\nname=\"a\"\ntoken_sha256=\"abc\"\ncapabilities=[\"page:read\"]", "principals[0].token_sha256"},
		{"no token", "[[principals]]\nname=\"a\"\ncapabilities=[\"page:read\"]", "principals[0].token_sha256"},
		{"dup principal", "[[principals]]\nname=\"a\"\ntoken_sha256=\"" + hash + "\"\ncapabilities=[\"page:read\"]\n[[principals]]\nname=\"a\"\ntoken_sha256=\"" + strings.Repeat("a", 64) + "\"\ncapabilities=[\"page:read\"]", "principals[1].name"},
		{"shared token", "[[principals]]\nname=\"a\"\ntoken_sha256=\"" + hash + "\"\ncapabilities=[\"page:read\"]\n[[principals]]\nname=\"b\"\ntoken_sha256=\"" + hash + "\"\ncapabilities=[\"page:read\"]", "principals[1].token_sha256"},
		{"no capabilities", "[[principals]]\nname=\"a\"\ntoken_sha256=\"" + hash + "\"", "principals[0].capabilities"},
		{"unset token_env", "[[principals]]\nname=\"a\"\ntoken_env=\"NOPE\"\ncapabilities=[\"page:read\"]", "principals[0].token_env"},
		{"zero session cap", "[http]\nmax_sessions = 0", "http.max_sessions"},
		{"idle timeout too short", "[http]\nidle_timeout = \"10ms\"", "http.idle_timeout"},
		{"idle timeout not a duration", "[http]\nidle_timeout = \"soon\"", "idle_timeout"},
		{"negative keepalive", "[http]\nkeepalive = \"-1s\"", "http.keepalive"},
		{"negative download cap", "[http]\nmax_download_bytes = -1", "http.max_download_bytes"},
		{"half viewport", "[profiles.p]\nviewport_width = 100", "profiles.p.viewport_width"},
		{"node without url", "[nodes.v]\nmodel = \"m\"", "nodes.v.url"},
		{"bad syntax", "[http\nlisten=", "parse toml"},
		{"wrong type", "[http]\nlisten = 5", "listen"},
		{"unknown engine", "[browser]\nengine = \"webkit\"", "browser.engine"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.toml), noEnv)
			if err == nil {
				t.Fatal("Parse succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.wantKey) {
				t.Errorf("error %q does not name %q", err, tt.wantKey)
			}
		})
	}
}

func TestEngineFirefoxDefaultsToDebiansFirefoxESR(t *testing.T) {
	cfg, err := Parse([]byte("[browser]\nengine = \"firefox\""), noEnv)
	if err != nil {
		t.Fatalf("firefox engine: %v", err)
	}
	if cfg.Browser.Engine != EngineFirefox || cfg.Browser.Path != DefaultFirefoxPath {
		t.Errorf("engine %q path %q, want firefox at %s", cfg.Browser.Engine, cfg.Browser.Path, DefaultFirefoxPath)
	}
	cfg, err = Parse([]byte("[browser]\nengine = \"firefox\"\npath = \"/opt/ff/firefox\""), noEnv)
	if err != nil || cfg.Browser.Path != "/opt/ff/firefox" {
		t.Errorf("firefox at a named path: path %q, %v", cfg.Browser.Path, err)
	}
	cfg, err = Parse([]byte("[browser]\nengine = \"firefox\"\npath = \"/opt/ff/firefox\"\n[http]\nmax_sessions = 0"), noEnv)
	if err == nil || !strings.Contains(err.Error(), "http.max_sessions") || cfg.Browser.Engine != "" {
		t.Errorf("a bad key beside the engine: cfg %+v, err %v; want the zero config and the key", cfg.Browser, err)
	}
	cfg, err = Parse([]byte("[browser]\nengine = \"chromium\""), noEnv)
	if err != nil || cfg.Browser.Path != DefaultBrowserPath {
		t.Errorf("chromium engine: path %q, %v", cfg.Browser.Path, err)
	}
}

func TestParseKeyErrorType(t *testing.T) {
	_, err := Parse([]byte("nope = true"), noEnv)
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "nope" {
		t.Fatalf("err = %v, want *KeyError{Key: nope}", err)
	}
}

func TestParseNonLoopbackAllowed(t *testing.T) {
	cfg, err := Parse([]byte("[http]\nlisten = \"0.0.0.0:8765\"\nallow_non_loopback = true"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Listen != "0.0.0.0:8765" {
		t.Errorf("listen = %q", cfg.HTTP.Listen)
	}
}

func TestLoad(t *testing.T) {
	if cfg, err := Load(""); err != nil || cfg.HTTP.Listen != DefaultListen {
		t.Fatalf("Load(\"\") = %+v, %v", cfg, err)
	}
	path := filepath.Join(t.TempDir(), "bobby.toml")
	if err := os.WriteFile(path, []byte("[http]\nlisten = \"[::1]:7000\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != path || cfg.HTTP.Listen != "[::1]:7000" {
		t.Errorf("cfg = %+v", cfg)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("missing file loaded")
	}
}

func TestEnvFrom(t *testing.T) {
	env := map[string]string{
		EnvConfig:                "/etc/bobby.toml",
		EnvBootstrapPrincipal:    " agent ",
		EnvBootstrapToken:        "tok",
		EnvBootstrapCapabilities: "page:read, browser:mutate,,",
	}
	got := EnvFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if got.ConfigPath != "/etc/bobby.toml" || got.BootstrapPrincipal != "agent" || got.BootstrapToken != "tok" {
		t.Errorf("env = %+v", got)
	}
	if !got.CapabilitiesSet() || strings.Join(got.BootstrapCapabilities, "|") != "page:read|browser:mutate" {
		t.Errorf("capabilities = %q set=%v", got.BootstrapCapabilities, got.CapabilitiesSet())
	}
	if EnvFrom(noEnv).CapabilitiesSet() {
		t.Error("capabilities reported set when absent")
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "localhost": true, "::1": true, "[::1]": true, "127.5.5.5": true,
		"0.0.0.0": false, "10.0.0.1": false, "example.com": false, "": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func FuzzParseBobby(f *testing.F) {
	f.Add([]byte(fullBobby))
	f.Add([]byte(""))
	f.Add([]byte("[http]\nlisten = \"127.0.0.1:1\""))
	f.Add([]byte("[[principals]]\nname=1"))
	f.Add([]byte("[nodes.x]\nurl=\"u\"\n[nodes.x.y]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, noEnv)
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("Parse accepted a config that Validate rejects: %v", verr)
			}
		}
	})
}
