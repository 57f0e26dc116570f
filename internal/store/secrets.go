package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrExists is returned by PutSecret without replace when the name is taken.
var ErrExists = errors.New("already exists")

// Secret is one row of the vault_secrets table: a sealed value and its
// plain labels. The store never sees a value outside Ciphertext (which
// includes the GCM tag); sealing and opening belong to package vault.
type Secret struct {
	Name       string
	Purpose    string
	Nonce      []byte
	Ciphertext []byte
	Created    time.Time
	Updated    time.Time
}

// PutSecret inserts sec, or replaces the value of the row of the same name
// when replace is set, and its purpose unless sec's is empty; the row keeps
// its creation time. Without replace a taken name is ErrExists; with it a
// missing name is ErrNotFound.
func (s *Store) PutSecret(ctx context.Context, sec Secret, replace bool) error {
	if replace {
		// A rotation changes a secret that exists: a misspelled name must
		// not quietly add a second secret and leave the first unrotated.
		res, err := s.w.ExecContext(ctx, `UPDATE vault_secrets SET purpose = COALESCE(NULLIF(?, ''), purpose), nonce = ?, ciphertext = ?, updated_at = ? WHERE name = ?`,
			sec.Purpose, sec.Nonce, sec.Ciphertext, sec.Updated.UnixMilli(), sec.Name)
		if err != nil {
			return fmt.Errorf("put secret %s: %w", sec.Name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("secret %s: %w", sec.Name, ErrNotFound)
		}
		return nil
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO vault_secrets (name, purpose, nonce, ciphertext, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
		sec.Name, sec.Purpose, sec.Nonce, sec.Ciphertext, sec.Created.UnixMilli(), sec.Updated.UnixMilli())
	if err != nil {
		if uniqueViolation(err) {
			return fmt.Errorf("put secret %s: %w", sec.Name, ErrExists)
		}
		return fmt.Errorf("put secret %s: %w", sec.Name, err)
	}
	return nil
}

// Secret returns the row named name, or ErrNotFound.
func (s *Store) Secret(ctx context.Context, name string) (Secret, error) {
	sec := Secret{Name: name}
	var created, updated int64
	err := s.r.QueryRowContext(ctx, `SELECT purpose, nonce, ciphertext, created_at, updated_at FROM vault_secrets WHERE name = ?`, name).
		Scan(&sec.Purpose, &sec.Nonce, &sec.Ciphertext, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Secret{}, fmt.Errorf("secret %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("get secret %s: %w", name, err)
	}
	sec.Created, sec.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return sec, nil
}

// Secrets returns every row without its nonce and ciphertext, ordered by
// name.
func (s *Store) Secrets(ctx context.Context) ([]Secret, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, purpose, created_at, updated_at FROM vault_secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return scanAll(rows, "list secrets", func(rows scanner) (Secret, error) {
		var sec Secret
		var created, updated int64
		err := rows.Scan(&sec.Name, &sec.Purpose, &created, &updated)
		sec.Created, sec.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
		return sec, err
	})
}

// DeleteSecret removes the row named name, or reports ErrNotFound.
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM vault_secrets WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("secret %s: %w", name, ErrNotFound)
	}
	return nil
}
