package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
)

// Compaction is one summary that replaced a session's oldest active
// messages. The newest compaction of a session is the summary in force.
type Compaction struct {
	ID        int64
	SessionID string
	RunID     string
	// Summary is the note as the model reads it: the summarizer's text, the
	// machine appendix and the ledgers (the envelope around it is rebuilt
	// on every turn).
	Summary string
	// Anchors are the identifiers the summary carries, for the next audit.
	Anchors []string
	// Covered is how many messages this compaction marked inactive.
	Covered int
	// TailRows is how many active messages it kept verbatim, RecapChars the
	// size each tool result among them was cut to (0 = none cut).
	TailRows   int
	RecapChars int
	CreatedAt  time.Time
}

// LatestCompaction returns the compaction in force for a session, ok false
// when the session was never compacted.
func (s *Store) LatestCompaction(ctx context.Context, sessionID string) (c Compaction, ok bool, err error) {
	var anchors string
	var created int64
	err = s.readRow(ctx, `SELECT id, session_id, run_id, summary, anchors, covered, tail_rows, recap_chars, created_at
		FROM compactions WHERE session_id = ? ORDER BY id DESC LIMIT 1`, sessionID).Scan(
		&c.ID, &c.SessionID, &c.RunID, &c.Summary, &anchors, &c.Covered, &c.TailRows, &c.RecapChars, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Compaction{}, false, nil
	}
	if err != nil {
		return Compaction{}, false, fmt.Errorf("read compaction of session %s: %w", sessionID, err)
	}
	if err := json.Unmarshal([]byte(anchors), &c.Anchors); err != nil {
		return Compaction{}, false, fmt.Errorf("read compaction of session %s: anchors: %w", sessionID, err)
	}
	c.CreatedAt = time.UnixMilli(created).UTC()
	return c, true, nil
}

// Compact is what CommitCompaction writes.
type Compact struct {
	RunID     string
	SessionID string
	// Covered is how many of the session's oldest active messages the
	// summary replaces.
	Covered    int
	Summary    string
	Anchors    []string
	TailRows   int
	RecapChars int
	// Usage is the summarizer's cost, charged to the run's totals (never
	// counted as a step).
	Usage  model.Usage
	Events []event.Event // written in the same transaction; IDs are filled in
}

// ErrSplitTurn refuses a compaction whose cut would separate a tool result
// from the assistant message that asked for it.
var ErrSplitTurn = errors.New("compaction would split a tool call from its result")

// CommitCompaction applies a compaction in one transaction: the oldest
// Covered active messages of the session become inactive (never deleted),
// the compaction row records the summary, the summarizer's usage is added
// to the run, and the events are written. The run must be running. A cut
// that lands on a tool message is refused (ErrSplitTurn), as is one that
// covers more messages than are active.
func (s *Store) CommitCompaction(ctx context.Context, c Compact) ([]event.Event, error) {
	if c.Covered <= 0 {
		return nil, fmt.Errorf("compact session %s: nothing to cover", c.SessionID)
	}
	anchors, err := json.Marshal(nonNil(c.Anchors))
	if err != nil {
		return nil, fmt.Errorf("compact session %s: anchors: %w", c.SessionID, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var last int64
		var n int
		err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0), COUNT(*) FROM (SELECT id FROM messages
			WHERE session_id = ?1 AND id > `+inactiveUpTo+` AND active = 1 ORDER BY id LIMIT ?2) AS covered`, c.SessionID, c.Covered).Scan(&last, &n)
		if err != nil {
			return err
		}
		if n != c.Covered {
			return fmt.Errorf("cover %d messages: only %d are active", c.Covered, n)
		}
		var role string
		err = tx.QueryRowContext(ctx, `SELECT role FROM messages WHERE session_id = ? AND active = 1 AND id > ?
			ORDER BY id LIMIT 1`, c.SessionID, last).Scan(&role)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if role == string(model.RoleTool) {
			return ErrSplitTurn
		}
		// The oldest active messages: the inactive ones stay a prefix of
		// the session, which Messages relies on.
		if _, err := s.exec(ctx, tx, `UPDATE messages SET active = 0 WHERE session_id = ?1 AND id > `+inactiveUpTo+` AND active = 1 AND id <= ?2`,
			c.SessionID, last); err != nil {
			return err
		}
		// Killed here, the transaction never commits: a restart finds the
		// old window whole, never a half-applied compaction.
		crashpoint.Hit(crashpoint.MidCompaction)
		if _, err := s.exec(ctx, tx, `INSERT INTO compactions (session_id, run_id, summary, anchors, covered, tail_rows, recap_chars, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, c.SessionID, c.RunID, c.Summary, string(anchors), c.Covered, c.TailRows, c.RecapChars, now()); err != nil {
			return err
		}
		u := c.Usage
		res, err := s.exec(ctx, tx, `UPDATE runs SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
			cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?, cost_usd = cost_usd + ?
			WHERE id = ? AND status = 'running'`, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, c.RunID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("run %s is not running: %w", c.RunID, ErrAlreadyFinal)
		}
		return s.insertEvents(ctx, tx, c.Events)
	})
	if err != nil {
		return nil, fmt.Errorf("compact session %s: %w", c.SessionID, err)
	}
	return c.Events, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
