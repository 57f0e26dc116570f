package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SweepResult counts what a retention sweep removed.
type SweepResult struct {
	Events  int64
	Journal int64
}

// Sweep deletes events older than eventsBefore and tool-journal rows older
// than journalBefore. Journal rows of a run that is not terminal are never
// removed, whatever their age: they are its restart replay protection.
// Sessions, runs and messages are not age-pruned. With keepUnexported (the
// telemetry exporter is on) an old event the exporter has not delivered yet
// stays whatever its age: the exporter's outbox cap owns it until it leaves.
func (s *Store) Sweep(ctx context.Context, eventsBefore, journalBefore time.Time, keepUnexported bool) (SweepResult, error) {
	var r SweepResult
	err := s.tx(ctx, func(tx *sql.Tx) error {
		q := "DELETE FROM events WHERE created_at < ?"
		if keepUnexported {
			q += " AND id <= (SELECT coalesce(max(exported), 0) FROM telemetry)"
		}
		res, err := s.exec(ctx, tx, q, eventsBefore.UnixMilli())
		if err != nil {
			return err
		}
		r.Events, _ = res.RowsAffected()
		res, err = s.exec(ctx, tx, `DELETE FROM tool_journal WHERE created_at < ?
			AND run_id IN (SELECT id FROM runs WHERE status IN ('done','failed','cancelled'))`, journalBefore.UnixMilli())
		if err != nil {
			return err
		}
		r.Journal, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return SweepResult{}, fmt.Errorf("retention sweep: %w", err)
	}
	return r, nil
}
