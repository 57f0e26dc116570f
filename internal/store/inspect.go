package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/model"
)

// RunFilter selects runs for the inspection list, newest first. Zero
// fields match everything.
type RunFilter struct {
	Status    string
	SessionID string
	Owner     *string // nil = any owner; "" is the unowned runs
	Before    int64   // runs with Seq < Before (0 = from the newest)
	Limit     int     // 1..200, default 50
}

// RunRow is a run in the inspection list with how many calls it captured.
type RunRow struct {
	Run
	Calls int
}

// ListRuns reads one page of runs matching f, newest first, and reports
// whether more follow.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]RunRow, bool, error) {
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 50
	}
	q := "SELECT " + runCols + ", (SELECT COUNT(*) FROM calls c WHERE c.run_id = runs.id) FROM runs WHERE 1=1"
	var args []any
	if f.Before > 0 {
		q += " AND seq < ?"
		args = append(args, f.Before)
	}
	if f.Status != "" {
		q += " AND status = ?"
		args = append(args, f.Status)
	}
	if f.SessionID != "" {
		q += " AND session_id = ?"
		args = append(args, f.SessionID)
	}
	if f.Owner != nil {
		q += " AND owner = ?"
		args = append(args, *f.Owner)
	}
	q += " ORDER BY seq DESC LIMIT ?"
	args = append(args, f.Limit+1)
	rows, err := s.r.QueryContext(ctx, q, args...) //nolint:sqlclosecheck // closed by the defer below; the scan closure only reads rows
	if err != nil {
		return nil, false, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []RunRow
	for rows.Next() {
		var rr RunRow
		var calls int
		r, err := scanRun(scanFunc(func(dest ...any) error { return rows.Scan(append(dest, &calls)...) }))
		if err != nil {
			return nil, false, err
		}
		rr.Run, rr.Calls = r, calls
		out = append(out, rr)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(out) > f.Limit
	if more {
		out = out[:f.Limit]
	}
	return out, more, nil
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// SessionRow is one session with its runs summarised.
type SessionRow struct {
	ID        string
	Owner     string
	CreatedAt time.Time
	Runs      int
	LastRunID string
	LastSeq   int64
}

// Sessions reads one page of sessions, the most recently active first:
// those whose newest run has Seq < before (0 = from the newest).
func (s *Store) Sessions(ctx context.Context, before int64, limit int) ([]SessionRow, bool, error) {
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	q := `SELECT s.id, s.owner, s.created_at, COUNT(r.seq), MAX(r.seq),
		(SELECT id FROM runs WHERE session_id = s.id ORDER BY seq DESC LIMIT 1)
		FROM sessions s JOIN runs r ON r.session_id = s.id GROUP BY s.id`
	var args []any
	if before > 0 {
		q += " HAVING MAX(r.seq) < ?"
		args = append(args, before)
	}
	q += " ORDER BY MAX(r.seq) DESC LIMIT ?"
	args = append(args, limit+1)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionRow
	for rows.Next() {
		var sr SessionRow
		var ms int64
		if err := rows.Scan(&sr.ID, &sr.Owner, &ms, &sr.Runs, &sr.LastSeq, &sr.LastRunID); err != nil {
			return nil, false, err
		}
		sr.CreatedAt = time.UnixMilli(ms).UTC()
		out = append(out, sr)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// runMessages reads a run's messages through its session's index: messages
// has no index on run_id (one more index write for every message a step
// appends), and a run's messages are a part of its session's.
const runMessages = `SELECT role, content, COALESCE(tool_calls,''), COALESCE(tool_call_id,''), COALESCE(name,'')
		FROM messages WHERE session_id = (SELECT session_id FROM runs WHERE id = ?) AND run_id = ? ORDER BY id`

// RunMessages returns the messages a run appended to its session, in order.
func (s *Store) RunMessages(ctx context.Context, runID string) ([]model.Message, error) {
	rows, err := s.r.QueryContext(ctx, runMessages, runID, runID)
	if err != nil {
		return nil, fmt.Errorf("read messages of run %s: %w", runID, err)
	}
	return scanAll(rows, "read messages of run "+runID, func(rows scanner) (model.Message, error) {
		var m model.Message
		var role, calls string
		if err := rows.Scan(&role, &m.Content, &calls, &m.ToolCallID, &m.Name); err != nil {
			return m, err
		}
		m.Role = model.Role(role)
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
				return m, fmt.Errorf("tool calls: %w", err)
			}
		}
		return m, nil
	})
}

// JournalRow is one journalled call with its timing.
type JournalRow struct {
	JournalEntry
	CreatedAt  time.Time
	FinishedAt time.Time // zero while in doubt
}

// RunJournal returns a run's tool journal in the order the calls were
// asked for.
func (s *Store) RunJournal(ctx context.Context, runID string) ([]JournalRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT call_id, name, args, read_only, status, COALESCE(result,''), is_error, created_at, finished_at
		FROM tool_journal WHERE run_id = ? ORDER BY created_at, rowid`, runID)
	if err != nil {
		return nil, fmt.Errorf("read journal of %s: %w", runID, err)
	}
	return scanAll(rows, "read journal of "+runID, func(rows scanner) (JournalRow, error) {
		var e JournalRow
		var args, status string
		var created int64
		var finished sql.NullInt64
		err := rows.Scan(&e.CallID, &e.Name, &args, &e.ReadOnly, &status, &e.Result, &e.IsError, &created, &finished)
		e.Args = json.RawMessage(args)
		e.Done = status == "done"
		e.CreatedAt = time.UnixMilli(created).UTC()
		if finished.Valid {
			e.FinishedAt = time.UnixMilli(finished.Int64).UTC()
		}
		return e, err
	})
}

// FirstEventOf is the id of the oldest stored event of any of the runs,
// 0 when none has one: where a follower that wants those runs' whole
// timelines, and nothing older, starts reading.
func (s *Store) FirstEventOf(ctx context.Context, runIDs []string) (int64, error) {
	if len(runIDs) == 0 {
		return 0, nil
	}
	args := make([]any, len(runIDs))
	for i, id := range runIDs {
		args[i] = id
	}
	q := "SELECT COALESCE(MIN(id), 0) FROM events WHERE run_id IN (?" + strings.Repeat(", ?", len(runIDs)-1) + ")"
	var id int64
	if err := s.r.QueryRowContext(ctx, q, args...).Scan(&id); err != nil {
		return 0, fmt.Errorf("first event of %d runs: %w", len(runIDs), err)
	}
	return id, nil
}
