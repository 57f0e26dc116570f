package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/memory"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/skills"
)

// promotionBinding is what the promotion rail is bound to now, for
// /v1/status: names only.
type promotionBinding struct {
	minRuns    int
	curated    string // the curated write tool ("" = unbound)
	capability string // the skill-registry family ("" = unbound)
	warning    string // why the curated tool is unbound
	bound      bool   // bindPromotion has run
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

// learningBinder collects the connected MCP tools' names, in connection
// order, and re-binds the learning rail whenever new ones join: the skill
// registry and the promotion adapters are decided over every tool connected
// so far, so a server that connects after boot can bind them (or make the
// curated suffix ambiguous, which unbinds it with a warning). Tools added
// before open are only collected: open binds them all.
type learningBinder struct {
	mu    sync.Mutex
	names []string
	seen  map[string]bool
	bind  func(names []string)
}

func (l *learningBinder) collect(ts []tool.Tool) bool {
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	added := false
	for _, t := range ts {
		if n := t.Spec().Name; !l.seen[n] {
			l.seen[n] = true
			l.names = append(l.names, n)
			added = true
		}
	}
	return added
}

// open binds over ts and every tool added so far; later adds re-bind.
func (l *learningBinder) open(bind func([]string), ts []tool.Tool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bind = bind
	l.collect(ts)
	bind(slices.Clone(l.names))
}

// add re-binds when ts holds a tool not seen before (after open).
func (l *learningBinder) add(ts []tool.Tool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.collect(ts) && l.bind != nil {
		l.bind(slices.Clone(l.names))
	}
}

// bindLearning decides the skill registry and the promotion adapters over
// the connected MCP tools' names.
func (p *parts) bindLearning(cfg config.Config, v bundle.Vocab, names []string, reg *tool.Registry, logger *slog.Logger) {
	r := bindRegistry(cfg, names, reg, p.registry.Load(), logger)
	p.registry.Store(r)
	p.memory.bindPromotion(v, names, r, logger)
}

// bindRegistry binds the skill-registry MCP backend when DELTA_SKILLS=mcp
// and a connected server has a skill create, update or propose tool. It
// logs only when the binding differs from was.
func bindRegistry(cfg config.Config, mcpTools []string, reg *tool.Registry, was *skills.Registry, logger *slog.Logger) *skills.Registry {
	if cfg.Skills != config.SkillsMCP {
		return nil
	}
	r, why := skills.BindRegistry(mcpTools, skills.RegistryOptions{Call: mcpCall(reg), Logger: logger})
	if sameRegistry(r, was) {
		return cmp.Or(was, r)
	}
	if r == nil {
		logger.Info("skill registry not bound", "reason", why)
		return nil
	}
	logger.Info("skill registry bound", "server", r.Family(), "tools", r.Tools())
	return r
}

func sameRegistry(a, b *skills.Registry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Family() == b.Family() && maps.Equal(a.Tools(), b.Tools())
}

// newPromoter makes the promoter, bound to nothing until bindPromotion;
// it drains the outbox only for adapters bound at the time. Called before
// start.
func (m *memoryRail) newPromoter(cfg config.Config, v bundle.Vocab, reg *tool.Registry, broker *event.Broker, logger *slog.Logger) {
	if m == nil {
		return
	}
	m.promotion = promotionBinding{minRuns: cmp.Or(cfg.PromoteMinRuns, memory.DefaultPromoteMinRuns)}
	o := memory.PromoterOptions{Store: m.st, MinRuns: cfg.PromoteMinRuns,
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
	m.promoter = memory.NewPromoter(o)
}

// bindPromotion binds the promotion adapters among the connected MCP
// tools: the curated write tool by vocab writeVerbSuffix (exactly one match,
// else a warning and no curated promotion) and the skill registry for
// procedures. It is called at boot and again whenever MCP tools join; a
// binding that did not change is left alone (and not logged again).
func (m *memoryRail) bindPromotion(v bundle.Vocab, mcpTools []string, registry *skills.Registry, logger *slog.Logger) {
	if m == nil || m.promoter == nil {
		return
	}
	curated, warning := memory.BindCurated(mcpTools, v.WriteVerbSuffix)
	family := ""
	var capability memory.Capability
	if registry != nil {
		capability, family = registryCapability{registry}, registry.Family()
	}
	m.mu.Lock()
	was := m.promotion
	m.promotion.curated, m.promotion.capability, m.promotion.warning, m.promotion.bound = curated, family, warning, true
	m.mu.Unlock()
	if was.bound && was.curated == curated && was.capability == family && was.warning == warning {
		return
	}
	if curated == "" && len(mcpTools) > 0 && warning != was.warning {
		logger.Warn(warning)
	}
	m.promoter.Bind(curated, capability)
	if curated != "" || capability != nil {
		logger.Info("promotion bound", "curated_tool", curated, "skill_registry", family, "min_runs", m.promotion.minRuns)
	}
}

// promotionStatus is the promotion part of /v1/status: the binding and the
// outbox counts by state, never content.
func (m *memoryRail) promotionStatus(ctx context.Context) map[string]any {
	m.mu.Lock()
	b := m.promotion
	m.mu.Unlock()
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
