// Package store keeps Delta's durable state in one SQLite file: sessions,
// runs with their usage, conversation messages, the tool journal and events, and the
// tables of the packages that keep state beside a run: the todo tool's
// plans, search_tools' activations and the vault's sealed secrets. Every
// SQL statement lives in this package, so the schema has one owner; other
// packages declare the few methods they need as an interface.
//
// The database runs in WAL mode with foreign keys, a 5 s busy timeout and
// immediate transactions (no read→write upgrade deadlocks). Writes go through
// a single connection, one per file in the process however many handles are
// open on it, so SQLite's one writer never waits on itself; reads use a pool. Schema changes are numbered, embedded migrations applied in one
// transaction each and tracked in PRAGMA user_version; a database written by a
// newer binary is refused rather than guessed at.
//
// Every state transition that has an event writes that event in the same
// transaction, so the event log never disagrees with the run table.
//
// The same Store also runs on PostgreSQL (Open with a postgres:// URL): the
// statements are the SQLite ones rewritten by a small dialect (dialect.go),
// the schema is pgmigrations/ under the same numbers, and an advisory lock
// per write transaction stands in for SQLite's single writer (postgres.go).
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Sentinel errors callers branch on.
var (
	ErrNotFound     = errors.New("not found")
	ErrSchemaNewer  = errors.New("database schema is newer than this binary")
	ErrNotTerminal  = errors.New("run is not terminal")
	ErrAlreadyFinal = errors.New("run already finished")
)

// Store is an open Delta database.
type Store struct {
	w *sql.DB // the single writer
	r *sql.DB // readers (== w for in-memory databases and PostgreSQL)
	// closeW gives up the writer: it is shared by the handles of one
	// SQLite file in this process (openFile); nil closes w itself.
	closeW func() error
	path   string
	pg     bool // PostgreSQL (postgres.go), not SQLite

	wstmts, rstmts stmtCache     // prepared statements (stmts.go)
	group          writeGroup    // callers sharing write transactions (group.go)
	ckpt           *checkpointer // WAL checkpoints off the writer (walcheckpoint.go); nil but for SQLite files
	charges        atomic.Uint64 // AddUsage calls committed (Charges)
	recallPending  atomic.Int64  // messages stored since recall's index last caught up (recall_index.go)

	// pgEvents holds the PostgreSQL groupTx transactions in progress,
	// each with the events it has held back (postgres.go).
	pgEvents sync.Map // *sql.Tx → *pgPending
	// relay is this worker's event tail while it is open: a commit of
	// events sends the deltas queued before it ahead of them.
	relay atomic.Pointer[EventTail]

	// resumes holds the runs ResumeRuns marked in this process whose Start
	// has not yet been called: Start hands out that resume instead of
	// writing a second one.
	resumeMu sync.Mutex
	resumes  map[string]resumeMark
}

// Open opens (creating if needed) the database at path and migrates it.
// path ":memory:" opens a private in-memory database (used by `delta run`);
// a postgres:// or postgresql:// URL opens that PostgreSQL database
// (postgres.go) instead of a SQLite file.
func Open(ctx context.Context, path string) (*Store, error) {
	if IsPostgresURL(path) {
		return openPostgres(ctx, path)
	}
	if path == ":memory:" {
		// One connection: every connection to :memory: is a different database.
		db, err := sql.Open("sqlite", "file::memory:?_pragma=foreign_keys(1)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		db.SetMaxOpenConns(1)
		s := &Store{w: db, r: db, path: path}
		if err := s.migrate(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return s, nil
	}
	w, r, closeW, err := openFile(path)
	if err != nil {
		return nil, err
	}
	s := &Store{w: w, r: r, closeW: closeW, path: path}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.startCheckpointer()
	return s, nil
}

// openFile opens the writer and the reader pool of the database file at
// path, creating its directory. The writer is the process's one writer
// connection to that file, shared by every handle open on it; closeW
// gives this handle's share up. SQLite admits one writer at a time anyway,
// and two writer connections would meet in its busy handler, which polls:
// under load one can be passed over until its busy timeout and fail with
// SQLITE_BUSY. Sharing the connection queues them in database/sql instead.
func openFile(path string) (w, r *sql.DB, closeW func() error, err error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + strings.Join([]string{
		"_pragma=busy_timeout(5000)",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(NORMAL)",
		"_pragma=foreign_keys(1)",
		// Statement and savepoint journals in memory: every member of a
		// shared write transaction runs in a savepoint (group.go), and a
		// journal spilled to a temporary file costs a write call per page.
		"_pragma=temp_store(MEMORY)",
		fmt.Sprintf("_pragma=wal_autocheckpoint(%d)", writerCheckpointPages), // the checkpointer copies first (walcheckpoint.go)
		"_txlock=immediate",
	}, "&")
	w, closeW, err = openWriter(path, dsn)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r, err = sql.Open("sqlite", dsn)
	if err != nil {
		_ = closeW() // the open error is the one to report
		return nil, nil, nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4) // keep them: reopening runs the pragmas again
	return w, r, closeW, nil
}

// writers holds the writer connection of each SQLite file open in this
// process, by absolute path, with the number of handles sharing it.
var writers = struct {
	mu sync.Mutex
	m  map[string]*sharedWriter
}{m: map[string]*sharedWriter{}}

type sharedWriter struct {
	db   *sql.DB
	refs int
}

// openWriter returns the writer of the file at path, opening it with dsn
// when no handle in this process has it open, and the function that gives
// this share up (the last one closes it).
func openWriter(path, dsn string) (*sql.DB, func() error, error) {
	key, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	writers.mu.Lock()
	defer writers.mu.Unlock()
	sw := writers.m[key]
	if sw == nil {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, nil, err
		}
		db.SetMaxOpenConns(1)
		sw = &sharedWriter{db: db}
		writers.m[key] = sw
	}
	sw.refs++
	var once sync.Once
	return sw.db, func() error {
		var err error
		once.Do(func() {
			writers.mu.Lock()
			defer writers.mu.Unlock()
			if sw.refs--; sw.refs == 0 {
				delete(writers.m, key)
				err = sw.db.Close()
			}
		})
		return err
	}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.stopCheckpointer()
	s.wstmts.close()
	s.rstmts.close()
	var err error
	if s.closeW != nil {
		err = s.closeW()
	} else {
		err = s.w.Close()
	}
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// SchemaVersion is the newest migration this binary knows.
func SchemaVersion() int {
	ms, _ := migrations()
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) { return migrationsIn(migrationFS, "migrations") }

// migrationsIn reads the numbered migrations in dir of fsys, in order.
func migrationsIn(fsys embed.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		b, err := fsys.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	return migrateDB(ctx, s.w, s.path, ms)
}

// migrateDB applies the migrations of ms newer than the database's
// PRAGMA user_version, each in its own transaction, and refuses a database
// that a newer binary has migrated further than ms goes.
func migrateDB(ctx context.Context, w *sql.DB, path string, ms []migration) error {
	var current int
	if err := w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("open store %s: read schema version: %w", path, err)
	}
	pending, err := migrationsAfter(path, current, ms)
	if err != nil {
		return err
	}
	for _, m := range pending {
		err := txOn(ctx, w, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version))
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s to %s: %w", path, m.name, err)
		}
	}
	return nil
}

// migrationsAfter returns the migrations of ms (in version order) newer
// than a database's schema version current, the ones to apply; it refuses
// with ErrSchemaNewer a database that a newer binary has migrated further
// than ms goes. Both backends' migrations ask it.
func migrationsAfter(name string, current int, ms []migration) ([]migration, error) {
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].version
	}
	if current > latest {
		return nil, fmt.Errorf("open store %s: schema version %d, this binary knows %d: %w", name, current, latest, ErrSchemaNewer)
	}
	var pending []migration
	for _, m := range ms {
		if m.version > current {
			pending = append(pending, m)
		}
	}
	return pending, nil
}

// tx runs fn in one immediate write transaction.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	if s.pg {
		return s.pgTx(ctx, pgExclusive, fn)
	}
	if err := txOn(ctx, s.w, s.guarded(ctx, fn)); err != nil {
		return err
	}
	// The writer connection is free again: prepare what fn ran unprepared.
	s.wstmts.prepareWanted(ctx, s.w)
	return nil
}

// txOn runs fn in one immediate write transaction on w.
func txOn(ctx context.Context, w *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // fn's error is the one to report; a failed rollback leaves nothing committed
		return err
	}
	return tx.Commit()
}
