package cmdline

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/policy"
)

// testConfig declares bearer principals: two with every capability, a
// reader, and one whose credential expired.
func testConfig() config.Config {
	all := make([]string, 0, len(policy.All))
	for _, c := range policy.All {
		all = append(all, string(c))
	}
	cfg := config.Default()
	cfg.Principals = []config.Principal{
		{Name: "alice", TokenSHA256: policy.HashTokenHex("alice-token"), Capabilities: all},
		{Name: "reader", TokenSHA256: policy.HashTokenHex("reader-token"), Capabilities: []string{"page:read"}},
		{Name: "old", TokenSHA256: policy.HashTokenHex("old-token"), Capabilities: all, ExpiresAt: time.Now().Add(-time.Hour)},
	}
	return cfg
}

func TestStdioPrincipal(t *testing.T) {
	cfg := testConfig()
	now := time.Now()
	for _, tt := range []struct {
		name     string
		cfg      config.Config
		env      map[string]string
		wantName string
		wantCaps string
		wantErr  string
	}{
		{"defaults", config.Default(), nil, "local", "browser:mutate,page:read,artifact:capture,artifact:read", ""},
		{"explicit caps", config.Default(), map[string]string{config.EnvBootstrapPrincipal: "bot", config.EnvBootstrapCapabilities: "page:read"}, "bot", "page:read", ""},
		{"unknown cap", config.Default(), map[string]string{config.EnvBootstrapCapabilities: "root"}, "", "", "unknown capability"},
		{"configured needs token", cfg, nil, "", "", config.EnvBootstrapToken},
		{"configured token", cfg, map[string]string{config.EnvBootstrapToken: "reader-token"}, "reader", "page:read", ""},
		{"token of another principal", cfg, map[string]string{config.EnvBootstrapToken: "reader-token", config.EnvBootstrapPrincipal: "alice"}, "", "", "does not belong"},
		{"narrowed", cfg, map[string]string{config.EnvBootstrapToken: "alice-token", config.EnvBootstrapCapabilities: "page:read,file:upload"}, "alice", "page:read,file:upload", ""},
		{"expired", cfg, map[string]string{config.EnvBootstrapToken: "old-token"}, "", "", "expired"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := config.EnvFrom(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			p, err := StdioPrincipal(tt.cfg, env, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || p.Name != tt.wantName || strings.Join(p.Capabilities.Strings(), ",") != tt.wantCaps {
				t.Errorf("principal = %s %v, %v; want %s %s", p.Name, p.Capabilities.Strings(), err, tt.wantName, tt.wantCaps)
			}
		})
	}
}

func TestMainCommands(t *testing.T) {
	var out, errb bytes.Buffer
	ctx := context.Background()
	if err := Main(ctx, []string{"version"}, nil, &out, &errb, config.Env{}); err != nil || !strings.HasPrefix(out.String(), "bobby ") {
		t.Errorf("version: %q %v", out.String(), err)
	}
	if err := Main(ctx, []string{"fly"}, nil, &out, &errb, config.Env{}); err == nil {
		t.Error("unknown command accepted")
	}
	if err := Main(ctx, nil, nil, &out, &errb, config.Env{}); err == nil {
		t.Error("no command accepted")
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[http]\nlisten = \"0.0.0.0:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Main(ctx, []string{"serve", "--config", bad}, nil, &out, &errb, config.Env{}); err == nil || !strings.Contains(err.Error(), "http.listen") {
		t.Errorf("serve with a non-loopback listen: %v", err)
	}
	if err := Main(ctx, []string{"serve"}, nil, &out, &errb, config.Env{}); err == nil || !strings.Contains(err.Error(), "principal") {
		t.Errorf("serve without principals: %v", err)
	}
}

func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hash := strings.Repeat("ab", 32)
	ok := write("ok.toml", "[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"page:read\"]\nexpires_at = 2027-01-01T00:00:00Z\n")
	soon := write("soon.toml", "[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"page:read\"]\nexpires_at = 2026-08-10T00:00:00Z\n")
	expired := write("expired.toml", "[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"page:read\"]\nexpires_at = 2026-08-01T00:00:00Z\n")
	badCap := write("badcap.toml", "[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"root\"]\n")
	badBrowser := write("nobrowser.toml", "[browser]\npath = \"/nonexistent/chromium\"\n")
	firefox := write("firefox.toml", "[browser]\nengine = \"firefox\"\n[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"page:read\"]\n")
	noFirefox := write("nofirefox.toml", "[browser]\nengine = \"firefox\"\npath = \"/nonexistent/firefox\"\n")

	for _, tt := range []struct {
		name, config, listen string
		browser              bool
		wantErr              bool
		want                 []string
	}{
		{"healthy", ok, "127.0.0.1:0", true, false, []string{"ok   config", "ok   browser", "ok   listen", "ok   credential  agent expires at 2027-01-01"}},
		{"expiring soon warns", soon, "127.0.0.1:0", false, false, []string{"warn credential  agent expires in"}},
		{"expired fails", expired, "127.0.0.1:0", false, true, []string{"FAIL credential  agent expired"}},
		{"bad capability fails", badCap, "127.0.0.1:0", false, true, []string{"FAIL config", "unknown capability"}},
		{"missing browser fails", badBrowser, "127.0.0.1:0", true, true, []string{"FAIL browser"}},
		// Firefox: the config loads and doctor launches Firefox, opening a
		// BiDi session and a user context (what a bobby session is there).
		{"firefox engine", firefox, "127.0.0.1:0", true, false, []string{"ok   config",
			"ok   browser     /usr/bin/firefox-esr launches and its WebDriver BiDi endpoint opens a session and a user context (firefox 1", "ok   listen"}},
		{"missing firefox fails", noFirefox, "127.0.0.1:0", true, true, []string{"FAIL browser     /nonexistent/firefox: no WebDriver BiDi session"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.config == firefox {
				if _, err := os.Stat(config.DefaultFirefoxPath); err != nil && os.Getenv("CI") == "" {
					t.Skipf("Firefox is missing at %s (apt-get install -y firefox-esr)", config.DefaultFirefoxPath)
				}
			}
			var out strings.Builder
			err := Doctor(context.Background(), &out, DoctorOptions{ConfigPath: tt.config, Listen: tt.listen, Now: now, SkipBrowser: !tt.browser})
			if (err != nil) != tt.wantErr {
				t.Errorf("Doctor err = %v, want error %v\n%s", err, tt.wantErr, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	// A taken listen address fails.
	var out strings.Builder
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if err := Doctor(context.Background(), &out, DoctorOptions{ConfigPath: ok, Listen: taken.Addr().String(), Now: now, SkipBrowser: true}); err == nil || !strings.Contains(out.String(), "FAIL listen") {
		t.Errorf("taken address: %v\n%s", err, out.String())
	}
}
