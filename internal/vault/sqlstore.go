package vault

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SQLStore keeps records in the vault_secrets table of the daemon's SQLite
// database (created by store migration 0002_vault.sql).
type SQLStore struct{ db *sql.DB }

// NewSQLStore returns a Store over db.
func NewSQLStore(db *sql.DB) *SQLStore { return &SQLStore{db: db} }

var _ Store = (*SQLStore)(nil)

// Put inserts r, or replaces it when replace is set.
func (s *SQLStore) Put(ctx context.Context, r Record, replace bool) error {
	q := `INSERT INTO vault_secrets (name, purpose, nonce, ciphertext, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`
	if replace {
		q += ` ON CONFLICT(name) DO UPDATE SET purpose = excluded.purpose, nonce = excluded.nonce,
			ciphertext = excluded.ciphertext, updated_at = excluded.updated_at`
	}
	_, err := s.db.ExecContext(ctx, q, r.Name, r.Purpose, r.Nonce, r.Ciphertext, r.Created.UnixMilli(), r.Updated.UnixMilli())
	if err != nil {
		if !replace && strings.Contains(err.Error(), "UNIQUE constraint failed") {
			return ErrExists
		}
		return fmt.Errorf("put secret: %w", err)
	}
	return nil
}

// Get returns the record named name.
func (s *SQLStore) Get(ctx context.Context, name string) (Record, error) {
	r := Record{Name: name}
	var created, updated int64
	err := s.db.QueryRowContext(ctx, `SELECT purpose, nonce, ciphertext, created_at, updated_at FROM vault_secrets WHERE name = ?`, name).
		Scan(&r.Purpose, &r.Nonce, &r.Ciphertext, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("get secret: %w", err)
	}
	r.Created, r.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return r, nil
}

// List returns every record without its ciphertext, ordered by name.
func (s *SQLStore) List(ctx context.Context) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, purpose, created_at, updated_at FROM vault_secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var created, updated int64
		if err := rows.Scan(&r.Name, &r.Purpose, &created, &updated); err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		r.Created, r.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// Delete removes the record named name.
func (s *SQLStore) Delete(ctx context.Context, name string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM vault_secrets WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("delete secret: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Count is the number of stored secrets (for the status block).
func (v *Vault) Count(ctx context.Context) (int, error) {
	rs, err := v.store.List(ctx)
	return len(rs), err
}
