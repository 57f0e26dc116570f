// Package cli is delta's command line: one struct per subcommand, each with
// Run(ctx, args), parsed with the standard flag package.
//
// Run is the whole program minus process plumbing: cmd/delta passes it the
// arguments, the output streams and os.LookupEnv, and turns the returned
// error into an exit status (ExitCode). Nothing here interprets the
// environment itself: values come through the lookup function and package
// config; the launchers (dev, demo) only pass the inherited environment on,
// verbatim, to the daemon child they start.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/version"
)

// ErrUsage marks an error caused by how the command was invoked (unknown
// subcommand, bad flag, missing argument). cmd/delta exits 2 on it.
var ErrUsage = errors.New("usage")

// LookupFunc reads one variable of the process environment, like os.LookupEnv.
type LookupFunc func(name string) (string, bool)

// ExitError carries a specific exit status, for commands that mirror a
// child's status (delta dev exits with its daemon).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode maps an error returned by Run to the process exit status:
// 0 for nil, 2 for usage errors, the carried code for *ExitError, else 1.
func ExitCode(err error) int {
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, ErrUsage):
		return 2
	default:
		return 1
	}
}

// usageError wraps a usage problem so that errors.Is(err, ErrUsage) holds
// while the message stays the plain reason.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// env is what every command gets from the process: streams and the
// environment lookup.
type env struct {
	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader
	lookup LookupFunc
	// environ lists the whole environment, for the launchers (dev, demo) to
	// pass on to the child daemon verbatim; they interpret no value from it
	// themselves (config.DevEnv does).
	environ func() []string
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // the argument synopsis after "delta <name>"
	run     func(ctx context.Context, e env, args []string) error
}

// commands is the subcommand table, in the order help lists them.
func commands() []command {
	return []command{
		{"serve", "run the daemon (the same as bare `delta`)", "",
			func(ctx context.Context, e env, args []string) error { return (&serveCommand{env: e}).Run(ctx, args) }},
		{"init", "create a five-file agent bundle in <dir>, never overwriting", initSynopsis,
			func(ctx context.Context, e env, args []string) error { return (&initCommand{env: e}).Run(ctx, args) }},
		{"dev", "run the daemon for a bundle as a local child process and open the Cockpit", devSynopsis,
			func(ctx context.Context, e env, args []string) error { return (&devCommand{env: e}).Run(ctx, args) }},
		{"send", "send a task to a local daemon and print its events as JSON Lines", sendSynopsis,
			func(ctx context.Context, e env, args []string) error { return (&sendCommand{env: e}).Run(ctx, args) }},
		{"watch", "follow a local daemon's event stream as JSON Lines", watchSynopsis,
			func(ctx context.Context, e env, args []string) error { return (&watchCommand{env: e}).Run(ctx, args) }},
		{"run", "run one task in-process and print the answer (text from args or stdin)", "[<text>]",
			func(ctx context.Context, e env, args []string) error { return (&runCommand{env: e}).Run(ctx, args) }},
		{"demo", "run a complete sample task end to end and show every step", demoSynopsis,
			func(ctx context.Context, e env, args []string) error { return (&demoCommand{env: e}).Run(ctx, args) }},
		{"collector", "run the reference telemetry collector into PostgreSQL (agent_events)", collectorSynopsis,
			func(ctx context.Context, e env, args []string) error {
				return (&collectorCommand{env: e}).Run(ctx, args)
			}},
		{"scheduler", "run the scheduling control plane: schedules in SQLite, each due one fired as POST /v1/tasks on the daemon", schedulerSynopsis,
			func(ctx context.Context, e env, args []string) error {
				return (&schedulerCommand{env: e}).Run(ctx, args)
			}},
		{"entrypoint", "container entrypoint: seed the bundle, restore the database or refuse, then run the daemon (under litestream with backup)", "",
			func(ctx context.Context, e env, args []string) error {
				return (&entrypointCommand{env: e, run: runToCompletion, exec: execProcess}).Run(ctx, args)
			}},
		{"smoke", "check a deployed daemon: /healthz, a run that must complete, its config and record", "[--url URL] [--timeout D]",
			func(ctx context.Context, e env, args []string) error { return (&smokeCommand{env: e}).Run(ctx, args) }},
		{"version", "print the version", "",
			func(_ context.Context, e env, args []string) error { return versionRun(e, args) }},
		{"help", "show this help, or the usage of one command", "[<command>]",
			func(ctx context.Context, e env, args []string) error { return helpRun(ctx, e, args) }},
	}
}

// Run executes the command line args (without the program name).
// Bare `delta` runs the daemon. lookup reads the process environment
// (os.LookupEnv in production, a map in tests).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, lookup LookupFunc) error {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	e := env{stdout: stdout, stderr: stderr, stdin: os.Stdin, lookup: lookup, environ: os.Environ}
	return dispatch(ctx, e, args)
}

// dispatch picks the subcommand for args.
func dispatch(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return (&serveCommand{env: e}).Run(ctx, nil)
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		return helpRun(ctx, e, nil)
	case "-v", "-version", "--version":
		return versionRun(e, nil)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, e, args[1:])
		}
	}
	if strings.HasPrefix(name, "-") {
		return usagef("unknown flag %s (bare `delta` takes no flags; see `delta help`)", name)
	}
	return usagef("unknown command %q (see `delta help`)", name)
}

func helpRun(ctx context.Context, e env, args []string) error {
	if len(args) > 1 {
		return usagef("help: takes at most one command name")
	}
	if len(args) == 1 {
		for _, c := range commands() {
			if c.name != args[0] {
				continue
			}
			if c.name == "help" || c.name == "version" {
				fmt.Fprintf(e.stdout, "usage: delta %s %s\n\n%s\n", c.name, c.usage, c.summary)
				return nil
			}
			// Every other command answers -h with its usage and flags.
			return c.run(ctx, e, []string{"-h"})
		}
		return usagef("help: unknown command %q", args[0])
	}
	fmt.Fprint(e.stdout, "Delta: an agent harness daemon.\n\nusage: delta [command] [arguments]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(e.stdout, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(e.stdout, "\nBare `delta` runs the daemon with configuration from the environment.\n"+
		"Run `delta help <command>` or `delta <command> -h` for a command's flags.\n"+
		"First time? `delta demo` runs a complete sample task end to end.\n")
	return nil
}

func versionRun(e env, args []string) error {
	if len(args) > 0 {
		return usagef("version: takes no arguments")
	}
	fmt.Fprintln(e.stdout, "delta", fullVersion())
	return nil
}

// fullVersion is the stamped harness version plus the VCS revision the Go
// toolchain recorded, when there is one.
func fullVersion() string {
	v := version.Version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return v + " (" + rev + dirty + ")"
}

// newFlagSet returns a flag set whose errors and usage go nowhere: parse
// reports them once, itself, in a consistent shape.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("delta "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses flags that may come before, between or after positional
// arguments (`delta dev ./my-agent --port 8080` is the documented form).
// A bare `--` ends flag parsing; everything after it is positional.
// It returns the positional arguments. -h prints the usage to stdout and
// returns errHelp, which Run's callers turn into a clean exit.
func parse(fs *flag.FlagSet, e env, synopsis string, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage(e.stdout, fs, synopsis)
				return nil, errHelp
			}
			printUsage(e.stderr, fs, synopsis)
			return nil, usagef("%s: %s", strings.TrimPrefix(fs.Name(), "delta "), flagProblem(fs, err))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// badFlagValue matches the flag package's refusal of a value.
var badFlagValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): parse error$`)

// flagProblem is err, a refusal by the flag package, with its bare "parse
// error" replaced by what the flag takes (--port abc: a whole number).
func flagProblem(fs *flag.FlagSet, err error) string {
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return err.Error()
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err.Error()
	}
	var want string
	switch g.Get().(type) {
	case int, int64, uint, uint64:
		want = "want a whole number"
	case time.Duration:
		want = "want a duration such as 30s, 5m or 1h30m"
	default:
		return err.Error()
	}
	return fmt.Sprintf("invalid value %q for flag -%s: %s", m[1], m[2], want)
}

// parseFlags is parse for a command that takes flags only: an argument is
// a usage error, its message followed by why ("" or a reason in
// parentheses after a space).
func parseFlags(fs *flag.FlagSet, e env, synopsis string, args []string, why string) error {
	pos, err := parse(fs, e, synopsis, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageFor(e, fs, synopsis, "unexpected argument %q"+why, pos[0])
	}
	return nil
}

// errHelp reports that -h was handled; commands return nil for it.
var errHelp = errors.New("help requested")

func printUsage(w io.Writer, fs *flag.FlagSet, synopsis string) {
	name := strings.TrimPrefix(fs.Name(), "delta ")
	fmt.Fprintf(w, "usage: %s %s\n", fs.Name(), synopsis)
	for _, c := range commands() {
		if c.name == name {
			fmt.Fprintf(w, "\n%s\n", c.summary)
		}
	}
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		arg, u := flag.UnquoteUsage(f)
		l := "  --" + f.Name
		if arg != "" {
			l += " " + arg
		}
		l += "\t" + u
		// A text that says its own default ("default: a free port") is
		// not followed by the flag package's value for it as well.
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && !strings.Contains(u, "(default") {
			l += " (default " + f.DefValue + ")"
		}
		lines = append(lines, l)
	})
	if len(lines) == 0 {
		return
	}
	slices.Sort(lines)
	fmt.Fprintln(w, "\nflags:")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// usageFor prints the command's usage to stderr and returns a usage error.
func usageFor(e env, fs *flag.FlagSet, synopsis, format string, a ...any) error {
	printUsage(e.stderr, fs, synopsis)
	return usagef("%s: %s", strings.TrimPrefix(fs.Name(), "delta "), fmt.Sprintf(format, a...))
}

// checkPort validates a --port value: 0 means "not given" where allowed.
func checkPort(p int, allowZero bool) error {
	if allowZero && p == 0 {
		return nil
	}
	if p < 1 || p > 65535 {
		return fmt.Errorf("--port %d is out of range (1-65535)", p)
	}
	return nil
}
