// Package daemontest builds the real delta binary for the test packages
// that run it as a child process (test/e2e, test/crash, internal/cli), and
// holds what they share to run `delta serve` there: a free loopback port,
// an initialised workspace, the environment that points a daemon at the
// scripted model, and a Process that waits for /healthz, stops with SIGTERM
// and dies with SIGKILL.
package daemontest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build builds cmd/delta to bin with the given build tags, with the go
// command's output in the error. It builds from the module, so it works
// from any working directory; GOFLAGS from the environment apply as usual.
func Build(bin string, tags ...string) error {
	args := []string{"build"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "-o", bin, "github.com/deltaharness/delta/cmd/delta")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Binary is one delta binary Main builds.
type Binary struct {
	Path *string  // receives the built binary's path
	Name string   // its file name in the build folder
	Tags []string // build tags (-tags)
}

// Main is a TestMain body: it builds each binary (at the same time) into a
// fresh temporary folder named after prefix, runs the tests and removes
// the folder. It returns the exit code for os.Exit.
func Main(m *testing.M, prefix string, bins ...Binary) int {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	var wg sync.WaitGroup
	errs := make([]error, len(bins))
	for i, b := range bins {
		*b.Path = filepath.Join(dir, b.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Build(*b.Path, b.Tags...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// FreePort is a loopback TCP port nothing listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Init runs `bin init ws`, failing the test with its output.
func Init(t testing.TB, bin, ws string) {
	t.Helper()
	if out, err := exec.Command(bin, "init", ws).CombinedOutput(); err != nil {
		t.Fatalf("delta init: %v\n%s", err, out)
	}
}

// DBPath is the database of a daemon whose files live in dir.
func DBPath(dir string) string { return filepath.Join(dir, "state", "delta.db") }

// Env is the environment of a daemon whose files live in dir (HOME, the
// database at DBPath, the workspace dir/ws that Init creates), listening on
// port, answering to the control token and calling the scripted model
// served at modelURL. Nothing else of the test's environment reaches it.
func Env(dir string, port int, modelURL, token string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		fmt.Sprintf("PORT=%d", port),
		"DELTA_DB=" + DBPath(dir),
		"DELTA_WORKSPACE=" + filepath.Join(dir, "ws"),
		"MODEL_BASE_URL=" + modelURL,
		"MODEL_API_KEY=fake-key",
		"DELTA_MODEL_PRIMARY=scripted/demo",
		"DELTA_CONTROL_TOKEN=" + token,
	}
}

// HostEnv is the test process's environment without what would change
// what delta does: every DELTA_ and MODEL_ variable, the OpenRouter key
// and the variables named in drop.
func HostEnv(drop ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "DELTA_") || strings.HasPrefix(k, "MODEL_") || k == "OPENROUTER_API_KEY" || slices.Contains(drop, k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// OpenLog opens the log file at path for a Process: appended to, or
// truncated first when truncate is set.
func OpenLog(t testing.TB, path string, truncate bool) *os.File {
	t.Helper()
	flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if truncate {
		flag = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Process is one delta child process.
type Process struct {
	Cmd  *exec.Cmd
	name string        // "delta serve", for messages
	done chan struct{} // closed once Cmd.Wait has returned
	err  error         // Cmd.Wait's result, set before done is closed
}

// Start starts bin with args and env, its output going to log (a file
// from OpenLog, or an Output), which is closed, when it is an io.Closer,
// once the process has ended.
func Start(t testing.TB, log io.Writer, env []string, bin string, args ...string) *Process {
	t.Helper()
	closeLog := func() {
		if c, ok := log.(io.Closer); ok {
			c.Close()
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		closeLog()
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, name: strings.Join(append([]string{"delta"}, args...), " "), done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); closeLog(); close(p.done) }()
	return p
}

// Done is closed once the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitHealthy polls url/healthz until it answers 200. It fails the test
// when the process exits first or no answer comes within, with what
// logText returns (the process's log).
func (p *Process) WaitHealthy(t testing.TB, url string, within time.Duration, logText func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("%s exited during start: %v\nlog:\n%s", p.name, p.err, logText())
		default:
		}
		if Healthy(url) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never became healthy; log:\n%s", p.name, logText())
}

// healthClient bounds one /healthz probe, so a daemon that accepts and
// never answers cannot hang the wait.
var healthClient = &http.Client{Timeout: 5 * time.Second}

// Healthy reports whether url/healthz answers 200.
func Healthy(url string) bool {
	resp, err := healthClient.Get(url + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitExit waits up to within for the process to end by itself and
// returns its exit code; it fails the test when the process is still
// running then, with what logText returns.
func (p *Process) WaitExit(t testing.TB, within time.Duration, logText func() string) int {
	t.Helper()
	select {
	case <-p.done:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			return ee.ExitCode()
		}
		if p.err != nil {
			t.Fatalf("wait for %s: %v", p.name, p.err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("%s did not exit within %s; log:\n%s", p.name, within, logText())
		return -1
	}
}

// Kill9 kills the process with SIGKILL, as kill -9 does, and waits for it.
func (p *Process) Kill9() {
	if !p.Exited() {
		_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// Stop ends the process with SIGTERM and waits for it, killing it when it
// is still running after within.
func (p *Process) Stop(within time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(within):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// Output is a bytes.Buffer that a child process's output goroutines write
// while the test reads it.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Output) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what has been written so far.
func (b *Output) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
