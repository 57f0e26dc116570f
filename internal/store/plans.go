package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The todo_plans table holds one working plan per session for the todo
// tool. The plan is an opaque JSON document here: its shape belongs to the
// tool, the row to the store.

// TodoPlan returns a session's plan document, or "" when the session has
// none.
func (s *Store) TodoPlan(ctx context.Context, sessionID string) (string, error) {
	var items string
	err := s.r.QueryRowContext(ctx, "SELECT items FROM todo_plans WHERE session_id = ?", sessionID).Scan(&items)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read todo plan of session %s: %w", sessionID, err)
	}
	return items, nil
}

// SetTodoPlan replaces a session's plan document, stamped at; "" deletes
// the row, so a cleared plan leaves nothing behind.
func (s *Store) SetTodoPlan(ctx context.Context, sessionID, items string, at time.Time) error {
	if items == "" {
		if _, err := s.w.ExecContext(ctx, "DELETE FROM todo_plans WHERE session_id = ?", sessionID); err != nil {
			return fmt.Errorf("clear todo plan of session %s: %w", sessionID, err)
		}
		return nil
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO todo_plans (session_id, items, updated_at) VALUES (?, ?, ?)
		ON CONFLICT(session_id) DO UPDATE SET items = excluded.items, updated_at = excluded.updated_at`,
		sessionID, items, at.UnixMilli())
	if err != nil {
		return fmt.Errorf("write todo plan of session %s: %w", sessionID, err)
	}
	return nil
}
