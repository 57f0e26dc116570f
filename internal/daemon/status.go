package daemon

import (
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/model/cascade"
	"github.com/deltaharness/delta/internal/version"
)

// statusView is the secret-free GET /v1/status body: no keys, URLs or
// headers, only names, choices and ceilings.
func statusView(cfg config.Config, c *cascade.Cascade, tools *toolStatus) map[string]any {
	mv := c.Status()
	effort := cfg.ReasoningEffort
	if effort == "" {
		effort = "default"
	}
	budgets := map[string]any{}
	for _, p := range []string{config.ProfileTrusted, config.ProfileSafe} {
		if cfg.Placement(p) != p {
			continue // wider than the ceiling: not reachable
		}
		b := cfg.Budget(p)
		budgets[p] = map[string]any{"steps": b.Steps, "tokens": b.Tokens, "cost_usd": b.CostUSD}
	}
	return map[string]any{
		"version":          version.Version,
		"build":            cfg.Build,
		"tier":             cfg.Placement(""),
		"safe_mode":        false,
		"model":            mv.Model,
		"provider":         mv.Provider,
		"provider_chain":   mv.Chain,
		"utility_model":    mv.Utility,
		"reasoning_effort": effort,
		"budgets":          budgets,
		"max_concurrency":  cfg.MaxConcurrency,
		"tools":            tools.view(),
		"mcp_servers":      []string{},
	}
}
