package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/test/daemontest"
)

// deltaBin is the real delta binary, built once by TestMain.
var deltaBin string

func TestMain(m *testing.M) {
	os.Exit(daemontest.Main(m, "delta-cli-test-", daemontest.Binary{Path: &deltaBin, Name: "delta"}))
}

// cleanEnv is the test process environment without anything that would
// change what delta does: model credentials and every DELTA_/MODEL_ variable.
func cleanEnv(extra ...string) []string {
	return append(daemontest.HostEnv("PORT"), extra...)
}

type result struct {
	stdout, stderr string
	code           int
}

// runBin runs the binary to completion with a deadline.
func runBin(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, deltaBin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run delta %v: %v", args, err)
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

func TestBinaryExitCodes(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		wantStderr string
		wantStdout string
	}{
		{[]string{"bogus"}, 2, `delta: unknown command "bogus"`, ""},
		{[]string{"send", "--host", "example.com", "hi"}, 2, "not a loopback address", ""},
		{[]string{"dev"}, 2, "delta: dev: missing the bundle directory", ""},
		{[]string{"help"}, 0, "", "demo"},
		{[]string{"send", "-h"}, 0, "", "usage: delta send"},
		{[]string{"version"}, 0, "", "delta "},
		{[]string{"dev", filepath.Join(t.TempDir(), "nope"), "--no-open"}, 1, "does not exist (create one with `delta init", ""},
	}
	for _, tt := range tests {
		r := runBin(t, cleanEnv(), tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.wantStderr) || !strings.Contains(r.stdout, tt.wantStdout) {
			t.Errorf("delta %v: exit %d stdout %q stderr %q; want exit %d, stderr ⊇ %q, stdout ⊇ %q",
				tt.args, r.code, r.stdout, r.stderr, tt.code, tt.wantStderr, tt.wantStdout)
		}
	}
}

// A database URL in DELTA_DB never becomes a folder named after its
// scheme: a scheme delta does not speak stops `delta serve` at boot naming
// DELTA_DB, and a PostgreSQL URL (a worker on a shared database) whose
// server cannot be reached stops it naming the store. Neither echoes the
// password or leaves anything in the working directory.
func TestServeDatabaseURL(t *testing.T) {
	for _, tt := range []struct{ name, url, want string }{
		{"unknown scheme", "mysql://delta:pw@127.0.0.1:1/delta", "DELTA_DB"},
		{"unreachable postgres", "postgres://delta:pw@127.0.0.1:1/delta?connect_timeout=5", "open store"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(deltaBin, "serve")
			cmd.Dir = dir
			cmd.Env = cleanEnv("DELTA_DB="+tt.url, "PORT="+loopbackPort(t), "DELTA_WORKSPACE="+filepath.Join(t.TempDir(), "ws"))
			var errb bytes.Buffer
			cmd.Stderr = &errb
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("delta serve with a database URL did not exit")
			}
			if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q: want a non-zero exit naming %s", cmd.ProcessState.ExitCode(), errb.String(), tt.want)
			}
			if strings.Contains(errb.String(), "pw@") {
				t.Fatalf("stderr echoes the database password: %q", errb.String())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("delta serve left %v in its working directory", entries)
			}
		})
	}
}

func TestInitBinary(t *testing.T) {
	t.Run("fresh directory gets all five files", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "my-agent")
		r := runBin(t, cleanEnv(), "init", dir)
		if r.code != 0 {
			t.Fatalf("delta init: exit %d: %s", r.code, r.stderr)
		}
		for _, name := range bundleFiles {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s not created: %v", name, err)
			}
			if !strings.Contains(r.stdout, "created  "+filepath.Join(dir, name)) {
				t.Errorf("output does not report %s as created:\n%s", name, r.stdout)
			}
		}
	})

	t.Run("partial directory: never overwrites, fills the rest", func(t *testing.T) {
		dir := t.TempDir()
		mine := map[string]string{
			"DELTA.md":  "# Persona\n\nYou are Meridian.\n",
			"delta.env": "OPENROUTER_API_KEY=keep-me\n",
		}
		for name, content := range mine {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-time.Hour).Truncate(time.Second)
		if err := os.Chtimes(filepath.Join(dir, "DELTA.md"), old, old); err != nil {
			t.Fatal(err)
		}
		for run := 1; run <= 2; run++ { // a rerun changes nothing either
			r := runBin(t, cleanEnv(), "init", dir)
			if r.code != 0 {
				t.Fatalf("run %d: exit %d: %s", run, r.code, r.stderr)
			}
			for name, content := range mine {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || string(b) != content {
					t.Fatalf("run %d: %s = %q, %v; want it unchanged %q", run, name, b, err, content)
				}
				if !strings.Contains(r.stdout, "skipped  "+filepath.Join(dir, name)) {
					t.Errorf("run %d: output does not report %s as skipped:\n%s", run, name, r.stdout)
				}
			}
			if st, err := os.Stat(filepath.Join(dir, "DELTA.md")); err != nil || !st.ModTime().Equal(old) {
				t.Errorf("run %d: DELTA.md was touched (mtime %v, want %v)", run, st.ModTime(), old)
			}
			for _, name := range bundleFiles {
				if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
					t.Errorf("run %d: %s missing: %v", run, name, err)
				}
			}
		}
	})

	t.Run("unwritable location exits non-zero", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "a-file")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runBin(t, cleanEnv(), "init", filepath.Join(file, "agent")) // a file cannot hold a directory
		if r.code == 0 || !strings.Contains(r.stderr, "delta: init") {
			t.Fatalf("exit %d stderr %q; want non-zero with a 'delta: init' error", r.code, r.stderr)
		}
	})

	t.Run("read-only directory exits non-zero", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root ignores directory permissions; the not-a-directory case covers the error path")
		}
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) }) // best effort: TempDir's own cleanup reports what it cannot remove
		r := runBin(t, cleanEnv(), "init", dir)
		if r.code == 0 {
			t.Fatalf("exit 0 on a read-only directory; stdout %q", r.stdout)
		}
	})
}

// requireDaemon skips end-to-end tests until internal/daemon exists.
func requireDaemon(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("..", "daemon")); errors.Is(err, os.ErrNotExist) {
		t.Skip("internal/daemon does not exist yet")
	}
}

func TestDemoBinary(t *testing.T) {
	requireDaemon(t)
	dir := filepath.Join(t.TempDir(), "demo")
	r := runBin(t, cleanEnv(), "demo", "--dir", dir)
	if r.code != 0 {
		t.Fatalf("delta demo: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"model    scripted demo provider (no MODEL_API_KEY/OPENROUTER_API_KEY set)",
		"run.finished   done",
		"tool.call      write_file brief.md",
		"Artifact brief.md",
		"I have seen 2 user turns", // the follow-up saw the first turn
		"Daemon stopped cleanly.",
		"Demo passed",
	} {
		// Compare with spaces collapsed: the demo wraps long lines.
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	brief, err := os.ReadFile(filepath.Join(dir, "brief.md"))
	if err != nil {
		t.Fatalf("artifact: %v", err)
	}
	if !strings.HasPrefix(string(brief), "# Brief") || !strings.Contains(string(brief), "> "+demoTask) {
		t.Errorf("brief.md = %q, want a brief quoting the task", brief)
	}
	if !strings.Contains(r.stdout, "│ # Brief") {
		t.Errorf("the artifact's content is not shown:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "email.md")); err != nil {
		t.Errorf("the follow-up's artifact: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".delta", "demo.db")); err != nil {
		t.Errorf("the demo database is not in the bundle's .delta: %v", err)
	}
}

func TestDemoBinaryRemovesItsTempBundle(t *testing.T) {
	requireDaemon(t)
	tmp := t.TempDir()
	r := runBin(t, append(cleanEnv(), "TMPDIR="+tmp), "demo")
	if r.code != 0 {
		t.Fatalf("delta demo: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "delta-demo-*"))
	if len(left) != 0 {
		t.Fatalf("demo left %v behind without --keep", left)
	}
}

var runningLine = regexp.MustCompile(`^Delta is running at http://localhost:(\d+) \(cockpit: http://localhost:(\d+)/dev\)$`)

// devProc is a running `delta dev`.
type devProc struct {
	cmd    *exec.Cmd
	port   string
	stderr *daemontest.Output
	exited chan error // receives Wait's result
}

// startDev runs `delta dev bundle --no-open [extra…]` and waits for its URL line.
func startDev(t *testing.T, bundle string, env []string, extra ...string) *devProc {
	t.Helper()
	d := &devProc{stderr: &daemontest.Output{}, exited: make(chan error, 1)}
	d.cmd = exec.Command(deltaBin, append([]string{"dev", bundle, "--no-open"}, extra...)...)
	d.cmd.Env = env
	d.cmd.Stderr = d.stderr
	// A daemon that outlived its launcher would hold the launcher's output
	// open. Stdout is a plain pipe (Wait never waits on it) and WaitDelay
	// bounds the stderr copy, so Wait returns and the test can report it.
	d.cmd.WaitDelay = 5 * time.Second
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stdout = pw
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill() // the daemon gets SIGTERM when its launcher dies
		pr.Close()
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() { d.exited <- d.cmd.Wait() }()
	select {
	case l, ok := <-first:
		if !ok {
			t.Fatalf("delta dev exited before it was running: %v\nstderr:\n%s", <-d.exited, d.stderr.String())
		}
		m := runningLine.FindStringSubmatch(l)
		if m == nil || m[1] != m[2] {
			t.Fatalf("first line %q, want %q", l, runningLine)
		}
		d.port = m[1]
	case <-time.After(2 * time.Minute):
		t.Fatalf("delta dev printed nothing; stderr:\n%s", d.stderr.String())
	}
	return d
}

func healthz(port string) (int, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + port + "/healthz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestDevSendBinary(t *testing.T) {
	requireDaemon(t)
	fake := modeltest.Serve(t, modeltest.DemoScript())

	bundle := filepath.Join(t.TempDir(), "agent")
	if r := runBin(t, cleanEnv(), "init", bundle); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	envFile := fmt.Sprintf("# model for the test\nMODEL_BASE_URL=%s/\nMODEL_API_KEY='test-key'\nDELTA_MODEL_PRIMARY=\"scripted\"\n", fake.URL())
	if err := os.WriteFile(filepath.Join(bundle, "delta.env"), []byte(envFile), 0o600); err != nil {
		t.Fatal(err)
	}

	// An inherited DELTA_DB must not leak into a dev session.
	stray := filepath.Join(t.TempDir(), "stray.db")
	dev := startDev(t, bundle, cleanEnv("DELTA_DB="+stray))
	port := dev.port

	if code, err := healthz(port); err != nil || code != http.StatusOK {
		t.Fatalf("healthz: %d, %v", code, err)
	}
	if _, err := os.Stat(filepath.Join(bundle, ".delta", "delta.db")); err != nil {
		t.Errorf("dev database not at <bundle>/.delta/delta.db: %v", err)
	}
	if _, err := os.Stat(stray); err == nil {
		t.Errorf("the inherited DELTA_DB was used")
	}

	// Default send: a task, its events as JSON Lines, the artifact.
	r := runBin(t, cleanEnv(), "send", "--port", port, "Write notes.md about the plan.")
	if r.code != 0 {
		t.Fatalf("send: exit %d\nstdout %s\nstderr %s\ndaemon %s", r.code, r.stdout, r.stderr, dev.stderr.String())
	}
	out := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if !strings.Contains(out[len(out)-1], `"run.finished"`) {
		t.Errorf("last JSON line %q, want run.finished", out[len(out)-1])
	}
	for _, l := range out {
		if !json.Valid([]byte(l)) {
			t.Errorf("not a JSON line: %q", l)
		}
	}
	if b, err := os.ReadFile(filepath.Join(bundle, "notes.md")); err != nil || !strings.Contains(string(b), "Write notes.md about the plan.") {
		t.Errorf("notes.md = %q, %v", b, err)
	}

	// --json: only output_text.
	r = runBin(t, cleanEnv(), "send", "--json", "--port", port, "Write summary.md now.")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "I wrote summary.md.") {
		t.Fatalf("send --json: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	// SIGTERM to the launcher stops the daemon and exits 0.
	if err := dev.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-dev.exited:
		if err != nil {
			t.Fatalf("delta dev after SIGTERM: %v\nstderr:\n%s", err, dev.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("delta dev did not exit after SIGTERM")
	}
	if _, err := healthz(port); err == nil {
		t.Error("the daemon still answers after delta dev exited")
	}
}

func TestDevKilledLauncherTakesDaemonDown(t *testing.T) {
	requireDaemon(t)
	bundle := filepath.Join(t.TempDir(), "agent")
	if r := runBin(t, cleanEnv(), "init", bundle); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	dev := startDev(t, bundle, cleanEnv())
	if code, err := healthz(dev.port); err != nil || code != http.StatusOK {
		t.Fatalf("healthz: %d, %v", code, err)
	}
	if err := dev.cmd.Process.Kill(); err != nil { // kill -9: no chance to forward anything
		t.Fatal(err)
	}
	<-dev.exited
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := healthz(dev.port); err != nil {
			return // the orphaned daemon got its parent-death SIGTERM and stopped
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon kept running after its launcher was killed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loopbackPort returns a loopback port that was free a moment ago.
func loopbackPort(t *testing.T) string {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(p)
}

// TestDevRefusesATakenPort: `delta dev --port N` when something already
// answers on N (here a stand-in for another daemon, healthy) exits 1 with
// one line naming the port, and never claims that Delta is running there.
func TestDevRefusesATakenPort(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "agent")
	if r := runBin(t, cleanEnv(), "init", bundle); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	})}
	go func() { _ = other.Serve(ln) }()
	t.Cleanup(func() { _ = other.Close() })
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	r := runBin(t, cleanEnv(), "dev", bundle, "--no-open", "--scripted", "--port", port)
	if r.code != 1 || strings.Contains(r.stdout, "running at") {
		t.Fatalf("exit %d stdout %q stderr %q: want exit 1 and no running line", r.code, r.stdout, r.stderr)
	}
	if want := "delta: dev: port " + port + " is already in use"; !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "usage:") {
		t.Fatalf("stderr %q: want %q and no usage", r.stderr, want)
	}
}

// TestSchedulerLogHidesDaemonURLPassword: `delta scheduler` logs the daemon
// it fires into at start, without the password of a --daemon-url.
func TestSchedulerLogHidesDaemonURLPassword(t *testing.T) {
	cmd := exec.Command(deltaBin, "scheduler", "--db", filepath.Join(t.TempDir(), "s.db"), "--listen", "127.0.0.1:0",
		"--daemon-url", "http://ops:hunter2@127.0.0.1:1")
	cmd.Env = cleanEnv()
	errb := &daemontest.Output{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), "scheduler listening") {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line:\n%s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if log := errb.String(); strings.Contains(log, "hunter2") || !strings.Contains(log, "ops:xxxxx@127.0.0.1:1") {
		t.Fatalf("log %s: want the daemon URL with its password hidden", log)
	}
}
