package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/memory"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/skills"
)

// promotionBinding is what the promotion rail was bound to at boot, for
// /v1/status: names only.
type promotionBinding struct {
	minRuns    int
	curated    string // the curated write tool ("" = unbound)
	capability string // the skill-registry family ("" = unbound)
	warning    string // why the curated tool is unbound
}

// mcpCall sends one call to a connected MCP tool through the registry,
// with key as the call's _meta idempotency key.
func mcpCall(reg *tool.Registry) skills.Call {
	return func(ctx context.Context, name string, args map[string]any, key string) (tool.Result, error) {
		t, ok := reg.Get(name)
		if !ok {
			return tool.Result{}, fmt.Errorf("tool %s is not registered", name)
		}
		raw, err := json.Marshal(args)
		if err != nil {
			return tool.Result{}, fmt.Errorf("encode arguments for %s: %w", name, err)
		}
		if key != "" {
			ctx = mcp.WithCallMeta(ctx, map[string]any{memory.MetaIdempotencyKey: key})
		}
		return t.Run(ctx, tool.Call{CallID: "delta-learning", Args: raw})
	}
}

// registryCapability is the skill registry as the promoter's capability
// store.
type registryCapability struct{ r *skills.Registry }

func (c registryCapability) Family() string { return c.r.Family() }

func (c registryCapability) ProposeProcedure(ctx context.Context, p memory.Procedure) (string, error) {
	return c.r.Propose(ctx, skills.Proposal{Name: p.Name, Body: p.Body, Description: p.Description,
		ChangeSummary: p.ChangeSummary, Key: p.Key})
}

// bindRegistry binds the skill-registry MCP backend when DELTA_SKILLS=mcp
// and a connected server has a skill create, update or propose tool.
func bindRegistry(cfg config.Config, mcpTools []string, reg *tool.Registry, logger *slog.Logger) *skills.Registry {
	if cfg.Skills != config.SkillsMCP {
		return nil
	}
	r, why := skills.BindRegistry(mcpTools, skills.RegistryOptions{Call: mcpCall(reg), Logger: logger})
	if r == nil {
		logger.Info("skill registry not bound", "reason", why)
		return nil
	}
	logger.Info("skill registry bound", "server", r.Family(), "tools", r.Tools())
	return r
}

// bindPromotion binds the promotion adapters among the connected MCP
// tools: the curated write tool by vocab writeVerbSuffix (exactly one match,
// else a boot warning and no curated promotion) and the skill registry for
// procedures. Called before start.
func (m *memoryRail) bindPromotion(cfg config.Config, v bundle.Vocab, mcpTools []string, registry *skills.Registry,
	reg *tool.Registry, broker *event.Broker, logger *slog.Logger) {
	if m == nil {
		return
	}
	m.promotion = promotionBinding{minRuns: cmp.Or(cfg.PromoteMinRuns, memory.DefaultPromoteMinRuns)}
	curated, warning := memory.BindCurated(mcpTools, v.WriteVerbSuffix)
	if curated == "" {
		m.promotion.warning = warning
		if len(mcpTools) > 0 {
			logger.Warn(warning)
		}
	}
	o := memory.PromoterOptions{Store: m.st, CuratedTool: curated, MinRuns: cfg.PromoteMinRuns,
		Shape: v.WriteShape, RunRefKey: v.RunRefKey, TargetKind: v.LearningTargetKind,
		Publish: broker.Publish, Logger: logger}
	call := mcpCall(reg)
	o.Call = func(ctx context.Context, name string, args map[string]any, key string) (string, error) {
		res, err := call(ctx, name, args, key)
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", errors.New(res.Text)
		}
		return res.Text, nil
	}
	if registry != nil {
		o.Capability = registryCapability{registry}
		m.promotion.capability = registry.Family()
	}
	m.promotion.curated = curated
	if curated == "" && registry == nil {
		return
	}
	m.promoter = memory.NewPromoter(o)
	logger.Info("promotion bound", "curated_tool", curated, "skill_registry", m.promotion.capability, "min_runs", cfg.PromoteMinRuns)
}

// promotionStatus is the promotion part of /v1/status: the binding and the
// outbox counts by state, never content.
func (m *memoryRail) promotionStatus(ctx context.Context) map[string]any {
	b := m.promotion
	out := map[string]any{"min_runs": b.minRuns, "curated_tool": b.curated, "skill_registry": b.capability,
		"max_attempts": memory.PromoteAttempts}
	if b.warning != "" {
		out["curated_warning"] = b.warning
	}
	if counts, err := m.st.PromotionCounts(ctx); err == nil {
		out["outbox"] = counts
	}
	return out
}
