package bidi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultFirefox is Debian's Firefox ESR.
const DefaultFirefox = "/usr/bin/firefox-esr"

// listening is the line Firefox prints on stderr once its BiDi endpoint
// accepts connections.
const listening = "WebDriver BiDi listening on "

// prefs keep a headless test or agent browser off the network it did not
// ask for (update checks, telemetry, remote settings, safe browsing) on top
// of the preferences Firefox's remote agent already recommends.
var prefs = map[string]string{
	"app.update.disabledForTesting":              "true",
	"browser.shell.checkDefaultBrowser":          "false",
	"browser.safebrowsing.malware.enabled":       "false",
	"browser.safebrowsing.phishing.enabled":      "false",
	"browser.safebrowsing.downloads.enabled":     "false",
	"datareporting.policy.dataSubmissionEnabled": "false",
	"toolkit.telemetry.reportingpolicy.firstRun": "false",
	"network.captive-portal-service.enabled":     "false",
	"network.connectivity-service.enabled":       "false",
	"services.settings.server":                   `"data:,"`,
	"extensions.update.enabled":                  "false",
	"browser.newtabpage.enabled":                 "false",
}

// LaunchOptions configure Launch. Zero values are the defaults.
type LaunchOptions struct {
	Path    string        // Firefox binary (default DefaultFirefox)
	DataDir string        // parent of the temporary profile (default os.TempDir())
	Headed  bool          // show a window (default headless)
	Args    []string      // extra command-line arguments
	Timeout time.Duration // to a listening endpoint and a session (default 30 s)
	Stderr  io.Writer     // Firefox's own stderr after the endpoint line (default discarded)
}

// Browser is a launched Firefox with one BiDi session on Conn.
type Browser struct {
	*Conn
	// Capabilities are what session.new answered (browserVersion,
	// userAgent, …).
	Capabilities SessionCapabilities

	cmd     *exec.Cmd
	profile string
	once    sync.Once
	waited  chan struct{}
}

// Launch starts Firefox with a fresh profile, waits for its BiDi endpoint,
// connects and opens a session. The process runs in its own process group,
// so Close reaches the content processes it forks.
func Launch(ctx context.Context, o LaunchOptions) (*Browser, error) {
	if o.Path == "" {
		o.Path = DefaultFirefox
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if _, err := os.Stat(o.Path); err != nil {
		return nil, fmt.Errorf("launch firefox: %w (apt-get install -y firefox-esr)", err)
	}
	profile, err := os.MkdirTemp(o.DataDir, "firefox-profile-")
	if err != nil {
		return nil, fmt.Errorf("launch firefox: profile dir: %w", err)
	}
	var userJS strings.Builder
	for k, v := range prefs {
		fmt.Fprintf(&userJS, "user_pref(%q, %s);\n", k, v)
	}
	if err := os.WriteFile(profile+"/user.js", []byte(userJS.String()), 0o600); err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("launch firefox: prefs: %w", err)
	}
	args := []string{"--remote-debugging-port", "0", "--profile", profile, "--no-remote", "--new-instance"}
	if !o.Headed {
		args = append(args, "--headless")
	}
	args = append(append(args, o.Args...), "about:blank")
	cmd := exec.Command(o.Path, args...) //nolint:noctx // the process outlives ctx, which bounds only the launch; Close ends it
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "MOZ_CRASHREPORTER_DISABLE=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("launch firefox: %w", err)
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("launch firefox %s: %w", o.Path, err)
	}
	b := &Browser{cmd: cmd, profile: profile, waited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(b.waited) }()

	endpoint := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			line := sc.Text()
			if !found {
				if url, ok := strings.CutPrefix(strings.TrimSpace(line), listening); ok {
					found = true
					endpoint <- url
				}
				continue
			}
			if o.Stderr != nil {
				fmt.Fprintln(o.Stderr, line)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	lctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var url string
	select {
	case url = <-endpoint:
	case <-b.waited:
		b.kill(0)
		return nil, fmt.Errorf("launch firefox: it exited before its BiDi endpoint listened (%s)", cmd.ProcessState)
	case <-lctx.Done():
		b.kill(0)
		return nil, fmt.Errorf("launch firefox: no BiDi endpoint within %s: %w", o.Timeout, lctx.Err())
	}
	conn, err := Dial(lctx, url+"/session")
	if err != nil {
		b.kill(0)
		return nil, fmt.Errorf("launch firefox: %w", err)
	}
	b.Conn = conn
	caps, err := conn.NewSession(lctx)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("launch firefox: %w", err)
	}
	b.Capabilities = caps
	return b, nil
}

// Close ends the session, stops Firefox and every process it started, and
// removes the profile. Safe to call twice.
func (b *Browser) Close() error {
	var err error
	b.once.Do(func() {
		if b.Conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = b.Conn.Call(ctx, "browser.close", nil, nil)
			cancel()
			_ = b.Conn.Close()
		}
		b.kill(3 * time.Second)
		err = os.RemoveAll(b.profile)
	})
	return err
}

// Exited is closed once the Firefox process has exited.
func (b *Browser) Exited() <-chan struct{} { return b.waited }

// kill gives the process grace to exit by itself, then ends its process
// group and waits (bounded) for the exit.
func (b *Browser) kill(grace time.Duration) {
	if b.cmd.Process == nil {
		return
	}
	select {
	case <-b.waited:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-b.waited:
	case <-time.After(5 * time.Second):
	}
}

// errNoProcess is what a Browser without a process reports.
var errNoProcess = errors.New("bidi: no firefox process")

// Pid is the Firefox main process id.
func (b *Browser) Pid() (int, error) {
	if b.cmd == nil || b.cmd.Process == nil {
		return 0, errNoProcess
	}
	return b.cmd.Process.Pid, nil
}
