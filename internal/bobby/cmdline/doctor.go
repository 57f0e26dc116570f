package cmdline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/gateway"
)

// DoctorOptions configure Doctor.
type DoctorOptions struct {
	ConfigPath string
	Listen     string    // overrides [http].listen when set
	Now        time.Time // zero: time.Now()
	// SkipBrowser leaves out the launch check (tests of the other checks).
	SkipBrowser bool
}

// doctorBrowser launches the configured browser for real and asks its version.
func doctorBrowser(ctx context.Context, cfg config.Config, report func(level, check, format string, args ...any)) {
	if cfg.Browser.Engine == config.EngineFirefox {
		doctorFirefox(ctx, cfg, report)
		return
	}
	rt := browser.New(browser.Options{
		ExecPath: cfg.Browser.Path, ExtraFlags: cfg.Browser.Flags, DataDir: cfg.Browser.DataDir,
		Logger: slog.New(slog.DiscardHandler), LaunchTimeout: 30 * time.Second,
	})
	lctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	if err := rt.Open(lctx); err != nil {
		report("FAIL", "browser", "%s does not launch: %v", cfg.Browser.Path, err)
		return
	}
	defer rt.Close(context.WithoutCancel(ctx))
	v, err := rt.Version(lctx)
	if err != nil {
		report("FAIL", "browser", "launched but does not answer: %v", err)
		return
	}
	report("ok", "browser", "%s launches (%s)", cfg.Browser.Path, v)
}

// doctorFirefox launches Firefox, connects to its WebDriver BiDi endpoint
// and opens a session: the whole path the Firefox engine needs.
func doctorFirefox(ctx context.Context, cfg config.Config, report func(level, check, format string, args ...any)) {
	lctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	b, err := bidi.Launch(lctx, bidi.LaunchOptions{Path: cfg.Browser.Path, DataDir: cfg.Browser.DataDir, Args: cfg.Browser.Flags})
	if err != nil {
		report("FAIL", "browser", "%s: no WebDriver BiDi session: %v", cfg.Browser.Path, err)
		return
	}
	defer b.Close()
	if _, err := b.Tree(lctx); err != nil {
		report("FAIL", "browser", "%s: the BiDi session does not answer: %v", cfg.Browser.Path, err)
		return
	}
	// What a bobby session is on Firefox: a user context with a tab in it.
	uc, err := b.CreateUserContext(lctx)
	if err == nil {
		_, err = b.CreateTab(lctx, uc)
		_ = b.RemoveUserContext(context.WithoutCancel(lctx), uc)
	}
	if err != nil {
		report("FAIL", "browser", "%s: the BiDi session opens no user context and tab: %v", cfg.Browser.Path, err)
		return
	}
	report("ok", "browser", "%s launches and its WebDriver BiDi endpoint opens a session and a user context (%s %s)",
		cfg.Browser.Path, b.Capabilities.BrowserName, b.Capabilities.BrowserVersion)
}

// Doctor checks what `bobby serve` needs and prints one line per check:
// the config parses (principals and capabilities included), the browser
// binary launches, the listen address is free, and no credential expires
// within 7 days (a warning) or has expired (a failure). It returns an error
// when any check failed.
func Doctor(ctx context.Context, w io.Writer, o DoctorOptions) error {
	configPath, listen, now := o.ConfigPath, o.Listen, o.Now
	if now.IsZero() {
		now = time.Now()
	}
	failed := 0
	report := func(level, check, format string, args ...any) {
		if level == "FAIL" {
			failed++
		}
		fmt.Fprintf(w, "%-4s %-11s %s\n", level, check, fmt.Sprintf(format, args...))
	}
	cfg, err := config.Load(configPath)
	if err == nil {
		_, err = gateway.PrincipalsFromConfig(cfg)
	}
	switch {
	case err != nil:
		report("FAIL", "config", "%v", err)
		cfg = config.Default()
	default:
		src := cfg.Path
		if src == "" {
			src = "(defaults; no file)"
		}
		report("ok", "config", "%s: %d principal(s), %d profile(s), %d node(s), start phase %s",
			src, len(cfg.Principals), len(cfg.Profiles), len(cfg.Nodes), cfg.Toolset.StartPhase)
	}
	if listen != "" {
		cfg.HTTP.Listen = listen
	}

	if !o.SkipBrowser {
		doctorBrowser(ctx, cfg, report)
	}

	if cfg.HTTP.DownloadsRoot != "" {
		if st, err := os.Stat(cfg.HTTP.DownloadsRoot); err != nil || !st.IsDir() {
			report("warn", "downloads", "downloads_root %s is not a directory", cfg.HTTP.DownloadsRoot)
		}
	}

	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.HTTP.Listen)
	switch {
	case err != nil:
		report("FAIL", "listen", "%s is not free: %v", cfg.HTTP.Listen, err)
	default:
		l.Close()
		report("ok", "listen", "%s is free", cfg.HTTP.Listen)
	}

	if len(cfg.Principals) == 0 {
		report("warn", "principals", "none configured: `bobby serve` then needs %s", config.EnvBootstrapToken)
	}
	for _, p := range cfg.Principals {
		switch {
		case p.ExpiresAt.IsZero():
			report("ok", "credential", "%s: no expiry", p.Name)
		case !now.Before(p.ExpiresAt):
			report("FAIL", "credential", "%s expired at %s", p.Name, p.ExpiresAt.UTC().Format(time.RFC3339))
		case p.ExpiresAt.Sub(now) < gateway.CredentialWarnAhead:
			report("warn", "credential", "%s expires in %s (at %s): rotate it", p.Name,
				p.ExpiresAt.Sub(now).Round(time.Minute), p.ExpiresAt.UTC().Format(time.RFC3339))
		default:
			report("ok", "credential", "%s expires at %s", p.Name, p.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	if failed > 0 {
		return fmt.Errorf("doctor: %d check(s) failed", failed)
	}
	return nil
}
