package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/research"
	"github.com/deltaharness/delta/internal/workspace"
)

// engineRef is the engine as the research tool sees it. The tool is
// registered before the engine exists (the engine is built over the
// registry), so build binds the engine once it is made.
type engineRef struct{ eng atomic.Pointer[engine.Engine] }

// bind makes e the engine that answers research questions.
func (r *engineRef) bind(e *engine.Engine) { r.eng.Store(e) }

// Explore adapts engine.Explore to research.Explorer.
func (r *engineRef) Explore(ctx context.Context, runID, question string) (research.Finding, error) {
	e := r.eng.Load()
	if e == nil {
		return research.Finding{}, errors.New("research: the engine is not running yet")
	}
	f, err := e.Explore(ctx, runID, question)
	return research.Finding{Text: f.Text, Summary: f.Summary, Note: f.Note, Steps: f.Steps, Usage: f.Usage}, err
}

// addResearch registers the research tool at nesting depth 0 only: a
// spawn_subagent child (depth ≥ 1) does not get it, so no delegation chain
// is deeper than one level. The findings files go through ws.WriteFile
// into .delta/research, which read_file can read and file tools cannot
// write. The returned reference must be bound to the engine.
func addResearch(cfg config.Config, reg *tool.Registry, ts *toolStatus, ws *workspace.Root, logger *slog.Logger) *engineRef {
	ref := &engineRef{}
	if cfg.SubagentDepth >= 1 {
		ts.omitted[research.Name] = fmt.Sprintf("DELTA_SUBAGENT_DEPTH=%d: delegation does not nest", cfg.SubagentDepth)
		return ref
	}
	reg.Add(research.New(research.Options{Explorer: ref, Write: ws.WriteFile, Logger: logger}))
	return ref
}
