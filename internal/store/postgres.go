package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The PostgreSQL backend: the same Store over a PostgreSQL database,
// selected by a postgres:// or postgresql:// URL. One pool serves reads and
// writes. The statements are the SQLite ones, rewritten by the dialect
// (dialect.go); the schema is pgmigrations/, numbered as migrations/.
//
// SQLite has one writer at a time, and the store relies on it: a write
// transaction reads, decides and writes with nothing in between, and event
// ids commit in increasing order, so a reader paging events by id never
// skips one that commits later with a smaller id. On PostgreSQL every write
// transaction takes one transaction-scoped advisory lock first (pgWriteLock),
// which gives both guarantees across every process sharing the database.

//go:embed pgmigrations/*.sql
var pgMigrationFS embed.FS

func pgMigrations() ([]migration, error) { return migrationsIn(pgMigrationFS, "pgmigrations") }

// Advisory lock keys (an arbitrary constant namespace, "delta" in ASCII).
const (
	pgWriteLock   int64 = 0x64656c7461_01 // held by every write transaction
	pgMigrateLock int64 = 0x64656c7461_02 // held while migrating
)

// IsPostgresURL reports whether dsn names a PostgreSQL database rather
// than a SQLite file.
func IsPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// redactURL is dsn without its password, for error messages.
func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// openPostgres opens and migrates the PostgreSQL database at dsn.
func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	name := redactURL(dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	if err := migratePG(ctx, cfg, name); err != nil {
		return nil, err
	}
	db := sql.OpenDB(pgConnector{c: stdlib.GetConnector(*cfg)})
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	s := &Store{w: db, r: db, path: name, pg: true}
	s.wstmts.off, s.rstmts.off = true, true // pgx prepares and caches per connection itself
	return s, nil
}

// migratePG applies the PostgreSQL migrations newer than the database's
// recorded schema version, each in its own transaction, under an advisory
// lock so workers starting together migrate once; it refuses a database a
// newer binary has migrated further. The version lives in delta_schema, a
// one-row table outside the numbered migrations (PostgreSQL has no
// PRAGMA user_version).
func migratePG(ctx context.Context, cfg *pgx.ConnConfig, name string) error {
	ms, err := pgMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open store %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", pgMigrateLock); err != nil {
		return fmt.Errorf("open store %s: migration lock: %w", name, err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", pgMigrateLock) }()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS delta_schema (
		id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("open store %s: schema table: %w", name, err)
	}
	var current int
	err = conn.QueryRow(ctx, "SELECT version FROM delta_schema WHERE id = 1").Scan(&current)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("open store %s: read schema version: %w", name, err)
	}
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].version
	}
	if current > latest {
		return fmt.Errorf("open store %s: schema version %d, this binary knows %d: %w", name, current, latest, ErrSchemaNewer)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil { // no arguments: the simple protocol, several statements
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO delta_schema (id, version) VALUES (1, $1)
				ON CONFLICT (id) DO UPDATE SET version = excluded.version`, m.version)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s to %s: %w", name, m.name, err)
		}
	}
	return nil
}

// schemaVersion reads the database's schema version inside tx.
func (s *Store) schemaVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	var v int
	q := "PRAGMA user_version"
	if s.pg {
		q = "SELECT version FROM delta_schema WHERE id = 1"
	}
	err := tx.QueryRowContext(ctx, q).Scan(&v)
	return v, err
}

// beginWrite is the first statement of every write transaction: on
// PostgreSQL it waits for the write lock (see the top of this file); on
// SQLite the immediate transaction already holds the database's one
// write lock.
func (s *Store) beginWrite(ctx context.Context, tx *sql.Tx) error {
	if !s.pg {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", pgWriteLock)
	return err
}

// rowTx runs fn in a write transaction that relies on row locks alone: on
// PostgreSQL it does not take the store's write lock, so it must write no
// event (work claims and leases); on SQLite it is tx.
func (s *Store) rowTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if !s.pg {
		return s.tx(ctx, fn)
	}
	return txOn(ctx, s.w, fn)
}
