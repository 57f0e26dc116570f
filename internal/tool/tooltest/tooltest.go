// Package tooltest is what the tool packages' tests share: running a tool
// with the test failing on a Go error, checking a result's text, and
// telling whether a child process a tool started still lives, or outlives
// a killed daemon.
//
// It is imported by tests only.
package tooltest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/tool"
)

// Run runs tl on c and returns its result; a Go error (a tool reports bad
// input as an error result, never as one) fails the test.
func Run(t testing.TB, tl tool.Tool, c tool.Call) tool.Result {
	t.Helper()
	res, err := tl.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("%s(%s) returned a Go error: %v", tl.Spec().Name, c.Args, err)
	}
	return res
}

// CheckText fails t for each of want that text lacks and each of notWant
// that it holds.
func CheckText(t testing.TB, text string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("result lacks %q:\n%s", w, text)
		}
	}
	for _, nw := range notWant {
		if strings.Contains(text, nw) {
			t.Errorf("result holds %q:\n%s", nw, text)
		}
	}
}

// Alive reports whether pid is a live process, not a zombie (read from
// Linux's /proc; the state follows the last ")", since the command name
// in parentheses may hold one itself).
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// EnvDaemonDir is set, to the test's folder, in the test binary that
// DiesWithDaemon starts as the daemon.
const EnvDaemonDir = "TOOLTEST_DAEMON_DIR"

// DiesWithDaemon checks that a program a tool starts dies when the daemon
// that started it is killed with SIGKILL, which runs no cleanup. It writes
// the program, at dir/name, as a script that records its pid and sleeps,
// then runs the test binary again as the daemon: test (the calling test's
// name) must, when EnvDaemonDir is set, run the tool so that it starts
// that program, and block. Once the program runs, the daemon is killed and
// the program must be gone within 5 s.
func DiesWithDaemon(t *testing.T, test, name string) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho $$ > "+pidFile+".tmp; mv "+pidFile+".tmp "+pidFile+"; exec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	daemon := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+test+"$")
	daemon.Env = append(os.Environ(), EnvDaemonDir+"="+dir)
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if pid == 0 {
		_ = daemon.Process.Kill()
		_ = daemon.Wait()
		t.Fatalf("%s never started", name)
	}
	_ = daemon.Process.Kill() // SIGKILL: no deferred cleanup runs
	_ = daemon.Wait()
	for deadline := time.Now().Add(5 * time.Second); Alive(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if Alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("%s (pid %d) outlived the daemon that started it", name, pid)
	}
}
