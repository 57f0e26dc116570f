package daemon

import (
	"context"
	"strings"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/model/cascade"
	"github.com/deltaharness/delta/internal/vault"
	"github.com/deltaharness/delta/internal/version"
)

// statusView is the secret-free GET /v1/status body: no keys, URLs or
// headers, only names, choices and ceilings.
func statusView(cfg config.Config, c *cascade.Cascade, tools *toolStatus, p *parts) map[string]any {
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
		"safe_mode":        cfg.SafeMode,
		"model":            mv.Model,
		"provider":         mv.Provider,
		"provider_chain":   mv.Chain,
		"utility_model":    mv.Utility,
		"reasoning_effort": effort,
		"controls":         map[string]any{"text_verbosity": cfg.TextVerbosity, "reasoning_summary": cfg.ReasoningSummary, "unmapped": nonNil(unmapped(cfg))},
		"budgets":          budgets,
		"max_concurrency":  cfg.MaxConcurrency,
		"capture_calls":    cfg.CaptureCalls,
		"tools":            tools.view(),
		"mcp_servers":      mcpStatus(p),
		"vault":            vaultStatus(cfg, p),
		"learning":         learningStatus(cfg, tools, p),
		"telemetry":        telemetryStatus(p),
		"otlp":             otlpStatus(p),
	}
}

// telemetryStatus is the exporter's backlog, oldest unexported age, last
// success and last error; {"enabled": false} when export is off.
func telemetryStatus(p *parts) any {
	if p.telemetry == nil {
		return map[string]any{"enabled": false}
	}
	return p.telemetry.Status(context.Background())
}

// otlpStatus is the OTLP trace lane's endpoint (scheme and host only),
// pending runs, exported spans and last error; {"enabled": false} when off.
func otlpStatus(p *parts) any {
	if p.traces == nil {
		return map[string]any{"enabled": false}
	}
	return p.traces.Status(context.Background())
}

func mcpStatus(p *parts) any {
	if p.mcp == nil {
		return []any{}
	}
	return p.mcp.Status()
}

// vaultStatus says whether the vault is on, how many secrets it holds and
// which names the MCP configuration refers to — never a value.
func vaultStatus(cfg config.Config, p *parts) map[string]any {
	declared := []string{}
	for _, s := range cfg.MCP.Servers {
		for _, v := range s.Headers {
			declared = append(declared, vault.References(v)...)
		}
		for _, v := range s.Env {
			declared = append(declared, vault.References(v)...)
		}
	}
	out := map[string]any{"enabled": p.vault != nil, "declared": declared}
	if p.vault != nil {
		if n, err := p.vault.Count(context.Background()); err == nil {
			out["count"] = n
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// devConfig is GET /v1/dev/config: the harness as an operator inspects it.
// Credentials appear only as presence booleans.
func devConfig(cfg config.Config, p *parts) map[string]any {
	st := p.status().(map[string]any)
	var mcpTools []string
	if tools, ok := st["tools"].(map[string]any); ok {
		if names, ok := tools["registered"].([]string); ok {
			for _, n := range names {
				if strings.Contains(n, "__") {
					mcpTools = append(mcpTools, n)
				}
			}
		}
	}
	return map[string]any{
		"version": st["version"], "build": cfg.Build, "agent_id": cfg.AgentID,
		"schema_version": p.boot.SchemaVersion,
		"boot": map[string]any{"harness_version": p.boot.HarnessVersion, "build": p.boot.Build,
			"schema_version": p.boot.SchemaVersion, "booted_at": p.boot.BootedAt},
		"model": map[string]any{"primary": cfg.ModelPrimary, "fallbacks": cfg.ModelFallbacks, "api": cfg.ModelAPI,
			"provider": st["provider"], "provider_chain": st["provider_chain"], "utility_model": st["utility_model"]},
		"mcp_servers": st["mcp_servers"],
		"tools":       map[string]any{"mcp": nonNil(mcpTools), "builtin": st["tools"]},
		"credentials": map[string]bool{
			"model_api_key": cfg.ModelAPIKey != "", "exa_api_key": cfg.ExaAPIKey != "",
			"control_token": cfg.ControlToken != "", "inspect_token": cfg.InspectToken != "",
			"vault_key": cfg.MCP.VaultKey != "", "broker": cfg.Broker.TokenURL != "",
		},
		"inspect_write": cfg.InspectWrite, "capture_calls": cfg.CaptureCalls, "strict_tenant": cfg.StrictTenant,
	}
}
