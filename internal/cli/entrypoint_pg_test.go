package cli

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

	"github.com/deltaharness/delta/internal/collector/pgtest"
)

// TestEntrypointOnPostgres: the container's entrypoint with a postgres://
// DELTA_DB seeds the bundle and becomes a worker on that database, as
// `delta serve` does, and keeps the URL's password out of its log; a
// Litestream setting beside it, which could back nothing up, refuses to
// start naming the variable.
func TestEntrypointOnPostgres(t *testing.T) {
	requireDaemon(t)
	dbURL := postgresDatabase(t, "entry")
	dbURL = strings.Replace(dbURL, "postgres@", "postgres:hunter2secret@", 1) // trust auth ignores it
	ws := filepath.Join(t.TempDir(), "workspace")
	port := testPort(t)
	env := cleanEnv("PORT="+strconv.Itoa(port), "DELTA_DB="+dbURL, "DELTA_WORKSPACE="+ws,
		"LITESTREAM_CONFIG=", "DELTA_SELF_MD_B64="+b64("# seeded self\n"))

	p := startProc(t, env, "entrypoint")
	poll(t, "entrypoint's daemon up", time.Minute, func() bool {
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("entrypoint exited: %v\n%s", err, p.stderr.String())
		default:
		}
		return up(port)
	})
	if b, err := os.ReadFile(filepath.Join(ws, "DELTA.md")); err != nil || string(b) != "# seeded self\n" {
		t.Errorf("DELTA.md = %q, %v; want the seeded content", b, err)
	}
	p.stop(t, syscall.SIGTERM)
	if log := p.stderr.String(); !strings.Contains(log, "worker joined the shared database") || strings.Contains(log, "hunter2secret") {
		t.Errorf("want a worker on the shared database and no password in the log:\n%s", log)
	}

	r := runBin(t, append(env, "LITESTREAM_REPLICA_URL=file://"+t.TempDir()), "entrypoint")
	if r.code != 1 || !strings.Contains(r.stderr, "LITESTREAM_REPLICA_URL") || !strings.Contains(r.stderr, "PostgreSQL") {
		t.Fatalf("with LITESTREAM_REPLICA_URL: exit %d, stderr %q; want exit 1 naming LITESTREAM_REPLICA_URL", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "hunter2secret") {
		t.Errorf("the refusal shows the password: %s", r.stderr)
	}
}

// postgresDatabase starts a throwaway PostgreSQL cluster, stopped when the
// test ends, and returns the URL of a new empty database name on it; the
// test skips where the server binaries are not installed.
func postgresDatabase(t *testing.T, name string) string {
	t.Helper()
	cluster, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoPostgres) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	dbURL, err := cluster.NewDatabase(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return dbURL
}
