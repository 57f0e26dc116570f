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

// Keep names the export lanes whose undelivered events a sweep leaves.
type Keep struct {
	Unexported bool // the NDJSON exporter is on: events above its export mark
	Untraced   bool // the OTLP lane is on: events above its trace cursor
}

// Sweep deletes events older than eventsBefore and tool-journal rows older
// than journalBefore. Journal rows of a run that is not terminal are never
// removed, whatever their age: they are its restart replay protection.
// Sessions, runs and messages are not age-pruned. With keep.Unexported (the
// telemetry exporter is on) an old event the exporter has not delivered yet
// stays whatever its age: the exporter's outbox cap owns it until it leaves.
// With keep.Untraced (the OTLP lane is on) an old event above the lane's
// cursor stays too, so a run is still whole when its trace is built.
func (s *Store) Sweep(ctx context.Context, eventsBefore, journalBefore time.Time, keep Keep) (SweepResult, error) {
	var r SweepResult
	err := s.tx(ctx, func(tx *sql.Tx) error {
		q := "DELETE FROM events WHERE created_at < ?"
		if keep.Unexported {
			q += " AND id <= (SELECT coalesce(max(exported), 0) FROM telemetry)"
		}
		if keep.Untraced {
			q += " AND id <= (SELECT coalesce(max(traced), 0) FROM trace_outbox)"
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
