package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/event"
)

// insertEvent stores e in tx and fills in its id. On PostgreSQL it also
// notifies eventsChannel, delivered at commit, so every worker's event tail
// reads the new rows at once (see events_tail.go).
func (s *Store) insertEvent(ctx context.Context, tx *sql.Tx, e *event.Event) error {
	if err := s.insertEventRow(ctx, tx, e); err != nil {
		return err
	}
	return s.notifyEvents(ctx, tx)
}

func (s *Store) insertEventRow(ctx context.Context, tx *sql.Tx, e *event.Event) error {
	if s.deferEvent(tx, e) {
		return nil // written, with its id, when the transaction commits (postgres.go)
	}
	var data any
	if len(e.Data) > 0 {
		data = string(e.Data)
	}
	res, err := s.exec(ctx, tx, "INSERT INTO events (run_id, session_id, owner, task_id, turn, name, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		e.RunID, e.SessionID, e.Owner, e.TaskID, e.Turn, e.Name, data, e.Time.UnixMilli())
	if err != nil {
		return fmt.Errorf("insert event %s: %w", e.Name, err)
	}
	e.ID, err = res.LastInsertId()
	return err
}

// spine stamps the run's owner and task on events that lack them.
func spine(r Run, evs []event.Event) {
	task := r.TaskID()
	for i := range evs {
		if evs[i].Owner == "" {
			evs[i].Owner = r.Owner
		}
		if evs[i].TaskID == "" {
			evs[i].TaskID = task
		}
	}
}

// insertEvents stores evs in tx and fills in their ids; on PostgreSQL one
// notification covers them all (as insertEvent).
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, evs []event.Event) error {
	return s.insertEventLists(ctx, tx, evs)
}

// insertEventLists is insertEvents of the lists one after the other, each
// list's events given their ids in place.
func (s *Store) insertEventLists(ctx context.Context, tx *sql.Tx, lists ...[]event.Event) error {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	if n == 0 {
		return nil
	}
	if !s.pg {
		evs := make([]*event.Event, 0, n)
		for _, l := range lists {
			for i := range l {
				evs = append(evs, &l[i])
			}
		}
		return s.insertEventRows(ctx, tx, evs)
	}
	for _, l := range lists {
		for i := range l {
			if err := s.insertEventRow(ctx, tx, &l[i]); err != nil {
				return err
			}
		}
	}
	return s.notifyEvents(ctx, tx)
}

var eventInserts = rowInserts("INSERT INTO events (run_id, session_id, owner, task_id, turn, name, data, created_at) VALUES ", "(?, ?, ?, ?, ?, ?, ?, ?)")

// insertEventRows is insertEventLists on SQLite: the events of one write
// (a step's are five or so) go in as one INSERT of many rows, one
// statement run instead of one per event. One statement's rows take
// consecutive ids (the one writer, AUTOINCREMENT: each row's id is one past
// the last), so the last row's id gives every row's.
func (s *Store) insertEventRows(ctx context.Context, tx *sql.Tx, evs []*event.Event) error {
	for len(evs) > 0 {
		chunk := evs[:min(len(evs), rowsPerInsert)]
		evs = evs[len(chunk):]
		args := make([]any, 0, 8*len(chunk))
		for _, e := range chunk {
			var data any
			if len(e.Data) > 0 {
				data = string(e.Data)
			}
			args = append(args, e.RunID, e.SessionID, e.Owner, e.TaskID, e.Turn, e.Name, data, e.Time.UnixMilli())
		}
		res, err := s.exec(ctx, tx, eventInserts[len(chunk)], args...)
		if err != nil {
			return fmt.Errorf("insert events %s…: %w", chunk[0].Name, err)
		}
		last, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("insert events %s…: %w", chunk[0].Name, err)
		}
		for i, e := range chunk {
			e.ID = last - int64(len(chunk)-1-i)
		}
	}
	return nil
}

// notifyEvents tells the event tails of every worker on this PostgreSQL
// database that events were inserted; in a transaction it is delivered at
// commit, and PostgreSQL folds a transaction's identical notifications
// into one. SQLite has one process per database: nothing to tell.
func (s *Store) notifyEvents(ctx context.Context, tx *sql.Tx) error {
	if !s.pg || s.deferNotify(tx) {
		return nil // nothing to tell, or told by the closing pipeline (postgres.go)
	}
	if _, err := s.exec(ctx, tx, "SELECT pg_notify('"+eventsChannel+"', '')"); err != nil {
		return fmt.Errorf("notify events: %w", err)
	}
	return nil
}

// AddEvents stores events that are not part of a state change (retries,
// warnings) and fills in their IDs.
func (s *Store) AddEvents(ctx context.Context, evs []event.Event) error {
	return s.groupTx(ctx, func(tx *sql.Tx) error { return s.insertEvents(ctx, tx, evs) })
}

// EventFilter selects stored events. Zero fields match everything.
type EventFilter struct {
	RunID     string
	SessionID string
	Name      string // one event name
	Since     int64  // events with ID > Since
	Limit     int    // 0 = 500
}

// Events reads stored events in ID order.
func (s *Store) Events(ctx context.Context, f EventFilter) ([]event.Event, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 500
	}
	q := "SELECT id, run_id, session_id, owner, task_id, turn, name, COALESCE(data,''), created_at FROM events WHERE id > ?"
	args := []any{f.Since}
	if f.RunID != "" {
		q += " AND run_id = ?"
		args = append(args, f.RunID)
	}
	if f.SessionID != "" {
		q += " AND session_id = ?"
		args = append(args, f.SessionID)
	}
	if f.Name != "" {
		q += " AND name = ?"
		args = append(args, f.Name)
	}
	q += " ORDER BY id LIMIT ?"
	args = append(args, f.Limit)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	evs, err := scanAll(rows, "read events", func(rows scanner) (event.Event, error) {
		var e event.Event
		var data string
		var ms int64
		err := rows.Scan(&e.ID, &e.RunID, &e.SessionID, &e.Owner, &e.TaskID, &e.Turn, &e.Name, &data, &ms)
		if data != "" {
			e.Data = json.RawMessage(data)
		}
		e.Time = time.UnixMilli(ms).UTC()
		return e, err
	})
	if err != nil || !s.pg || len(evs) == 0 {
		return evs, err
	}
	// On PostgreSQL another worker's commit is visible a disk flush
	// before it is durable (writers wait for the disk after releasing
	// their locks: pgAwaitDurable). Events are what clients are shown
	// (streams, pages, the Cockpit), and one shown and then taken back by
	// the server's crash would be lost to them. A wait that begins after
	// the read covers every commit the read saw, so the events are handed
	// out only once they are on disk.
	if err := s.awaitDurable(ctx); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return evs, nil
}
