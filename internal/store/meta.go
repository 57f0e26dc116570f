package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// Boot is what the daemon records about itself in the meta table on every
// start, so an operator (and /v1/dev/config) can tell which harness last
// opened the database and at which schema.
type Boot struct {
	HarnessVersion string    // version.Version of the binary
	Build          string    // DELTA_BUILD; empty when unset
	SchemaVersion  int       // the schema version after migration
	BootedAt       time.Time // when this boot recorded itself
}

// Meta keys RecordBoot writes.
const (
	metaHarnessVersion = "harness_version"
	metaBuild          = "build"
	metaSchemaVersion  = "schema_version"
	metaBootedAt       = "booted_at"
)

// RecordBoot writes harness version, build and the database's schema
// version into the meta table in one transaction, replacing the previous
// boot's values, and returns what it wrote.
func (s *Store) RecordBoot(ctx context.Context, harnessVersion, build string) (Boot, error) {
	b := Boot{HarnessVersion: harnessVersion, Build: build, BootedAt: time.Now().UTC()}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if b.SchemaVersion, err = s.schemaVersion(ctx, tx); err != nil {
			return err
		}
		for k, v := range map[string]string{
			metaHarnessVersion: b.HarnessVersion, metaBuild: b.Build,
			metaSchemaVersion: strconv.Itoa(b.SchemaVersion), metaBootedAt: b.BootedAt.Format(time.RFC3339Nano),
		} {
			if _, err := s.exec(ctx, tx, `INSERT INTO meta(key, value) VALUES(?, ?)
				ON CONFLICT(key) DO UPDATE SET value = excluded.value`, k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Boot{}, fmt.Errorf("record boot in %s: %w", s.path, err)
	}
	return b, nil
}

// LastBoot reads what the latest RecordBoot wrote; ErrNotFound when no boot
// was recorded yet.
func (s *Store) LastBoot(ctx context.Context) (Boot, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT key, value FROM meta WHERE key IN (?, ?, ?, ?)",
		metaHarnessVersion, metaBuild, metaSchemaVersion, metaBootedAt)
	if err != nil {
		return Boot{}, fmt.Errorf("read boot record: %w", err)
	}
	defer rows.Close()
	var b Boot
	n := 0
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return Boot{}, fmt.Errorf("read boot record: %w", err)
		}
		n++
		switch k {
		case metaHarnessVersion:
			b.HarnessVersion = v
		case metaBuild:
			b.Build = v
		case metaSchemaVersion:
			b.SchemaVersion, _ = strconv.Atoi(v)
		case metaBootedAt:
			b.BootedAt, _ = time.Parse(time.RFC3339Nano, v)
		}
	}
	if err := rows.Err(); err != nil {
		return Boot{}, fmt.Errorf("read boot record: %w", err)
	}
	if n == 0 {
		return Boot{}, ErrNotFound
	}
	return b, nil
}
