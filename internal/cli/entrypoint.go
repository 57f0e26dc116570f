package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/deltaharness/delta/internal/config"
)

// entrypointCommand prepares a container's volume and then becomes the
// daemon: it seeds the four non-secret bundle files from base64 variables,
// applies the first-boot rules of the Litestream backup (restore, refuse, or
// start empty), and replaces itself with `litestream replicate -exec "delta
// serve"` when backup is configured, or with `delta serve` when it is not.
type entrypointCommand struct {
	env
	// run runs a command to completion (litestream restore); exec replaces
	// this process with argv. Tests replace both.
	run  func(ctx context.Context, argv []string, stdout, stderr io.Writer) error
	exec func(argv, environ []string) error
	// self is the delta binary the daemon runs from; lookPath finds
	// litestream. Empty self and nil lookPath mean os.Executable and
	// exec.LookPath.
	self     string
	lookPath func(string) (string, error)
}

// ErrEmptyReplica is returned when backup is configured, the local database
// is absent and the replica holds nothing to restore: starting empty would
// silently replace the agent's history, so it takes DELTA_BOOTSTRAP=1.
var ErrEmptyReplica = errors.New("the replica holds no backup")

func (c *entrypointCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("entrypoint")
	if err := parseFlags(fs, c.env, "", args, " (configuration comes from the environment)"); err != nil {
		return helpOK(err)
	}
	ec, err := config.LoadEntrypoint(c.lookup)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(c.stderr, nil))
	if err := seedBundle(ec.Workspace, ec.Seeds, logger); err != nil {
		return fmt.Errorf("entrypoint: %w", err)
	}
	plan, err := planBoot(ec, exists)
	if err != nil {
		return fmt.Errorf("entrypoint: %w", err)
	}
	for _, w := range plan.warnings {
		logger.Warn(w)
	}
	self := c.self
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("entrypoint: locate the delta binary: %w", err)
		}
	}
	if ec.Postgres {
		// The URL usually carries a password, so the log names no more than
		// the backend.
		logger.Info("entrypoint: DELTA_DB is PostgreSQL; starting the daemon as one of its workers (no Litestream)")
		return c.exec([]string{self, "serve"}, c.environ())
	}
	if !plan.backup {
		logger.Info("entrypoint: no backup configured; starting the daemon", "db", ec.DB)
		return c.exec([]string{self, "serve"}, c.environ())
	}
	lookPath := c.lookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	litestream, err := lookPath("litestream")
	if err != nil {
		return fmt.Errorf("entrypoint: backup is configured but litestream is not on PATH: %w", err)
	}
	cfgArgs := []string{"-config", plan.config}
	if plan.generate {
		path, err := writeLitestreamConfig(ec.DB, ec.ReplicaURL)
		if err != nil {
			return fmt.Errorf("entrypoint: %w", err)
		}
		// The file holds literal values, so nothing in it is expanded.
		cfgArgs = []string{"-config", path, "-no-expand-env"}
	}
	if plan.restore {
		if err := os.MkdirAll(filepath.Dir(ec.DB), 0o755); err != nil {
			return fmt.Errorf("entrypoint: %w", err)
		}
		logger.Info("entrypoint: no local database; restoring from the replica", "db", ec.DB)
		argv := append(append([]string{litestream, "restore"}, cfgArgs...), "-if-replica-exists", ec.DB)
		var out bytes.Buffer
		if err := c.run(ctx, argv, io.MultiWriter(c.stderr, &out), io.MultiWriter(c.stderr, &out)); err != nil {
			return fmt.Errorf("entrypoint: restore %s from the replica failed, refusing to start: %w", ec.DB, err)
		}
		if !exists(ec.DB) {
			return fmt.Errorf("entrypoint: %w of %s and the local database is absent: refusing to start empty; "+
				"on a genuine first boot against an empty replica set DELTA_BOOTSTRAP=1 once, then remove it", ErrEmptyReplica, ec.DB)
		}
		logger.Info("entrypoint: restored the database from the replica", "db", ec.DB)
	}
	argv := append(append([]string{litestream, "replicate"}, cfgArgs...), "-exec", shellQuote(self)+" serve")
	logger.Info("entrypoint: starting the daemon under litestream replicate", "db", ec.DB)
	return c.exec(argv, c.environ())
}

// bootPlan is what the first-boot rules decide.
type bootPlan struct {
	backup   bool     // run the daemon under litestream replicate
	config   string   // the Litestream configuration file to use
	generate bool     // write one from LITESTREAM_REPLICA_URL instead
	restore  bool     // restore the database before starting
	warnings []string // settings that have no effect, and starting empty
}

// planBoot applies the first-boot rules: an existing local database always
// wins; with backup configured, a missing database is restored (and the
// restore must succeed) unless DELTA_BOOTSTRAP=1 asks to start empty, which
// counts only in that one situation. A LITESTREAM_CONFIG that names a
// missing file is fatal; the default path is used only when it exists. On a
// PostgreSQL DELTA_DB there is nothing to restore or replicate, and a
// backup setting is refused rather than ignored.
func planBoot(ec config.Entrypoint, exists func(string) bool) (bootPlan, error) {
	var p bootPlan
	haveConfig := exists(ec.LitestreamConfig)
	if ec.LitestreamConfigExplicit && !haveConfig {
		return p, fmt.Errorf("LITESTREAM_CONFIG=%s: no such file; a named Litestream configuration must exist", ec.LitestreamConfig)
	}
	if ec.Postgres {
		// Litestream replicates a SQLite file; there is none here. Starting
		// anyway would leave the operator believing the agent is backed up.
		switch {
		case haveConfig:
			return p, fmt.Errorf("DELTA_DB is a PostgreSQL URL, but the Litestream configuration %s turns backup on: Litestream backs up only a SQLite DELTA_DB; "+
				"remove the file (or LITESTREAM_CONFIG) and back PostgreSQL up with its own tools", ec.LitestreamConfig)
		case ec.ReplicaURL != "":
			return p, errors.New("DELTA_DB is a PostgreSQL URL, but LITESTREAM_REPLICA_URL is set: Litestream backs up only a SQLite DELTA_DB; " +
				"unset LITESTREAM_REPLICA_URL and back PostgreSQL up with its own tools")
		}
		if ec.Bootstrap {
			p.warnings = append(p.warnings, "DELTA_BOOTSTRAP=1 has no effect: DELTA_DB is PostgreSQL, which Litestream does not back up")
		}
		return p, nil
	}
	switch {
	case haveConfig:
		p.backup, p.config = true, ec.LitestreamConfig
		if ec.ReplicaURL != "" {
			p.warnings = append(p.warnings, fmt.Sprintf("LITESTREAM_REPLICA_URL is ignored: the configuration %s is used", ec.LitestreamConfig))
		}
	case ec.ReplicaURL != "":
		p.backup, p.generate = true, true
	}
	switch {
	case !p.backup:
		if ec.Bootstrap {
			p.warnings = append(p.warnings, "DELTA_BOOTSTRAP=1 has no effect: no backup is configured")
		}
	case exists(ec.DB):
		if ec.Bootstrap {
			p.warnings = append(p.warnings, "DELTA_BOOTSTRAP=1 has no effect: the local database exists and is kept; remove DELTA_BOOTSTRAP")
		}
	case ec.Bootstrap:
		p.warnings = append(p.warnings, "DELTA_BOOTSTRAP=1: no local database, starting empty without restoring; remove DELTA_BOOTSTRAP now that the database will exist")
	default:
		p.restore = true
	}
	return p, nil
}

// seedBundle writes each set seed into dir when its file is absent. An
// existing file is never replaced: the agent may have evolved it since the
// first boot. A value that is not base64 is skipped with a warning, so the
// daemon still starts (with a missing or neutral file).
func seedBundle(dir string, seeds []config.Seed, logger *slog.Logger) error {
	for _, s := range seeds {
		if !s.Set {
			continue
		}
		target := filepath.Join(dir, s.File)
		if _, err := os.Lstat(target); err == nil {
			logger.Info("entrypoint: bundle file exists, not seeded", "file", target, "var", s.Var)
			continue
		}
		content, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s.Value), ""))
		if err != nil {
			logger.Warn("entrypoint: not valid base64, file not seeded", "var", s.Var, "file", target, "err", err)
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("seed %s: %w", target, err)
		}
		// O_EXCL: a file that appeared since the check is kept, too.
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("seed %s: %w", target, err)
		}
		_, err = f.Write(content)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("seed %s: %w", target, err)
		}
		logger.Info("entrypoint: seeded bundle file", "file", target, "var", s.Var, "bytes", len(content))
	}
	return nil
}

// litestreamTemplate is the configuration written for a bare
// LITESTREAM_REPLICA_URL: one-second sync, hourly snapshots, seven days of
// retention. Litestream 0.5 takes snapshot settings at the top level.
const litestreamTemplate = `# Written by delta entrypoint from LITESTREAM_REPLICA_URL.
snapshot:
  interval: 1h
  retention: 168h
dbs:
  - path: %s
    replica:
      url: %s
      sync-interval: 1s
`

// writeLitestreamConfig writes the template for db and url to a temporary
// file and returns its path.
func writeLitestreamConfig(db, url string) (string, error) {
	f, err := os.CreateTemp("", "delta-litestream-*.yml")
	if err != nil {
		return "", fmt.Errorf("write litestream configuration: %w", err)
	}
	_, err = fmt.Fprintf(f, litestreamTemplate, yamlString(db), yamlString(url))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write litestream configuration: %w", err)
	}
	return f.Name(), nil
}

// yamlString quotes s as a YAML double-quoted scalar (JSON's string syntax
// is a subset of it).
func yamlString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// shellQuote quotes s for the shell-word splitting litestream applies to
// -exec, so a binary path with spaces stays one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// runToCompletion runs argv and waits, with its output on stdout and stderr.
func runToCompletion(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}
