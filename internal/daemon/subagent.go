package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/subagent"
)

// addSubagent registers spawn_subagent at nesting depth 0 only: a child
// (depth ≥ 1) never gets it, so nesting stops at one level.
func addSubagent(cfg config.Config, dir string, st *store.Store, reg *tool.Registry, ts *toolStatus, logger *slog.Logger) {
	if cfg.SubagentDepth >= 1 {
		ts.omitted[subagent.Name] = fmt.Sprintf("DELTA_SUBAGENT_DEPTH=%d: subagents do not nest", cfg.SubagentDepth)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		ts.omitted[subagent.Name] = "cannot find the delta binary: " + err.Error()
		logger.Warn("tool omitted", "tool", subagent.Name, "err", err)
		return
	}
	reg.Add(subagent.New(subagent.Options{
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
		ResultMax: cfg.ToolResultMaxBytes,
		Logger:    logger,
	}))
}
