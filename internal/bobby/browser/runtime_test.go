package browser

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// profileDirs lists the per-launch profile directories under dataDir.
func profileDirs(t *testing.T, dataDir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dataDir, "chromium-profile-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRuntimeLaunchAndCloseLeaveNothing(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	rt := New(Options{DataDir: dataDir, Logger: testLogger()})
	if rt.Healthy() {
		t.Error("Healthy before Open")
	}
	if _, err := rt.NewSession(ctx, "x", ExecutionPolicy{}); !errors.Is(err, ErrNotOpen) {
		t.Errorf("NewSession before Open = %v, want ErrNotOpen", err)
	}
	if err := rt.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Open(ctx); err == nil {
		t.Error("second Open succeeded")
	}
	if !rt.Healthy() || rt.PID() == 0 {
		t.Fatalf("after Open: healthy %v pid %d", rt.Healthy(), rt.PID())
	}
	v, err := rt.Version(ctx)
	if err != nil || !strings.Contains(v, "/") {
		t.Errorf("Version = %q, %v", v, err)
	}
	dirs := profileDirs(t, dataDir)
	if len(dirs) != 1 {
		t.Fatalf("profile dirs = %v, want one fresh dir", dirs)
	}
	_, p := sessionPage(t, rt, "x")
	if out := p.Navigate(ctx, srv.URL+"/home.html"); !out.OK() {
		t.Fatalf("Navigate: %+v", out)
	}
	// Chromium runs as several processes (browser, zygote, renderer…).
	if n := processesUsing(dirs[0]); n < 2 {
		t.Errorf("%d processes use the profile, want the browser and its helpers", n)
	}
	pid := rt.PID()

	if err := rt.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := processesUsing(dirs[0]); n != 0 {
		t.Errorf("%d Chromium processes left after Close", n)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("browser pid %d still exists after Close (kill 0: %v)", pid, err)
	}
	if _, err := os.Stat(dirs[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("profile dir left after Close: %v", err)
	}
	if z := zombieChildren(t); len(z) != 0 {
		t.Errorf("zombie child processes after Close: %v", z)
	}
	if rt.Healthy() {
		t.Error("Healthy after Close")
	}
	if _, err := rt.NewSession(ctx, "x", ExecutionPolicy{}); !errors.Is(err, ErrNotOpen) {
		t.Errorf("NewSession after Close = %v, want ErrNotOpen", err)
	}
	if _, err := p.Evaluate(ctx, "1"); err == nil {
		t.Error("Evaluate on a page of a closed runtime succeeded")
	}
	if err := rt.Close(ctx); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestRuntimeOpenFailsClearly(t *testing.T) {
	rt := New(Options{ExecPath: "/nonexistent/chromium", DataDir: t.TempDir(), Logger: testLogger()})
	err := rt.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "chromium") {
		t.Fatalf("Open with a missing binary = %v, want a clear error", err)
	}
	rt = New(Options{ExtraFlags: []string{"no-dashes"}, DataDir: t.TempDir(), Logger: testLogger()})
	if err := rt.Open(context.Background()); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Open with a malformed flag = %v, want ErrInvalidArgument", err)
	}
	if m, _ := filepath.Glob(filepath.Join(rt.opts.DataDir, "*")); len(m) != 0 {
		t.Errorf("failed Open left %v", m)
	}
}

func TestCrashIsDetectedAndNextSessionRelaunches(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	rt := openRuntime(t, Options{DataDir: dataDir, Logger: testLogger(), NavigateTimeout: time.Second})

	s, p := sessionPage(t, rt, "x")
	// The runtime's own NavigateTimeout turns a hanging server into a
	// failed outcome.
	if out := p.Navigate(ctx, srv.URL+"/hang"); out.OK() || out.Error.Code != NavCodeTimeout {
		t.Errorf("Navigate(/hang) = %+v, want a timeout outcome", out)
	}
	oldPID := rt.PID()
	oldDir := profileDirs(t, dataDir)[0]

	if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the runtime notices the dead browser", func() bool { return !rt.Healthy() })

	if _, err := p.Evaluate(ctx, "1"); !errors.Is(err, ErrBrowserCrashed) {
		t.Errorf("Evaluate on a dead browser = %v, want ErrBrowserCrashed", err)
	}
	if out := p.Navigate(ctx, srv.URL+"/home.html"); out.OK() || out.Error.Code != NavCodeBrowserCrashed {
		t.Errorf("Navigate on a dead browser = %+v, want browserCrashed", out.Error)
	}
	if _, err := s.NewPage(ctx); !errors.Is(err, ErrBrowserCrashed) {
		t.Errorf("NewPage in a dead session = %v, want ErrBrowserCrashed", err)
	}
	if !errors.Is(s.Err(), ErrBrowserCrashed) || s.Alive() {
		t.Errorf("session Err = %v, Alive %v", s.Err(), s.Alive())
	}
	// State still answers, and the dead session is still listed until closed.
	if st := s.State(); st.ID != s.ID {
		t.Errorf("State of dead session = %+v", st)
	}
	if got, err := rt.Session(s.ID); err != nil || got != s {
		t.Errorf("dead session not listed: %v", err)
	}

	// The next session relaunches Chromium.
	s2, err := rt.NewSession(ctx, "x", ExecutionPolicy{})
	if err != nil {
		t.Fatalf("NewSession after crash: %v", err)
	}
	if !rt.Healthy() || rt.PID() == 0 || rt.PID() == oldPID {
		t.Errorf("after relaunch: healthy %v pid %d (old %d)", rt.Healthy(), rt.PID(), oldPID)
	}
	p2, err := s2.NewPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out := p2.Navigate(ctx, srv.URL+"/home.html"); !out.OK() {
		t.Errorf("Navigate after relaunch = %+v", out)
	}
	// The crashed browser's helpers and profile are gone.
	if n := processesUsing(oldDir); n != 0 {
		t.Errorf("%d processes of the crashed browser left", n)
	}
	if _, err := os.Stat(oldDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("crashed browser's profile dir left: %v", err)
	}
	if z := zombieChildren(t); len(z) != 0 {
		t.Errorf("the crashed browser was not reaped: zombies %v", z)
	}
	if err := rt.CloseSession(ctx, s.ID); err != nil {
		t.Errorf("CloseSession of the dead session = %v", err)
	}
}

// zombieChildren lists the PIDs of this process's children that exited but
// were not reaped.
func zombieChildren(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		_, rest, ok := strings.Cut(string(stat), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(os.Getpid()) {
			out = append(out, pid)
		}
	}
	return out
}
