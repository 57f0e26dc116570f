package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The self_revisions table keeps earlier contents of DELTA.md: each row is
// the file a content-changing write replaced, so an operator can compare
// and restore it. Only the newest SelfRevisionsKept rows are kept.

// SelfRevisionsKept is how many revisions of DELTA.md are kept.
const SelfRevisionsKept = 20

// SelfRevision is one earlier content of DELTA.md.
type SelfRevision struct {
	ID         int64
	Content    string
	Version    string // version of Content
	ReplacedBy string // version of the content written over it
	Source     string // "remember" or "restore"
	RunID      string // the run whose remember call replaced it ("" for a restore)
	Created    time.Time
}

// AddSelfRevision stores rev and drops all but the newest SelfRevisionsKept
// rows, in one transaction. It returns the new row's id.
func (s *Store) AddSelfRevision(ctx context.Context, rev SelfRevision) (int64, error) {
	var id int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `INSERT INTO self_revisions (content, version, replaced_by, source, run_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`, rev.Content, rev.Version, rev.ReplacedBy, rev.Source, rev.RunID, rev.Created.UnixMilli())
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `DELETE FROM self_revisions WHERE id NOT IN (SELECT id FROM self_revisions ORDER BY id DESC LIMIT ?)`, SelfRevisionsKept)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("add self-file revision: %w", err)
	}
	return id, nil
}

// SelfRevisions lists the kept revisions, newest first.
func (s *Store) SelfRevisions(ctx context.Context) ([]SelfRevision, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, content, version, replaced_by, source, run_id, created_at
		FROM self_revisions ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list self-file revisions: %w", err)
	}
	return scanAll(rows, "list self-file revisions", scanSelfRevision)
}

// SelfRevisionByID returns one kept revision, or ErrNotFound.
func (s *Store) SelfRevisionByID(ctx context.Context, id int64) (SelfRevision, error) {
	row := s.r.QueryRowContext(ctx, `SELECT id, content, version, replaced_by, source, run_id, created_at
		FROM self_revisions WHERE id = ?`, id)
	r, err := scanSelfRevision(row)
	if errors.Is(err, sql.ErrNoRows) {
		return SelfRevision{}, fmt.Errorf("self-file revision %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return SelfRevision{}, fmt.Errorf("read self-file revision %d: %w", id, err)
	}
	return r, nil
}

func scanSelfRevision(sc scanner) (SelfRevision, error) {
	var r SelfRevision
	var at int64
	if err := sc.Scan(&r.ID, &r.Content, &r.Version, &r.ReplacedBy, &r.Source, &r.RunID, &at); err != nil {
		return SelfRevision{}, err
	}
	r.Created = time.UnixMilli(at).UTC()
	return r, nil
}
