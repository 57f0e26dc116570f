package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/model"
)

// Call is one captured model call: the normalized request the engine built
// and the response that served it. Request and Response are JSON documents
// the store keeps verbatim; Step is filled in by CommitStep.
type Call struct {
	ID        int64
	RunID     string
	Step      int
	Turn      int
	Model     string
	Provider  string
	Request   json.RawMessage
	Response  json.RawMessage
	Usage     model.Usage
	LatencyMS int64
	CreatedAt time.Time
}

func (s *Store) insertCall(ctx context.Context, tx *sql.Tx, runID string, step int, c *Call) error {
	u := c.Usage
	_, err := s.exec(ctx, tx, `INSERT INTO calls (run_id, step, turn, model, provider, request, response,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, latency_ms, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, runID, step, c.Turn, c.Model, c.Provider, string(c.Request), string(c.Response),
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, c.LatencyMS, now())
	if err != nil {
		return fmt.Errorf("capture call of step %d: %w", step, err)
	}
	c.RunID, c.Step = runID, step
	return nil
}

// Calls returns a run's captured calls in order, raw (unredacted).
func (s *Store) Calls(ctx context.Context, runID string) ([]Call, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, run_id, step, turn, model, provider, request, response,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, latency_ms, created_at
		FROM calls WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("read calls of %s: %w", runID, err)
	}
	return scanAll(rows, "read calls of "+runID, func(rows scanner) (Call, error) {
		var c Call
		var req, resp string
		var ms int64
		err := rows.Scan(&c.ID, &c.RunID, &c.Step, &c.Turn, &c.Model, &c.Provider, &req, &resp,
			&c.Usage.InputTokens, &c.Usage.OutputTokens, &c.Usage.CacheReadTokens, &c.Usage.CacheWriteTokens,
			&c.Usage.CostUSD, &c.LatencyMS, &ms)
		c.Request, c.Response = json.RawMessage(req), json.RawMessage(resp)
		c.CreatedAt = time.UnixMilli(ms).UTC()
		return c, err
	})
}
