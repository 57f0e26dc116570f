package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/test/daemontest"
)

// litestreamBin finds the Litestream binary scripts/test installs: on PATH,
// else in $(go env GOPATH)/bin. The backup test skips without it.
func litestreamBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("litestream"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "litestream")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("litestream is not installed (scripts/test installs it: go install github.com/benbjohnson/litestream/cmd/litestream@v0.5.18)")
	return ""
}

// TestEntrypointBackupRestore drives `delta entrypoint` with a real
// Litestream replicating to a file replica: an empty replica refuses to
// boot without DELTA_BOOTSTRAP=1 and boots empty with it; runs are written
// through the daemon, the daemon is killed with SIGKILL, the whole volume
// is deleted, and the next boot restores every acknowledged run and seeds
// the bundle again.
func TestEntrypointBackupRestore(t *testing.T) {
	ls := litestreamBin(t)
	fake := startFake(t)
	dir := t.TempDir()
	vol := filepath.Join(dir, "data")
	replica := filepath.Join(dir, "replica")
	port := daemontest.FreePort(t)
	self := "# Backup agent\n\nI keep notes.\n"
	d := &daemon{t: t, dir: dir, url: fmt.Sprintf("http://127.0.0.1:%d", port), token: "test-control-token"}
	d.env = []string{
		"PATH=" + filepath.Dir(ls) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir,
		fmt.Sprintf("PORT=%d", port),
		"DELTA_DB=" + filepath.Join(vol, "delta.db"),
		"DELTA_WORKSPACE=" + filepath.Join(vol, "workspace"),
		"MODEL_BASE_URL=" + fake.URL(), "MODEL_API_KEY=fake-key", "DELTA_MODEL_PRIMARY=scripted/demo",
		"DELTA_CONTROL_TOKEN=" + d.token,
		"LITESTREAM_CONFIG=", // blank: the default path, absent here
		"LITESTREAM_REPLICA_URL=file://" + replica,
		"DELTA_SELF_MD_B64=" + base64.StdEncoding.EncodeToString([]byte(self)),
		"DELTA_VOCAB_JSON_B64=%%% not base64",
	}

	// An empty replica and no local database: refused, with the remedy named.
	out, err := runEntrypoint(t, d.env)
	if err == nil || !strings.Contains(out, "the replica holds no backup") || !strings.Contains(out, "DELTA_BOOTSTRAP=1") {
		t.Fatalf("first boot without DELTA_BOOTSTRAP: err = %v, want a refusal naming DELTA_BOOTSTRAP=1; output:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(vol, "delta.db")); err == nil {
		t.Fatal("the refused boot created a database")
	}

	// The genuine first boot.
	boot := *d
	boot.env = append(append([]string(nil), d.env...), "DELTA_BOOTSTRAP=1")
	first := startEntrypoint(t, boot)
	if b, err := os.ReadFile(filepath.Join(vol, "workspace", "DELTA.md")); err != nil || string(b) != self {
		t.Fatalf("DELTA.md after the first boot = %q, %v; want the seeded content", b, err)
	}
	if _, err := os.Stat(filepath.Join(vol, "workspace", "vocab.json")); err == nil {
		t.Fatal("malformed DELTA_VOCAB_JSON_B64 was written")
	}
	if !strings.Contains(first.logText(), "DELTA_VOCAB_JSON_B64") {
		t.Fatalf("no warning about the malformed vocab seed; log:\n%s", first.logText())
	}
	var acked []string
	write := func(n int) {
		for range n {
			s, v := first.call("POST", "/v1/responses", fmt.Sprintf(`{"input":"Write brief number %d about backups."}`, len(acked)))
			if s != 200 || v["status"] != "completed" {
				t.Fatalf("run %d: %d %v", len(acked), s, v)
			}
			acked = append(acked, v["id"].(string))
		}
	}
	write(3)
	// Litestream picks a database up on its first monitor tick after the
	// file appears; from then on it syncs everything on exit. Wait for that
	// (the replica's first files), then acknowledge more runs and kill the
	// daemon right after: those reach the replica only through the final
	// sync Litestream makes when its child exits.
	deadline := time.Now().Add(30 * time.Second)
	for !hasFiles(replica) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica %s stayed empty; log:\n%s", replica, first.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	write(3)

	// The daemon dies without a chance to clean up; Litestream, its parent,
	// sees it exit and stops.
	serve := childOf(t, first.proc.Cmd.Process.Pid)
	if err := syscall.Kill(serve, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.waitExit(30 * time.Second)

	// The volume is lost: database, WAL, Litestream's local state and the workspace.
	if err := os.RemoveAll(vol); err != nil {
		t.Fatal(err)
	}

	// Without DELTA_BOOTSTRAP the next boot restores before serving.
	second := startEntrypoint(t, *d)
	if !strings.Contains(second.logText(), "restored the database from the replica") {
		t.Fatalf("no restore in the log:\n%s", second.logText())
	}
	for _, id := range acked {
		s, v := second.call("GET", "/v1/tasks/"+id, "")
		if s != 200 || v["status"] != "done" {
			t.Fatalf("acknowledged run %s after the restore: %d %v\nlog:\n%s", id, s, v, second.logText())
		}
	}
	if b, err := os.ReadFile(filepath.Join(vol, "workspace", "DELTA.md")); err != nil || string(b) != self {
		t.Fatalf("DELTA.md after the restore = %q, %v; want it seeded again", b, err)
	}
	// And the restored daemon keeps working (and replicating).
	if s, v := second.call("POST", "/v1/responses", `{"input":"Write a brief after the restore."}`); s != 200 || v["status"] != "completed" {
		t.Fatalf("run after the restore: %d %v", s, v)
	}
}

// runEntrypoint runs `delta entrypoint` expecting it to exit by itself.
func runEntrypoint(t *testing.T, env []string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, deltaBin, "entrypoint")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// entrypoint is one running `delta entrypoint` (after its exec, the
// litestream process supervising the daemon), reusing daemon's helpers.
type entrypoint struct {
	*daemon
	logPath string // this process's output
}

func (e *entrypoint) logText() string {
	b, _ := os.ReadFile(e.logPath)
	return string(b)
}

// startEntrypoint starts `delta entrypoint` with d's environment and waits
// for /healthz, failing early if the process exits first.
func startEntrypoint(t *testing.T, d daemon) *entrypoint {
	t.Helper()
	f, err := os.CreateTemp(d.dir, "entrypoint-*.log")
	if err != nil {
		t.Fatal(err)
	}
	d.t = t
	e := &entrypoint{daemon: &d, logPath: f.Name()}
	d.proc = daemontest.Start(t, f, d.env, deltaBin, "entrypoint")
	t.Cleanup(e.stop)
	d.proc.WaitHealthy(t, d.url, 60*time.Second, e.logText)
	return e
}

// waitExit waits for the process to end by itself.
func (e *entrypoint) waitExit(within time.Duration) {
	e.t.Helper()
	e.proc.WaitExit(e.t, within, e.logText)
}

// stop ends the process with SIGTERM (litestream passes it on to the
// daemon), then SIGKILL if it lingers.
func (e *entrypoint) stop() { e.proc.Stop(15 * time.Second) }

// hasFiles reports whether dir holds at least one regular file.
func hasFiles(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error { // a missing dir just has no files
		if err == nil && e.Type().IsRegular() {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// childOf returns the one child process of pid (Linux /proc).
func childOf(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to find the daemon process: %v", err)
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return n
		}
	}
	t.Fatalf("process %d has no child", pid)
	return 0
}
