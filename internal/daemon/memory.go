package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/memory"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// memoryRail is governed local memory as the engine sees it: recall at a
// session's first run, and reflection owed by successful runs, drained by
// the reflector in the background. Safe mode has none: recalled lessons are
// model-written text that reaches the prompt.
type memoryRail struct {
	st         *store.Store
	reflector  *memory.Reflector // nil without a utility lane
	promoter   *memory.Promoter  // nil until newPromoter
	mu         sync.Mutex        // guards promotion
	promotion  promotionBinding
	namespace  string
	agentID    string
	reflectAll bool
	record     func(context.Context, event.Event)
	logger     *slog.Logger
	reflectOpt memory.ReflectorOptions
}

func newMemoryRail(cfg config.Config, namespace string, st *store.Store,
	utility func(context.Context, model.Request) (model.Response, error),
	redact func(string) string, broker *event.Broker, logger *slog.Logger) *memoryRail {
	if cfg.SafeMode {
		return nil
	}
	if cfg.MemoryNamespace != "" {
		namespace = cfg.MemoryNamespace
	}
	m := &memoryRail{st: st, namespace: namespace, agentID: cfg.AgentID, reflectAll: cfg.Reflect,
		record: recordEvent(st, broker, logger), logger: logger}
	if utility != nil {
		m.reflectOpt = memory.ReflectorOptions{Store: st, Utility: utility, Namespace: namespace,
			AgentID: cfg.AgentID, TrustReview: cfg.TrustReviewMetadata, Publish: broker.Publish, Logger: logger,
			Redact: func(s string) string { return engine.RedactCredentials(redact(s)) }}
		m.reflector = memory.NewReflector(m.reflectOpt)
	}
	return m
}

// start runs the reflector and the promoter until the returned stop is
// called; stop waits for both. An owed reflection or a promotion cut short
// stays owed for the next start. It is called once the promotion adapters
// are bound, so a reflection drained at start stages its promotion.
func (m *memoryRail) start(ctx context.Context) func(context.Context) error {
	if m == nil || m.reflector == nil {
		return func(context.Context) error { return nil }
	}
	if m.promoter != nil {
		o := m.reflectOpt
		o.Stage, o.Reflected = m.promoter.Stage, m.promoter.Notify
		m.reflector = memory.NewReflector(o)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { m.reflector.Run(ctx) })
	if m.promoter != nil {
		wg.Go(func() { m.promoter.Run(ctx) })
	}
	return func(context.Context) error { cancel(); wg.Wait(); return nil }
}

type memoryMeta struct {
	TaskType string `json:"task_type"`
	Reflect  bool   `json:"reflect"`
}

func metaOf(run store.Run) memoryMeta {
	var req struct {
		Metadata memoryMeta `json:"metadata"`
	}
	_ = json.Unmarshal(run.Request, &req) // no metadata: neither field set
	req.Metadata.TaskType = strings.TrimSpace(req.Metadata.TaskType)
	return req.Metadata
}

// reflect is the engine's question: does this successful run owe a
// reflection? DELTA_REFLECT=1 for every run, or metadata.reflect:true for
// one; a per-run false cannot turn the daemon setting off.
func (m *memoryRail) reflect(run store.Run) bool {
	if m == nil || m.reflector == nil {
		return false
	}
	return m.reflectAll || metaOf(run).Reflect
}

func (m *memoryRail) reflected(string) {
	if m != nil && m.reflector != nil {
		m.reflector.Notify()
	}
}

// block is the recall block for a session's first run ("" for any later
// run, or when nothing is visible to its identity).
func (m *memoryRail) block(ctx context.Context, runID, sessionID, task string) string {
	if m == nil {
		return ""
	}
	run, ok := firstRun(ctx, m.st, runID)
	if !ok {
		return ""
	}
	view := store.MemoryView{Namespace: m.namespace, AgentID: m.agentID, UserID: run.Owner, TaskType: metaOf(run).TaskType}
	rows, candidates, err := memory.Recall(ctx, m.st, view, task, time.Now())
	if err != nil {
		m.logger.Warn("memory recall", event.KeyRun, runID, "err", err)
		return ""
	}
	if len(rows) == 0 {
		return ""
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	// Recording the use is a write: it stays off the path to the first
	// model call. A failure costs only the row's prior-use credit.
	go func() {
		if err := memory.Use(context.WithoutCancel(ctx), m.st, rows, time.Now()); err != nil {
			m.logger.Debug("memory use", event.KeyRun, runID, "err", err)
		}
	}()
	m.record(ctx, event.New(runID, sessionID, event.MemoryRecalled, map[string]any{event.KeyMemoryIDs: ids, "candidates": candidates}))
	return memory.Block(rows)
}

// status is the memory part of /v1/status' learning block: counts and
// settings, never content.
func (m *memoryRail) status(ctx context.Context) (reflect, mem map[string]any) {
	if m == nil {
		off := map[string]any{"enabled": false, "reason": "DELTA_SAFE_MODE=1"}
		return off, off
	}
	reflect = map[string]any{"enabled": m.reflector != nil, "all_runs": m.reflectAll, "durable": true}
	mem = map[string]any{"enabled": true, "namespace": m.namespace, "agent_id": m.agentID,
		"min_confidence": memory.MinConfidence, "max_chars": memory.MaxContent, "cap_per_identity": store.MemoryCap,
		"horizon_days": int(memory.Horizon.Hours() / 24)}
	if rows, held, owed, err := m.st.MemoryCounts(ctx); err == nil {
		mem["rows"], mem["held"], reflect["owed"] = rows, held, owed
	}
	mem["promotion"] = m.promotionStatus(ctx)
	return reflect, mem
}
