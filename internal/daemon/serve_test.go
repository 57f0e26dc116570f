package daemon

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/store"
)

// listening is a log handler that closes up when Serve reports it listens.
type listening struct {
	up   chan struct{}
	once sync.Once
	addr string // the bound address, set before up closes
}

func (l *listening) Enabled(context.Context, slog.Level) bool { return true }
func (l *listening) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "delta listening" {
		l.once.Do(func() {
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "addr" {
					l.addr = a.Value.String()
				}
				return true
			})
			close(l.up)
		})
	}
	return nil
}
func (l *listening) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *listening) WithGroup(string) slog.Handler      { return l }

// serve starts Serve on a free loopback port and returns once it listens
// (cfg.Port is the bound port);
// stop cancels it and returns Serve's error.
func serve(t *testing.T) (cfg config.Config, stop func() error) {
	t.Helper()
	return serveWith(t, nil)
}

// serveWith is serve with more variables (extra wins).
func serveWith(t *testing.T, extra map[string]string) (cfg config.Config, stop func() error) {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{"DELTA_DB": filepath.Join(dir, "d.db"), "DELTA_WORKSPACE": dir, "DELTA_CODE_CLI": "/bin/true", "DELTA_BUILD": "test-build"}
	maps.Copy(env, extra)
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Port, cfg.Bind = 0, "127.0.0.1"
	ctx, cancel := context.WithCancel(context.Background())
	l := &listening{up: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, cfg, slog.New(l)) }()
	select {
	case <-l.up:
	case err := <-errc:
		cancel()
		t.Fatalf("Serve ended before listening: %v", err)
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("Serve never listened")
	}
	cfg.Port, _ = strconv.Atoi(l.addr[strings.LastIndexByte(l.addr, ':')+1:])
	return cfg, func() error { cancel(); return <-errc }
}

// A clean shutdown returns nil and releases the database lock and the
// writer lease, so the next start needs no wait.
func TestServeShutsDownCleanly(t *testing.T) {
	cfg, stop := serve(t)
	if err := stop(); err != nil {
		t.Fatalf("Serve = %v, want nil after a clean shutdown", err)
	}
	release, err := lockDB(cfg.DB)
	if err != nil {
		t.Fatalf("database lock still held: %v", err)
	}
	_ = release()
	st, err := store.Open(context.Background(), cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CurrentLease(context.Background()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("writer lease after shutdown: %v, want released", err)
	}
}

// A step of shutdown that fails is reported in Serve's error, naming the
// step, instead of being dropped; the steps after it still run.
func TestServeReturnsCloseErrors(t *testing.T) {
	cfg, stop := serve(t)
	// Another connection removes the lease table: releasing the lease fails.
	db, err := sql.Open("sqlite", "file:"+cfg.DB+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP TABLE writer_lease"); err != nil {
		t.Fatal(err)
	}
	err = stop()
	if err == nil || !strings.Contains(err.Error(), "close writer lease") || !strings.Contains(err.Error(), "writer_lease") {
		t.Fatalf("Serve = %v, want the failed lease release", err)
	}
	// Later steps ran: the database lock is free.
	release, lerr := lockDB(cfg.DB)
	if lerr != nil {
		t.Fatalf("database lock still held after a failed step: %v", lerr)
	}
	_ = release()
}
