package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Outbox is the telemetry exporter's durable state: the database's wire
// identity, the export mark and what is still waiting.
type Outbox struct {
	DaemonID string
	// Exported is the highest event id a collector acknowledged; every
	// event above it is unexported.
	Exported int64
	// Backlog counts unexported events; Oldest is the time of the oldest
	// of them (zero when Backlog is 0).
	Backlog int64
	Oldest  time.Time
	// Dropped counts unexported events the outbox cap deleted.
	Dropped int64
}

// TelemetryOutbox returns the exporter's state, creating the row (and with
// it a fresh random daemon id) the first time it is asked for.
func (s *Store) TelemetryOutbox(ctx context.Context) (Outbox, error) {
	var o Outbox
	err := s.r.QueryRowContext(ctx, "SELECT daemon_id, exported, dropped FROM telemetry WHERE id = 1").Scan(&o.DaemonID, &o.Exported, &o.Dropped)
	if errors.Is(err, sql.ErrNoRows) {
		err = s.tx(ctx, func(tx *sql.Tx) error {
			_, err := s.exec(ctx, tx, "INSERT OR IGNORE INTO telemetry (id, daemon_id, created_at) VALUES (1, ?, ?)", uuid(), time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return Outbox{}, fmt.Errorf("create telemetry state: %w", err)
		}
		err = s.r.QueryRowContext(ctx, "SELECT daemon_id, exported, dropped FROM telemetry WHERE id = 1").Scan(&o.DaemonID, &o.Exported, &o.Dropped)
	}
	if err != nil {
		return Outbox{}, fmt.Errorf("read telemetry state: %w", err)
	}
	var oldest sql.NullInt64
	if err := s.r.QueryRowContext(ctx, "SELECT count(*), min(created_at) FROM events WHERE id > ?", o.Exported).Scan(&o.Backlog, &oldest); err != nil {
		return Outbox{}, fmt.Errorf("read telemetry backlog: %w", err)
	}
	if oldest.Valid {
		o.Oldest = time.UnixMilli(oldest.Int64).UTC()
	}
	return o, nil
}

// MarkExported records that every event up to and including id reached
// the collector. The mark never moves back.
func (s *Store) MarkExported(ctx context.Context, id int64) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "UPDATE telemetry SET exported = max(exported, ?) WHERE id = 1", id)
		if err != nil {
			return fmt.Errorf("mark exported: %w", err)
		}
		return nil
	})
}

// Trim is what one outbox trim deleted.
type Trim struct {
	Exported int64 // already exported rows, deleted first
	Dropped  int64 // unexported rows, deleted only when the backlog alone exceeds the cap
}

// TrimOutbox bounds the events table at limit rows while the exporter owns
// it: exported rows go first, oldest first; unexported rows are deleted
// (oldest first, and counted in the state's dropped) only when the
// unexported backlog alone is larger than limit.
func (s *Store) TrimOutbox(ctx context.Context, limit int64) (Trim, error) {
	var t Trim
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var exported, total, backlog int64
		if err := tx.QueryRowContext(ctx, "SELECT exported FROM telemetry WHERE id = 1").Scan(&exported); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&total); err != nil {
			return err
		}
		if total <= limit {
			return nil
		}
		res, err := s.exec(ctx, tx, "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ? ORDER BY id LIMIT ?)", exported, total-limit)
		if err != nil {
			return err
		}
		t.Exported, _ = res.RowsAffected()
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM events WHERE id > ?", exported).Scan(&backlog); err != nil {
			return err
		}
		if backlog <= limit {
			return nil
		}
		res, err = s.exec(ctx, tx, "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id > ? ORDER BY id LIMIT ?)", exported, backlog-limit)
		if err != nil {
			return err
		}
		t.Dropped, _ = res.RowsAffected()
		_, err = s.exec(ctx, tx, "UPDATE telemetry SET dropped = dropped + ? WHERE id = 1", t.Dropped)
		return err
	})
	if err != nil {
		return Trim{}, fmt.Errorf("trim telemetry outbox: %w", err)
	}
	return t, nil
}

// TraceOutbox is the OTLP trace exporter's durable state.
type TraceOutbox struct {
	DaemonID string
	// Traced is the highest run.finished event id whose run reached the
	// OTLP receiver; every finished run above it is still to be traced.
	Traced int64
	// Pending counts the finished runs above Traced.
	Pending int64
}

// TraceOutbox returns the OTLP exporter's state, creating the telemetry
// row (and with it the daemon id, the traces' service.instance.id) the
// first time.
func (s *Store) TraceOutbox(ctx context.Context) (TraceOutbox, error) {
	var t TraceOutbox
	err := s.r.QueryRowContext(ctx, "SELECT daemon_id FROM telemetry WHERE id = 1").Scan(&t.DaemonID)
	if errors.Is(err, sql.ErrNoRows) {
		var o Outbox
		o, err = s.TelemetryOutbox(ctx) // creates the row
		t.DaemonID = o.DaemonID
	}
	if err != nil {
		return TraceOutbox{}, fmt.Errorf("read daemon id: %w", err)
	}
	err = s.r.QueryRowContext(ctx, "SELECT traced FROM trace_outbox WHERE id = 1").Scan(&t.Traced)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil // nothing traced yet
	}
	if err != nil {
		return TraceOutbox{}, fmt.Errorf("read trace state: %w", err)
	}
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM events WHERE id > ? AND name = 'run.finished'", t.Traced).Scan(&t.Pending); err != nil {
		return TraceOutbox{}, fmt.Errorf("read trace backlog: %w", err)
	}
	return t, nil
}

// MarkTraced records that every run whose run.finished event id is at most
// id reached the OTLP receiver. The mark never moves back.
func (s *Store) MarkTraced(ctx context.Context, id int64) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, "INSERT INTO trace_outbox (id, traced) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET traced = max(trace_outbox.traced, excluded.traced)", id); err != nil {
			return fmt.Errorf("mark traced: %w", err)
		}
		return nil
	})
}

// uuid is a random version 4 UUID.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
