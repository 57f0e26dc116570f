package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// callModel makes one main-loop model call: up to Attempts wire attempts per
// model for retriable failures, then the next model. No retry once answer
// text has started streaming (the caller would see it twice).
func (x *execution) callModel(ctx context.Context, req model.Request) (model.Response, error) {
	e := x.e
	var lastErr error
	wall := time.Now()
	retries := 0
	for mi, name := range e.o.Models {
		req.Model = name
		for attempt := 1; attempt <= e.o.Attempts; attempt++ {
			streamed := false
			start := time.Now()
			resp, err := e.o.Provider.Complete(ctx, req, model.Stream{
				OnText: func(d string) {
					streamed = true
					e.o.Broker.Publish(event.New(x.run.ID, x.run.SessionID, event.TextDelta, map[string]string{"delta": d}))
				},
				OnReasoning: func(d string) {
					e.o.Broker.Publish(event.New(x.run.ID, x.run.SessionID, event.ReasonDelta, map[string]string{"delta": d}))
				},
			})
			if err == nil {
				if resp.Model == "" {
					resp.Model = name
				}
				if !resp.Usage.CostReported {
					if usd, ok := model.Cost(e.o.Prices, resp.Model, resp.Usage); ok {
						resp.Usage.CostUSD = usd
					}
				}
				x.callStats = callStats{latency: time.Since(start), wall: time.Since(wall), retries: retries, fallback: mi > 0}
				return resp, nil
			}
			if ctx.Err() != nil {
				return model.Response{}, errCancelled
			}
			lastErr = err
			var me *model.Error
			status := 0
			if errors.As(err, &me) {
				status = me.Status
			}
			if streamed {
				return model.Response{}, fmt.Errorf("model %s failed after streaming began: %w", name, err)
			}
			if status == 401 || status == 403 {
				return model.Response{}, fmt.Errorf("model %s: provider refused the credential: %w", name, err)
			}
			retry := model.IsRetriable(err) && attempt < e.o.Attempts
			next := ""
			if retry {
				next = name
			} else if mi+1 < len(e.o.Models) {
				next = e.o.Models[mi+1]
			}
			if next == "" {
				break
			}
			retries++
			ev := event.New(x.run.ID, x.run.SessionID, event.ModelRetry, map[string]any{
				"model": name, "next_model": next, "attempt": attempt, "status": status, "error": truncate(err.Error(), 300),
			})
			if err := e.o.Store.AddEvents(context.WithoutCancel(ctx), []event.Event{ev}); err == nil {
				x.publish(ev)
			}
			if !retry {
				break
			}
			wait := e.o.RetryBackoff << (attempt - 1)
			select {
			case <-ctx.Done():
				return model.Response{}, errCancelled
			case <-time.After(wait):
			}
		}
	}
	return model.Response{}, fmt.Errorf("model call failed: %w", lastErr)
}

type callStats struct {
	latency, wall time.Duration
	retries       int
	fallback      bool
}

// checkpoint commits the assistant message, its tool intents, usage and the
// model.call and tool.call events in one transaction.
func (x *execution) checkpoint(ctx context.Context, resp model.Response) error {
	e := x.e
	// A model can emit arguments that are not JSON. Keep what it sent, as a
	// JSON string, so the checkpoint stays valid JSON and the tool answers
	// with an error the model can repair.
	for i, c := range resp.ToolCalls {
		if !json.Valid(c.Arguments) {
			resp.ToolCalls[i].Arguments, _ = json.Marshal(string(c.Arguments))
		}
	}
	st := store.Step{
		RunID:     x.run.ID,
		SessionID: x.run.SessionID,
		Message:   model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
		Usage:     resp.Usage,
		Model:     resp.Model,
	}
	cs := x.callStats
	st.Events = append(st.Events, event.New(x.run.ID, x.run.SessionID, event.ModelCall, map[string]any{
		"model": resp.Model, "step": x.run.Steps + 1, "finish_reason": resp.FinishReason,
		"usage":      map[string]int64{"input_tokens": resp.Usage.InputTokens, "output_tokens": resp.Usage.OutputTokens, "cache_read_tokens": resp.Usage.CacheReadTokens},
		"cost_usd":   resp.Usage.CostUSD,
		"latency_ms": cs.latency.Milliseconds(), "wall_ms": cs.wall.Milliseconds(), "retries": cs.retries, "fallback": cs.fallback,
		"tool_calls": len(resp.ToolCalls),
	}))
	for _, c := range resp.ToolCalls {
		readOnly := false
		if t, ok := e.o.Tools.Get(c.Name); ok {
			readOnly = t.ReadOnly()
		}
		args := c.Arguments
		st.Intents = append(st.Intents, store.Intent{CallID: c.ID, Name: c.Name, Args: args, ReadOnly: readOnly})
		st.Events = append(st.Events, event.New(x.run.ID, x.run.SessionID, event.ToolCall, map[string]any{
			"call_id": c.ID, "name": c.Name, "arguments": json.RawMessage(args),
		}))
	}
	evs, err := e.o.Store.CommitStep(ctx, st)
	if errors.Is(err, store.ErrAlreadyFinal) {
		return errCancelled // cancelled (finished) elsewhere while the model ran
	}
	if err != nil {
		return err
	}
	x.run.Steps++
	x.run.Usage = x.run.Usage.Add(resp.Usage)
	x.run.Model = resp.Model
	x.remember(st.Message)
	x.publish(evs...)
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// remember appends a committed message to the in-memory conversation.
func (x *execution) remember(m model.Message) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.history != nil {
		x.history = append(x.history, m)
	}
}
