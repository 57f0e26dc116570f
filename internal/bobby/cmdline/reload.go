package cmdline

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/gateway"
)

// reloadOnHangup reloads the bearer principals from the config file at
// path (plus the bootstrap principal of env, as at start) on every SIGHUP
// until ctx ends or the returned stop is called, and reports each outcome
// on out. A failed reload keeps the previous principals.
func reloadOnHangup(ctx context.Context, g *gateway.Gateway, path string, env config.Env, out io.Writer) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				fmt.Fprintln(out, reloadFrom(g, path, env))
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// reloadFrom is one SIGHUP reload; it returns the line to report.
func reloadFrom(g *gateway.Gateway, path string, env config.Env) string {
	if path == "" {
		return "bobby: SIGHUP: no config file to reload (started without --config or " + config.EnvConfig + ")"
	}
	cfg, err := config.Load(path)
	if err == nil {
		cfg, err = serveConfig(cfg, env)
	}
	var ended []string
	if err == nil {
		ended, err = g.ReloadPrincipals(cfg)
	}
	if err != nil {
		return fmt.Sprintf("bobby: SIGHUP: reload %s failed, the previous principals stay: %v", path, err)
	}
	line := fmt.Sprintf("bobby: SIGHUP: principals reloaded from %s: %s", path, principalNames(g))
	if len(ended) > 0 {
		line += "; MCP sessions ended (they must initialize again) for: " + strings.Join(ended, ", ")
	}
	return line
}
