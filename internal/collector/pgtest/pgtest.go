// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb in
// a temporary directory, a postmaster on a free loopback port, torn down by
// Stop. initdb refuses to run as root, so as root the cluster runs as the
// postgres user (runuser).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres means the PostgreSQL server binaries are not installed; a
// test skips on it (scripts/test installs Debian's postgresql package).
var ErrNoPostgres = errors.New("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)")

// Cluster is a running throwaway cluster.
type Cluster struct {
	dir, bin string
	asUser   string // "" = the current user
	Port     int
}

// Start creates and starts a cluster that skips fsync, synchronous commit
// and full-page writes: a test's cluster loses nothing it needs to keep
// when the machine crashes, and it runs faster.
func Start() (*Cluster, error) { return start(false) }

// StartDurable creates and starts a cluster that commits as a production
// server does: every commit waits for its WAL to reach the disk. A
// benchmark on it shows what a lock held across commits (an ordering
// lock, NOTIFY's) costs where a fast cluster hides it.
func StartDurable() (*Cluster, error) { return start(true) }

// StartDurableWith is StartDurable with server settings of the test's own,
// each "name=value" (wal_writer_delay=10s).
func StartDurableWith(settings ...string) (*Cluster, error) { return start(true, settings...) }

func start(durable bool, settings ...string) (*Cluster, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return nil, ErrNoPostgres
	}
	sort.Strings(bins)
	c := &Cluster{bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "delta-pg-")
	if err != nil {
		return nil, err
	}
	c.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs a postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		c.asUser = "postgres"
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.Port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	data := filepath.Join(dir, "data")
	if out, err := c.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		c.Stop()
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", c.Port, dir)
	if !durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	for _, kv := range settings {
		opts += " -c " + kv
	}
	// pg_stat_statements, where the server ships it, lets a benchmark
	// report where the server's time goes (CREATE EXTENSION in its
	// database); loaded, it costs a few hash updates per statement.
	if _, err := os.Stat(filepath.Join(filepath.Dir(c.bin), "lib", "pg_stat_statements.so")); err == nil {
		opts += " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
	}
	if out, err := c.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		c.Stop()
		return nil, fmt.Errorf("pg_ctl start: %w: %s %s", err, out, log)
	}
	return c, nil
}

// toolTimeout bounds one initdb or pg_ctl call.
const toolTimeout = 2 * time.Minute

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.asUser != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// URL is the connection URL of database name.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, name)
}

// NewDatabase creates an empty database and returns its URL.
func (c *Cluster) NewDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return c.URL(name), nil
}

// Stop stops the postmaster at once and removes the cluster's files.
func (c *Cluster) Stop() {
	if _, err := os.Stat(filepath.Join(c.dir, "data", "postmaster.pid")); err == nil {
		_, _ = c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	}
	_ = os.RemoveAll(c.dir)
}
