package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemonChild is a `delta serve` child process started by dev or demo.
// Running the same executable keeps the launcher's daemon identical to a
// directly started one.
type daemonChild struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
	err  error         // cmd.Wait's result, valid after done
}

// startDaemon starts `<self> serve` with exactly the given environment.
func startDaemon(env map[string]string, stdout, stderr io.Writer) (*daemonChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the delta executable: %w", err)
	}
	cmd := exec.Command(exe, "serve") //nolint:noctx // the daemon outlives any one context: stopped by SIGTERM, then killed, below
	cmd.Env = envList(env)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start daemon %s: %w", exe, err)
	}
	ch := &daemonChild{cmd: cmd, done: make(chan struct{})}
	go func() {
		ch.err = cmd.Wait()
		close(ch.done)
	}()
	return ch, nil
}

func (ch *daemonChild) pid() int { return ch.cmd.Process.Pid }

// exited describes how the child ended, for messages.
func (ch *daemonChild) exited() string {
	ps := ch.cmd.ProcessState
	switch {
	case ps == nil:
		return "daemon exited"
	case ps.ExitCode() >= 0:
		return fmt.Sprintf("daemon exited with status %d", ps.ExitCode())
	default:
		return "daemon ended: " + ps.String() // e.g. "signal: killed"
	}
}

// exitCode is the child's exit status; a child killed by a signal counts as 1.
func (ch *daemonChild) exitCode() int {
	if ch.cmd.ProcessState == nil {
		return 1
	}
	if c := ch.cmd.ProcessState.ExitCode(); c >= 0 {
		return c
	}
	return 1
}

// healthTimeout bounds how long dev and demo wait for /healthz.
const healthTimeout = 60 * time.Second

// waitHealthy polls base/healthz until it answers 200, the child exits,
// ctx is done, or healthTimeout passes.
func (ch *daemonChild) waitHealthy(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	client := &http.Client{Transport: t, Timeout: 2 * time.Second}
	defer t.CloseIdleConnections()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("health check: %w", err)
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ch.done:
			return fmt.Errorf("%s before it became healthy", ch.exited())
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("daemon did not answer %s/healthz within %s", base, healthTimeout)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stop asks the child to shut down (SIGTERM), waits up to grace, then
// kills it. It returns nil only when the child exited with status 0.
func (ch *daemonChild) stop(grace time.Duration) error {
	select {
	case <-ch.done:
	default:
		if ch.terminate(grace) {
			return fmt.Errorf("daemon did not stop within %s of SIGTERM and was killed", grace)
		}
	}
	if ch.err != nil {
		return fmt.Errorf("%s", ch.exited())
	}
	return nil
}

// terminate sends the child SIGTERM and waits up to grace for it to exit,
// then kills it and waits for that. It reports whether it had to kill.
func (ch *daemonChild) terminate(grace time.Duration) (killed bool) {
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch.done:
		return false
	case <-time.After(grace):
		_ = ch.cmd.Process.Kill()
		<-ch.done
		return true
	}
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the daemon binds; the daemon then fails loudly, and the
// launcher reports it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // bound and closed at once; nothing to cancel
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// healthBase is the URL the launcher probes: the bind address when it is
// a specific host, loopback when the daemon listens on every interface.
func healthBase(bind string, port int) string {
	host := strings.TrimSuffix(strings.TrimPrefix(bind, "["), "]")
	switch host {
	case "", "0.0.0.0", "::", "localhost":
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// environMap turns an environ list into a map; a later duplicate wins, as
// it does for exec.
func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		m[k] = v
	}
	return m
}

// envList turns a map into a sorted environ list (sorted: deterministic).
func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
