package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The tool_activations table holds the tools search_tools activated for a
// run. They stay resident for the rest of the run, including after a
// restart, so the rows are keyed by run id.

// ToolActivations lists the tools activated for a run, oldest first (ties
// by name).
func (s *Store) ToolActivations(ctx context.Context, runID string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT name FROM tool_activations WHERE run_id = ? ORDER BY activated_at, name", runID)
	if err != nil {
		return nil, fmt.Errorf("read tool activations of %s: %w", runID, err)
	}
	return scanAll(rows, "read tool activations of "+runID, scanString)
}

// ActivateTools records names as activated for a run at time at, in one
// transaction. Each name is stamped a nanosecond after the previous one so
// ToolActivations returns them in the order given; a name already active
// keeps its first stamp.
func (s *Store) ActivateTools(ctx context.Context, runID string, names []string, at time.Time) error {
	if len(names) == 0 {
		return nil
	}
	base := at.UnixNano()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for i, n := range names {
			if _, err := s.exec(ctx, tx, "INSERT OR IGNORE INTO tool_activations (run_id, name, activated_at) VALUES (?, ?, ?)",
				runID, n, base+int64(i)); err != nil {
				return fmt.Errorf("activate tool %s: %w", n, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("activate tools for %s: %w", runID, err)
	}
	return nil
}
