// Package cmdline is bobby's command line: the stdio, serve, doctor and
// version commands, and the principal of a stdio process from the
// bootstrap variables. cmd/bobby calls Main; the MCP server itself is
// package gateway.
package cmdline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/gateway"
	"github.com/deltaharness/delta/internal/bobby/policy"
)

const usage = `usage: bobby <command> [flags]

commands:
  stdio    serve one MCP session on stdin/stdout (principal from AUTOMATION_RUNTIME_BOOTSTRAP_*)
  serve    serve MCP over streamable HTTP: POST/GET/DELETE /v1/mcp, GET /healthz
  doctor   check the config, the browser, the listen address and credential expiry
  version  print the version

flags (stdio, serve, doctor):
  --config FILE   TOML configuration (default: $BOBBY_CONFIG)
  --listen ADDR   listen address (serve, doctor; default: [http].listen)
  --log LEVEL     debug, info, warn, error (default warn; logs go to stderr)
`

// Main runs the bobby command line. It returns an error for a failed
// command (including a failed doctor check); the caller exits non-zero.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env config.Env) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "bobby %s (%s)\n", gateway.Version, runtime.Version())
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	case "stdio", "serve", "doctor":
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
	fs := flag.NewFlagSet("bobby "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", env.ConfigPath, "TOML configuration file")
	listen := fs.String("listen", "", "listen address")
	logLevel := fs.String("log", "warn", "log level")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", cmd, fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	if cmd == "doctor" {
		return Doctor(ctx, stdout, DoctorOptions{ConfigPath: *configPath, Listen: *listen})
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.HTTP.Listen = *listen
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
	}
	switch cmd {
	case "stdio":
		return runStdio(ctx, cfg, env, stdin, stdout, log)
	default:
		return runServe(ctx, cfg, env, stderr, log)
	}
}

// StdioPrincipal derives the principal of a stdio process from the
// bootstrap variables (see package config for their contract).
func StdioPrincipal(cfg config.Config, env config.Env, now time.Time) (policy.Principal, error) {
	reg, err := gateway.PrincipalsFromConfig(cfg)
	if err != nil {
		return policy.Principal{}, err
	}
	if reg.Len() > 0 {
		if env.BootstrapToken == "" {
			return policy.Principal{}, fmt.Errorf("%s is required when the config declares principals", config.EnvBootstrapToken)
		}
		p, err := reg.Authenticate(env.BootstrapToken, now)
		if err != nil {
			return policy.Principal{}, fmt.Errorf("%s: %w", config.EnvBootstrapToken, err)
		}
		if env.BootstrapPrincipal != "" && env.BootstrapPrincipal != p.Name {
			return policy.Principal{}, fmt.Errorf("%s does not belong to principal %q", config.EnvBootstrapToken, env.BootstrapPrincipal)
		}
		if env.CapabilitiesSet() {
			narrow, err := policy.ParseSet(env.BootstrapCapabilities)
			if err != nil {
				return policy.Principal{}, fmt.Errorf("%s: %w", config.EnvBootstrapCapabilities, err)
			}
			p.Capabilities = p.Capabilities.Intersect(narrow)
		}
		return p, nil
	}
	name := env.BootstrapPrincipal
	if name == "" {
		name = "local"
	}
	caps := policy.NewSet(policy.DefaultLocal...)
	if env.CapabilitiesSet() {
		caps, err = policy.ParseSet(env.BootstrapCapabilities)
		if err != nil {
			return policy.Principal{}, fmt.Errorf("%s: %w", config.EnvBootstrapCapabilities, err)
		}
	}
	hash := ""
	if env.BootstrapToken != "" {
		hash = policy.HashTokenHex(env.BootstrapToken)
	}
	return policy.NewPrincipal(name, caps, time.Time{}, hash)
}

func runStdio(ctx context.Context, cfg config.Config, env config.Env, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	if env.BootstrapURL != "" {
		if env.BootstrapToken == "" {
			return fmt.Errorf("%s needs %s", config.EnvBootstrapURL, config.EnvBootstrapToken)
		}
		return gateway.Bridge(ctx, env.BootstrapURL, gateway.BridgeOptions{
			Token: env.BootstrapToken, Principal: env.BootstrapPrincipal,
			Capabilities: env.BootstrapCapabilities, CapabilitiesSet: env.CapabilitiesSet(),
		}, stdin, stdout, log)
	}
	p, err := StdioPrincipal(cfg, env, time.Now())
	if err != nil {
		return fmt.Errorf("stdio principal: %w", err)
	}
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	if err := g.Open(ctx); err != nil {
		return err
	}
	serveErr := g.ServeStdio(ctx, stdin, stdout, p)
	closeErr := g.Close(context.WithoutCancel(ctx))
	return errors.Join(serveErr, closeErr)
}

// serveConfig adds the bootstrap principal (when given) to the configured
// ones, so `bobby serve` can be started with a token from the environment.
func serveConfig(cfg config.Config, env config.Env) (config.Config, error) {
	if env.BootstrapToken != "" {
		name := env.BootstrapPrincipal
		if name == "" {
			name = "local"
		}
		caps := env.BootstrapCapabilities
		if !env.CapabilitiesSet() {
			for _, c := range policy.DefaultLocal {
				caps = append(caps, string(c))
			}
		}
		cfg.Principals = append(append([]config.Principal(nil), cfg.Principals...), config.Principal{
			Name: name, TokenSHA256: policy.HashTokenHex(env.BootstrapToken), Capabilities: caps,
		})
	}
	if len(cfg.Principals) == 0 {
		return cfg, fmt.Errorf("serve needs a bearer principal: add a [[principals]] entry or set %s", config.EnvBootstrapToken)
	}
	return cfg, cfg.Validate()
}

func runServe(ctx context.Context, cfg config.Config, env config.Env, stderr io.Writer, log *slog.Logger) error {
	cfg, err := serveConfig(cfg, env)
	if err != nil {
		return err
	}
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTP.Listen, err)
	}
	if err := g.Open(ctx); err != nil {
		l.Close()
		return err
	}
	fmt.Fprintf(stderr, "bobby %s: MCP at http://%s%s (principals: %s)\n", gateway.Version, l.Addr(), gateway.MCPPath, principalNames(g))
	defer reloadOnHangup(ctx, g, cfg.Path, env, stderr)()
	serveErr := g.Serve(ctx, l)
	closeErr := g.Close(context.WithoutCancel(ctx))
	return errors.Join(serveErr, closeErr)
}

func principalNames(g *gateway.Gateway) string {
	var names []string
	for _, p := range g.Principals().Principals() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
