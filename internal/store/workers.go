package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// metaWorkspace is the meta key holding the workspace path every worker on
// a shared database must use.
const metaWorkspace = "workspace"

// ErrWorkspaceMismatch means the database is bound to another workspace.
var ErrWorkspaceMismatch = errors.New("workspace differs from the one recorded in the database")

// BindWorkspace records path as the database's workspace on the first call
// and, on every later one, refuses a different path with an error wrapping
// ErrWorkspaceMismatch that names both. Workers sharing a database share
// its files (spill files, uploads, DELTA.md) through that one path.
func (s *Store) BindWorkspace(ctx context.Context, path string) error {
	var recorded string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO NOTHING", metaWorkspace, path); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", metaWorkspace).Scan(&recorded)
	})
	if err != nil {
		return fmt.Errorf("bind workspace %s in %s: %w", path, s.path, err)
	}
	if recorded != path {
		return fmt.Errorf("refusing to start: DELTA_WORKSPACE is %s but the workers on %s use %s (every worker must use the same shared path): %w",
			path, s.path, recorded, ErrWorkspaceMismatch)
	}
	return nil
}

// Shared reports whether this store is a PostgreSQL database that several
// workers may share (SQLite has one writing process).
func (s *Store) Shared() bool { return s.pg }

// Path names the database for logs: the file path, or the URL without its
// password.
func (s *Store) Path() string { return s.path }
