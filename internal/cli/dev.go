package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/model/scripted"
)

// devCommand is the local launcher: it runs the ordinary production daemon
// as a child process with the bundle's delta.env overlaid on the inherited
// environment and development defaults (config.DevEnv), waits until it is
// healthy, prints the URL, opens the Cockpit, and exits with the child.
type devCommand struct{ env }

// stopGrace is how long a launcher waits for its daemon after SIGTERM
// before killing it.
const stopGrace = 30 * time.Second

// devSynopsis is the argument synopsis `delta dev` shows in help and usage errors.
const devSynopsis = "<bundle> [--port N] [--no-open] [--scripted]"

func (c *devCommand) Run(ctx context.Context, args []string) error {
	fset := newFlagSet("dev")
	port := fset.Int("port", 0, "`port` for the daemon (default: a free port)")
	noOpen := fset.Bool("no-open", false, "do not open the Cockpit in a browser")
	useScripted := fset.Bool("scripted", false, "use the built-in scripted provider (the one delta demo uses) instead of a real model")
	pos, err := parse(fset, c.env, devSynopsis, args)
	if err != nil {
		return helpOK(err)
	}
	switch {
	case len(pos) == 0:
		return usageFor(c.env, fset, devSynopsis, "missing the bundle directory")
	case len(pos) > 1:
		return usageFor(c.env, fset, devSynopsis, "takes one bundle directory, got %d arguments", len(pos))
	}
	if err := checkPort(*port, true); err != nil {
		return usageFor(c.env, fset, devSynopsis, "%v", err)
	}
	dir, err := bundleDir(pos[0])
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	file, err := readEnvFile(filepath.Join(dir, "delta.env"))
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	p := *port
	if p == 0 {
		if p, err = freePort(); err != nil {
			return fmt.Errorf("dev: %w", err)
		}
	}
	childEnv := config.DevEnv(dir, environMap(c.environ()), file, p)
	if *port != 0 {
		// Checked before the child starts: a child that cannot bind exits,
		// but the launcher's health probe would first be answered by
		// whatever holds the port (often another delta dev), and print
		// that it is running.
		if err := portFree(childEnv["DELTA_BIND"], p); err != nil {
			return fmt.Errorf("dev: %w", err)
		}
	}
	if *useScripted {
		fake, err := scripted.Start(scripted.DemoScript())
		if err != nil {
			return fmt.Errorf("dev: %w", err)
		}
		defer fake.Close()
		maps.Copy(childEnv, scriptedEnv(fake.URL()))
	} else if !hasModelCredential(childEnv) {
		// Without this line the first task fails after its retries with a
		// DNS or auth error from the default provider.
		fmt.Fprintf(c.stderr, "delta dev: no model credential is set (MODEL_API_KEY, OPENROUTER_API_KEY or DELTA_BROKER_TOKEN_URL in the environment or %s), so tasks will fail; `delta dev --scripted %s` runs the built-in scripted provider instead\n",
			filepath.Join(pos[0], "delta.env"), pos[0])
	}

	ch, err := startDaemon(childEnv, c.stdout, c.stderr)
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	if err := ch.waitHealthy(ctx, healthBase(childEnv["DELTA_BIND"], p)); err != nil {
		stopErr := ch.stop(stopGrace)
		if ctx.Err() != nil && stopErr == nil {
			return nil // interrupted during startup; the daemon stopped cleanly
		}
		return &ExitError{Code: max(ch.exitCode(), 1), Err: fmt.Errorf("dev: %w", err)}
	}
	url := fmt.Sprintf("http://localhost:%d", p)
	fmt.Fprintf(c.stdout, "Delta is running at %s (cockpit: %s/dev)\n", url, url)
	if *useScripted {
		fmt.Fprintln(c.stdout, "model: the built-in scripted provider (--scripted); it answers like `delta demo`, offline")
	}
	if !*noOpen {
		openBrowser(url + "/dev")
	}

	select {
	case <-ch.done:
	case <-ctx.Done():
		// Forward the shutdown. A terminal Ctrl-C has usually reached the
		// child already (same process group); SIGTERM covers `kill <pid>`.
		if ch.terminate(stopGrace) {
			return &ExitError{Code: 1, Err: fmt.Errorf("dev: daemon did not stop within %s and was killed", stopGrace)}
		}
	}
	if ch.err == nil {
		return nil
	}
	return &ExitError{Code: ch.exitCode(), Err: fmt.Errorf("dev: %s", ch.exited())}
}

// hasModelCredential reports whether the daemon's environment names a
// credential for its primary provider. An environment that does not load
// says yes: the daemon reports what is wrong with it.
func hasModelCredential(env map[string]string) bool {
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return err != nil || cfg.ModelAPIKey != "" || cfg.Broker.TokenURL != ""
}

// scriptedEnv points a daemon at the scripted provider listening at url.
func scriptedEnv(url string) map[string]string {
	return map[string]string{
		"MODEL_BASE_URL": url + "/", "MODEL_API_KEY": "demo", "MODEL_API": config.APIChat,
		"DELTA_MODEL_PRIMARY": demoModel, "DELTA_MODEL_FALLBACKS": "",
	}
}

// portFree reports whether the daemon could listen on bind:port now.
func portFree(bind string, port int) error {
	addr := net.JoinHostPort(bind, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr) //nolint:noctx // bound and closed at once; nothing to cancel
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("port %d is already in use on %s (another `delta dev` or daemon?): pass another --port, or leave --port out for a free one", port, bind)
	}
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return l.Close()
}

// bundleDir checks that dir is an existing directory and returns it absolute.
func bundleDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("bundle %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("bundle %s does not exist (create one with `delta init %s`)", dir, dir)
	}
	if err != nil {
		return "", fmt.Errorf("bundle %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("bundle %s is not a directory", dir)
	}
	return abs, nil
}

// readEnvFile parses a delta.env; a missing file is an empty one.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return config.ParseEnvFile(f), nil
}

// openBrowser asks the desktop to open url. Failure (no desktop, no
// xdg-open) is ignored: the URL is already printed.
func openBrowser(url string) {
	cmd := exec.Command("xdg-open", url) //nolint:noctx // a desktop helper left to run on its own
	if err := cmd.Start(); err != nil {
		return
	}
	go func() { _ = cmd.Wait() }()
}
