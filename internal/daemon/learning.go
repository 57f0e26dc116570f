package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/remember"
	"github.com/deltaharness/delta/internal/tool/skills"
)

// learningStatus is the learning block of /v1/status: whether the agent
// can rewrite its self-file, under which cap, and how many revisions an
// operator can restore from; reflection, memory (with promotion), the
// skills backend and task-start hydration. Names and
// numbers only: no content, subject value or credential. Each surface is
// its own object, so a new one is one more key.
func learningStatus(cfg config.Config, tools *toolStatus, p *parts) map[string]any {
	_, registered := tools.reg.Get(remember.Name)
	self := map[string]any{
		"remember":       registered,
		"max_bytes":      cfg.SelfMaxTokens * bundle.BytesPerToken,
		"revisions_kept": store.SelfRevisionsKept,
	}
	if reason, ok := tools.omitted[remember.Name]; ok {
		self["omitted"] = reason
	}
	reflect, mem := p.memory.status(context.Background())
	return map[string]any{"self_file": self, "skills": skillsStatus(cfg, p), "reflect": reflect, "memory": mem,
		"hydration": p.hydration.status()}
}

// addSkills builds the local skills index and registers its tools when
// DELTA_SKILLS=local. Safe mode leaves skills out: they are workspace text
// that reaches the prompt, which a recovery boot does not load.
func addSkills(ctx context.Context, cfg config.Config, dir string, reg *tool.Registry, ts *toolStatus,
	record func(context.Context, event.Event), logger *slog.Logger) *skills.Index {
	if cfg.Skills != config.SkillsLocal {
		return nil
	}
	if cfg.SafeMode {
		for _, n := range []string{skills.SearchName, skills.GetName} {
			ts.omitted[n] = "DELTA_SAFE_MODE=1"
		}
		return nil
	}
	x := skills.New(skills.Options{Root: dir, Logger: logger, Record: record})
	// Discover once at boot, so warnings about short descriptions and
	// refused folders reach the boot log; every search checks again.
	if found, refused, err := x.Skills(ctx, "", ""); err == nil {
		logger.Info("local skills", "skills", len(found), "refused", len(refused))
	}
	reg.Add(x.Tools()...)
	return x
}

// skillBlocks is the engine's once-per-attempt blocks: the local skills
// directory ranked by the task or the skill registry's capability block,
// then, on a session's first run, the recalled memory and the task-start
// hydration.
func (p *parts) skillBlocks(ctx context.Context, runID, sessionID, task string) []string {
	var out []string
	callable := p.callable(ctx, runID)
	if p.skills != nil {
		if b := p.skills.Block(ctx, runID, sessionID, task, callable); b != "" {
			out = append(out, b)
		}
	}
	if r := p.registry.Load(); r != nil {
		if b := r.Block(ctx, runID, sessionID, task, callable); b != "" {
			// The block is an MCP server's answer: a lesson reflected
			// from this run is untrusted (held until a second distinct
			// run), as after hydration. Unmarked, the block is left out.
			if err := p.store.MarkUntrustedInput(context.WithoutCancel(ctx), runID, "skill_registry", time.Now()); err != nil {
				p.logger.Warn("skill registry block left out", event.KeyRun, runID, "err", err)
			} else {
				out = append(out, b)
			}
		}
	}
	if b := p.memory.block(ctx, runID, sessionID, task); b != "" {
		out = append(out, b)
	}
	if b := p.hydration.block(ctx, runID, sessionID, task); b != "" {
		out = append(out, b)
	}
	return out
}

// callable is the run's tool envelope as a predicate (its placed tier and
// DELTA_ALLOWED_TOOLS), read once on first use, so a skills block names
// only tools the run can call. A run that cannot be read is told of none.
func (p *parts) callable(ctx context.Context, runID string) func(string) bool {
	var names []string
	var once sync.Once
	return func(n string) bool {
		once.Do(func() {
			run, err := p.store.Run(ctx, runID)
			if err != nil || p.toolNames == nil {
				return
			}
			var req struct {
				Profile string `json:"profile"`
			}
			_ = json.Unmarshal(run.Request, &req) // unreadable: the ceiling's placement of ""
			names = p.toolNames(req.Profile)
		})
		return slices.Contains(names, n)
	}
}

// skillsStatus reports the skills backend: for local, how many skills are
// indexed now and which folders were refused.
func skillsStatus(cfg config.Config, p *parts) map[string]any {
	out := map[string]any{"backend": cfg.Skills}
	registry := p.registry.Load()
	switch {
	case cfg.Skills == config.SkillsMCP && registry == nil:
		out["state"] = "unbound: no connected MCP server has a skill create, update or propose tool"
	case cfg.Skills == config.SkillsMCP:
		out["state"] = "on"
		out["server"], out["tools"] = registry.Family(), registry.Tools()
	case cfg.Skills == config.SkillsLocal && p.skills == nil:
		out["state"] = "off: DELTA_SAFE_MODE=1"
	case cfg.Skills == config.SkillsLocal:
		out["state"] = "on"
		out["tools"] = []string{skills.SearchName, skills.GetName}
		found, refused, err := p.skills.Skills(context.Background(), "", "")
		if err != nil {
			out["error"] = err.Error()
		}
		names := []string{}
		for _, s := range found {
			names = append(names, s.Name)
		}
		ref := map[string]string{}
		for _, r := range refused {
			ref[r.Folder] = r.Reason
		}
		out["skills"], out["refused"] = names, ref
	}
	return out
}
