package daemon

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/hydrate"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// hydration is task-start hydration as the engine sees it: before the
// first turn of a new session, the configured product reads and search,
// their answers as one untrusted block, and a durable hydration event that
// also marks the run as having read untrusted input (so a lesson reflected
// from it is held until a second run). nil when nothing is configured or in
// safe mode, which connects no MCP server.
type hydration struct {
	h       *hydrate.Hydrator
	st      *store.Store
	publish func(event.Event)
	logger  *slog.Logger
	reads   []string
	search  string
	keys    []string
}

func newHydration(cfg config.Config, subjectKeys []string, reg *tool.Registry, st *store.Store,
	redact func(string) string, publish func(event.Event), logger *slog.Logger) *hydration {
	if cfg.SafeMode || (len(cfg.HydrateTools) == 0 && cfg.HydrateSearchTool == "") {
		return nil
	}
	h := hydrate.New(hydrate.Options{Tools: reg, Reads: cfg.HydrateTools, Search: cfg.HydrateSearchTool,
		SubjectKeys: subjectKeys, Redact: redact, Logger: logger})
	return &hydration{h: h, st: st, publish: publish, logger: logger, reads: cfg.HydrateTools,
		search: cfg.HydrateSearchTool, keys: subjectKeys}
}

// check warns at boot about configured tools that are not registered (a
// server that is down, or a typo; a tool a server reveals later still
// counts when it arrives) or that the registry does not classify as
// read-only (for an MCP tool, by the words of its name): hydration calls
// them with no journal and no replay rule.
func (hy *hydration) check(reg *tool.Registry) {
	if hy == nil {
		return
	}
	if len(hy.reads) > 0 && len(hy.keys) == 0 {
		hy.logger.Warn("DELTA_HYDRATE_TOOLS is set but vocab subjectKeys is empty: no subject read will ever run", "tools", hy.reads)
	}
	for _, name := range hy.names() {
		t, ok := reg.Get(name)
		switch {
		case !ok:
			hy.logger.Warn("hydration tool not registered now; it is skipped until a connected server offers it", "tool", name)
		case !t.ReadOnly():
			hy.logger.Warn("hydration tool is not classified read-only (its name has no get, list, search or read word); hydration calls it with no journal, so configure read-only tools only", "tool", name)
		}
	}
}

func (hy *hydration) names() []string {
	out := append([]string{}, hy.reads...)
	if hy.search != "" {
		out = append(out, hy.search)
	}
	return out
}

func (hy *hydration) close(ctx context.Context) error {
	if hy == nil {
		return nil
	}
	return hy.h.Close(ctx)
}

// block hydrates a session's first run ("" for any later run). A resumed
// attempt of that run hydrates again: the block is never stored, and the
// model saw it on every turn of the attempt before.
func (hy *hydration) block(ctx context.Context, runID, sessionID, task string) string {
	if hy == nil {
		return ""
	}
	run, ok := firstRun(ctx, hy.st, runID)
	if !ok {
		return ""
	}
	res := hy.h.Hydrate(ctx, hydrate.Request{RunID: runID, SessionID: sessionID, Task: task,
		Metadata: metadataOf(run), Token: mcp.RunToken(ctx)})
	if res.Data == nil {
		return res.Block
	}
	ev, err := hy.st.RecordHydration(context.WithoutCancel(ctx), event.New(runID, sessionID, event.Hydration, res.Data), res.Block != "")
	if err != nil {
		hy.logger.Warn("hydration event not stored", event.KeyRun, runID, "err", err)
	} else if hy.publish != nil {
		hy.publish(ev)
	}
	return res.Block
}

// status is the hydration part of /v1/status' learning block: the tool
// names and limits, never a subject value or a credential.
func (hy *hydration) status() map[string]any {
	if hy == nil {
		return map[string]any{"enabled": false, "tools": []string{}, "search_tool": ""}
	}
	return map[string]any{"enabled": true, "tools": nonNil(hy.reads), "search_tool": hy.search, "subject_keys": nonNil(hy.keys),
		"search_needs_auth_token": true, "wait_s": int(hydrate.Wait.Seconds()), "max_chars": hydrate.MaxChars}
}

// metadataOf is the run's metadata object as stored (nil when none).
func metadataOf(run store.Run) json.RawMessage {
	var req struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	_ = json.Unmarshal(run.Request, &req) // a request that does not parse has no metadata
	return req.Metadata
}

// firstRun is the run runID when it is the first of its session; false for
// any later run, or when either read fails (the block it would start is
// then left out, not the run).
func firstRun(ctx context.Context, st *store.Store, runID string) (store.Run, bool) {
	run, first, err := st.FirstRun(ctx, runID)
	return run, err == nil && first
}
