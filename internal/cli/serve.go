package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/daemon"
)

// serveCommand runs the production daemon until ctx is done (SIGINT or
// SIGTERM). Bare `delta` is the same command.
type serveCommand struct{ env }

func (c *serveCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("serve")
	if err := parseFlags(fs, c.env, "", args, " (configuration comes from the environment)"); err != nil {
		return helpOK(err)
	}
	cfg, err := loadConfig(c.lookup)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(c.stderr, nil))
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	if err := daemon.Serve(ctx, cfg, logger); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// runCommand is the one-shot mode: one task, in-process, conversation in
// memory, final text on stdout. It never loads delta.env.
type runCommand struct{ env }

func (c *runCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("run")
	const synopsis = "[<text>]   (reads the text from stdin when no argument is given)"
	pos, err := parse(fs, c.env, synopsis, args)
	if err != nil {
		return helpOK(err)
	}
	input := strings.Join(pos, " ")
	if len(pos) == 0 {
		b, err := io.ReadAll(io.LimitReader(c.stdin, maxInputBytes+1))
		if err != nil {
			return fmt.Errorf("run: read stdin: %w", err)
		}
		if len(b) > maxInputBytes {
			return fmt.Errorf("run: input on stdin is larger than %d bytes", maxInputBytes)
		}
		input = string(b)
	}
	if strings.TrimSpace(input) == "" {
		return usageFor(c.env, fs, synopsis, "no input: pass the task text as an argument or on stdin")
	}
	cfg, err := loadConfig(c.lookup)
	if err != nil {
		return err
	}
	// One-shot output is the answer on stdout; keep stderr for problems.
	logger := slog.New(slog.NewJSONHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	if err := daemon.RunOnce(ctx, cfg, input, c.stdout, logger); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// maxInputBytes bounds task text read from stdin.
const maxInputBytes = 8 << 20

func loadConfig(lookup LookupFunc) (config.Config, error) {
	cfg, err := config.Load(lookup)
	if err != nil {
		return config.Config{}, fmt.Errorf("configuration: %w", err)
	}
	return cfg, nil
}

// helpOK turns the -h outcome into success and passes other errors on.
func helpOK(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}
