package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/cascade"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/subagent"
)

// addSubagent registers the delegation tools, spawn_subagent and eval_n, at
// nesting depth 0 only: a child (depth ≥ 1) never gets them, so nesting
// stops at one level. Neither is read-only, so both belong to the trusted
// tier alone. eval_n's judge is the cascade's utility lane.
func addSubagent(cfg config.Config, dir string, st *store.Store, provider *cascade.Cascade, prices map[string]model.Price, reg *tool.Registry, ts *toolStatus, logger *slog.Logger) {
	names := []string{subagent.Name, subagent.EvalName}
	if cfg.SubagentDepth >= 1 {
		for _, n := range names {
			ts.omitted[n] = fmt.Sprintf("DELTA_SUBAGENT_DEPTH=%d: subagents do not nest", cfg.SubagentDepth)
		}
		return
	}
	exe, err := os.Executable()
	if err != nil {
		for _, n := range names {
			ts.omitted[n] = "cannot find the delta binary: " + err.Error()
			logger.Warn("tool omitted", "tool", n, "err", err)
		}
		return
	}
	o := subagent.Options{
		Exe: exe, Dir: dir, Env: cfg.SubagentEnv(), Depth: cfg.SubagentDepth,
		Remaining: func(ctx context.Context, runID string) (int64, float64, error) {
			run, err := st.Run(ctx, runID)
			if err != nil {
				return 0, 0, err
			}
			var req engine.Request
			if err := json.Unmarshal(run.Request, &req); err != nil {
				return 0, 0, fmt.Errorf("read request of run %s: %w", runID, err)
			}
			b := cfg.Budget(req.Profile)
			return b.Tokens - run.Usage.Fresh(), b.CostUSD - run.Usage.CostUSD, nil
		},
		Charge:    st.AddUsage,
		Judge:     judge(provider, prices),
		ResultMax: cfg.ToolResultMaxBytes,
		Logger:    logger,
	}
	reg.Add(subagent.Tools(o)...)
}

// judge is eval_n's judging call on the utility lane, priced
// from the table when the provider reported no cost, as the engine prices
// main-loop calls, so the charge to the parent is in dollars too.
func judge(c *cascade.Cascade, prices map[string]model.Price) func(context.Context, model.Request) (model.Response, error) {
	if c == nil {
		return nil
	}
	return func(ctx context.Context, req model.Request) (model.Response, error) {
		resp, err := c.Utility(ctx, req, model.Stream{})
		if err == nil && !resp.Usage.CostReported {
			if usd, ok := model.Cost(prices, resp.Model, resp.Usage); ok {
				resp.Usage.CostUSD = usd
			}
		}
		return resp, err
	}
}
