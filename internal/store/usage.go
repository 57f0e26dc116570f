package store

import (
	"context"
	"fmt"

	"github.com/deltaharness/delta/internal/model"
)

// AddUsage adds usage spent outside the run's own model calls (a
// spawn_subagent child's) to the run's totals, in one UPDATE. Only a running
// run is charged: a finished run's totals are part of its final record.
func (s *Store) AddUsage(ctx context.Context, runID string, u model.Usage) error {
	res, err := s.w.ExecContext(ctx, `UPDATE runs SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
		cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?, cost_usd = cost_usd + ?
		WHERE id = ? AND status = 'running'`, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, runID)
	if err != nil {
		return fmt.Errorf("add usage to run %s: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("add usage to run %s: not running: %w", runID, ErrAlreadyFinal)
	}
	s.charges.Add(1)
	return nil
}

// Charges counts the AddUsage calls this Store has committed, for any run:
// a caller that compares it before and after some work knows whether a
// run's counters may have moved without reading the run.
func (s *Store) Charges() uint64 { return s.charges.Load() }
