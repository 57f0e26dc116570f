package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/deltaharness/delta/internal/clip"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/cascade"
	"github.com/deltaharness/delta/internal/store"
)

// callModel makes one main-loop model call through the provider, which owns
// retries, model fallback and provider failover (package model/cascade);
// every retry or switch it reports becomes a durable model.retry event.
func (x *execution) callModel(ctx context.Context, req model.Request) (model.Response, error) {
	e := x.e
	if len(e.o.Models) > 0 {
		req.Model = e.o.Models[0]
	}
	wall := time.Now()
	attemptStart := wall
	retries := 0
	stream := model.Stream{
		// A reply's stream follows the previous step's commit (ahead.go):
		// it is published only once that commit is durable, and never
		// when it failed.
		OnText: func(d string) {
			if x.committed() == nil {
				e.o.Broker.Publish(x.event(event.TextDelta, map[string]string{event.KeyDelta: d}))
			}
		},
		OnReasoning: func(d string) {
			if x.committed() == nil {
				e.o.Broker.Publish(x.event(event.ReasonDelta, map[string]string{event.KeyDelta: d}))
			}
		},
		OnRetry: func(r model.Retry) {
			retries++
			attemptStart = time.Now()
			r.Error = clip.Bytes(r.Error, 300)
			// After the turn's held turn.started, in one transaction.
			_ = x.writeEvents(context.WithoutCancel(ctx), x.event(event.ModelRetry, r))
		},
	}
	var resp model.Response
	var err error
	provider, fallback := "", false
	if sp, ok := e.o.Provider.(servedProvider); ok {
		var served cascade.Served
		resp, served, err = sp.CompleteServed(ctx, req, stream)
		provider, fallback = served.Provider, served.Fallback
	} else {
		resp, err = e.o.Provider.Complete(ctx, req, stream)
		fallback = resp.Model != "" && resp.Model != req.Model
	}
	crashpoint.Hit(crashpoint.ModelCall)
	if ctx.Err() != nil {
		return model.Response{}, errCancelled
	}
	if err != nil {
		if errors.Is(err, model.ErrContextOverflow) {
			return model.Response{}, fmt.Errorf("model call failed: %w", err)
		}
		return model.Response{}, failure{kind: failModel, err: fmt.Errorf("model call failed: %w", err)}
	}
	e.price(&resp, req.Model, x.logger)
	x.callStats = callStats{latency: time.Since(attemptStart), wall: time.Since(wall), retries: retries, fallback: fallback, provider: provider}
	return resp, nil
}

type callStats struct {
	latency, wall time.Duration
	retries       int
	fallback      bool
	provider      string
}

// servedProvider is a provider that also says which endpoint served a call
// (the cascade does).
type servedProvider interface {
	CompleteServed(ctx context.Context, req model.Request, s model.Stream) (model.Response, cascade.Served, error)
}

// checkpoint commits the assistant message, its tool intents, usage and the
// model.call and tool.call events in one transaction.
// With capture on, req (as sent, history of its messages the stored
// conversation) becomes the step's call row.
func (x *execution) checkpoint(ctx context.Context, resp model.Response, req model.Request, history int) error {
	st, heldResults, heldEvents, err := x.step(ctx, resp, req, history)
	if err != nil {
		return err
	}
	evs, err := x.e.o.Store.CommitStep(ctx, st)
	if errors.Is(err, store.ErrAlreadyFinal) {
		// Cancelled (finished) elsewhere while the model ran: the results
		// are still the calls' answers, but the turn never happened.
		x.restoreHeld(heldResults, nil)
		return errCancelled
	}
	if err != nil {
		x.restoreHeld(heldResults, heldEvents)
		return err
	}
	x.stepped(st)
	x.publish(evs...)
	return nil
}

// stepped applies a step to the execution's view of the run: its counters
// and the conversation the next request carries.
func (x *execution) stepped(st store.Step) {
	x.run.Steps++
	x.run.Usage = x.run.Usage.Add(st.Usage)
	x.run.Model = st.Model
	x.remember(st.Message)
}

// step builds the checkpoint of resp: the assistant message, its intents,
// usage and events, led by what was held for it (which it takes).
func (x *execution) step(ctx context.Context, resp model.Response, req model.Request, history int) (st store.Step, heldResults []store.ToolResult, heldEvents []event.Event, err error) {
	e := x.e
	// A model can emit arguments that are not JSON. Keep what it sent, as a
	// JSON string, so the checkpoint stays valid JSON and the tool answers
	// with an error the model can repair.
	if x.callIDs == nil {
		// The window may no longer hold every call of this run (compaction
		// leaves older rows out of it); the journal does. The attempt read
		// it once already, to recover: no call has been journalled since.
		journalled := x.journalled
		if journalled == nil {
			journal, err := e.o.Store.Journal(ctx, x.run.ID)
			if err != nil {
				return st, nil, nil, fmt.Errorf("read the journal of run %s: %w", x.run.ID, err)
			}
			journalled = make(map[string]bool, len(journal))
			for id := range journal {
				journalled[id] = true
			}
		}
		x.journalled = nil
		x.mu.Lock()
		x.callIDs = usedCallIDs(x.history)
		x.mu.Unlock()
		for id := range journalled {
			x.callIDs[id] = true
		}
	}
	uniqueCallIDs(resp.ToolCalls, x.callIDs)
	for i, c := range resp.ToolCalls {
		if !json.Valid(c.Arguments) {
			resp.ToolCalls[i].Arguments, _ = json.Marshal(string(c.Arguments))
		}
	}
	st = store.Step{
		RunID:     x.run.ID,
		SessionID: x.run.SessionID,
		Message:   model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Extra: resp.Extra},
		Usage:     resp.Usage,
		Model:     resp.Model,
	}
	cs := x.callStats
	if e.o.CaptureCalls {
		st.Call = x.capture(req, history, resp)
	}
	// cache_shortfall_tokens: the previous request's gross input minus this
	// call's cache reads — how much a healthy cache should have covered.
	hitPct := 0.0
	if resp.Usage.InputTokens > 0 {
		hitPct = float64(resp.Usage.CacheReadTokens) * 100 / float64(resp.Usage.InputTokens)
	}
	shortfall := max(x.prevInput-resp.Usage.CacheReadTokens, 0)
	x.prevInput = resp.Usage.InputTokens
	x.lastGross = resp.Usage.InputTokens
	finishReasons := []string{}
	if resp.FinishReason != "" {
		finishReasons = append(finishReasons, resp.FinishReason)
	}
	st.Events = append(st.Events, x.event(event.ModelCall, map[string]any{
		event.KeyModel: resp.Model, event.KeyProvider: cs.provider, event.KeyStep: x.run.Steps + 1,
		event.KeyFinishReason: resp.FinishReason, event.KeyFinishReasons: finishReasons,
		event.KeyEffort: x.req.ReasoningEffort, event.KeySpeed: resp.Speed,
		event.KeyCacheHitPct: hitPct, event.KeyCacheShortfallTokens: shortfall,
		event.KeyUsage:     map[string]int64{"input_tokens": resp.Usage.InputTokens, "output_tokens": resp.Usage.OutputTokens, "cache_read_tokens": resp.Usage.CacheReadTokens},
		event.KeyCostUSD:   resp.Usage.CostUSD,
		event.KeyLatencyMS: cs.latency.Milliseconds(), event.KeyWallMS: cs.wall.Milliseconds(), event.KeyRetries: cs.retries, event.KeyFallback: cs.fallback,
		event.KeyToolCalls: len(resp.ToolCalls),
	}))
	for _, c := range resp.ToolCalls {
		readOnly := false
		if t, ok := e.o.Tools.Get(c.Name); ok {
			readOnly = t.ReadOnly()
		}
		args := c.Arguments
		st.Intents = append(st.Intents, store.Intent{CallID: c.ID, Name: c.Name, Args: args, ReadOnly: readOnly})
		st.Events = append(st.Events, x.event(event.ToolCall, map[string]any{
			event.KeyCallID: c.ID, event.KeyName: c.Name, event.KeyArguments: json.RawMessage(args),
		}))
	}
	total := x.run.Usage.Add(resp.Usage)
	st.Events = append(st.Events, x.event(event.Checkpoint, map[string]any{
		event.KeyTurn: x.turn, event.KeySteps: x.run.Steps + 1, event.KeyIntents: len(st.Intents),
		event.KeyUsage: map[string]any{"input_tokens": total.InputTokens, "output_tokens": total.OutputTokens,
			"cache_read_tokens": total.CacheReadTokens, event.KeyCostUSD: total.CostUSD},
	}))
	// The results and the turn.started held back open the transaction.
	heldResults, heldEvents = x.takeHeld()
	st.Results, st.Events = heldResults, append(heldEvents, st.Events...)
	return st, heldResults, heldEvents, nil
}

// remember appends a committed message to the in-memory conversation.
func (x *execution) remember(m model.Message) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.history != nil {
		x.history = append(x.history, m)
	}
}

// price names the model that served resp (req's when the provider did not
// say) and fills its cost from the price table unless the provider reported
// one. An unpriced model is warned about once per process: a dollar cap
// cannot protect it.
func (e *Engine) price(resp *model.Response, reqModel string, logger *slog.Logger) {
	if resp.Model == "" {
		resp.Model = reqModel
	}
	if resp.Usage.CostReported {
		return
	}
	if usd, ok := model.Cost(e.o.Prices, resp.Model, resp.Usage); ok {
		resp.Usage.CostUSD = usd
	} else if _, warned := e.unpriced.LoadOrStore(resp.Model, true); !warned {
		logger.Warn("model has no price: recording $0; set DELTA_MODEL_PRICES to enforce the cost budget", "model", resp.Model)
	}
}
