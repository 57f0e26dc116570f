package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// BenchmarkDurableStep measures full durable steps: a zero-latency scripted
// model call, the step checkpoint (assistant message, intent, usage, events),
// a read-only tool call and its result checkpoint. Each run is 20 steps.
// capture=on also stores each call's normalized request and response.
func BenchmarkDurableStep(b *testing.B) {
	for _, capture := range []bool{false, true} {
		name := "capture=off"
		if capture {
			name = "capture=on"
		}
		b.Run(name, func(b *testing.B) { benchDurableStep(b, capture) })
	}
}

func benchDurableStep(b *testing.B, capture bool) {
	const steps = 20
	echo := tool.Func("echo", "echo", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text(a.Text), nil
	})
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == model.RoleAssistant {
				n++
			}
		}
		if n >= steps-1 {
			return model.Response{Model: req.Model, Text: "done", Usage: model.Usage{InputTokens: 100, OutputTokens: 10}}, nil
		}
		return model.Response{Model: req.Model, Usage: model.Usage{InputTokens: 100, OutputTokens: 10},
			ToolCalls: []model.ToolCall{{ID: fmt.Sprint("c", n), Name: "echo", Arguments: json.RawMessage(`{"text":"hello"}`)}}}, nil
	})
	h := newHarnessWith(b, p, engine.Budget{Steps: 1000, Tokens: 1 << 40, CostUSD: 1e6}, func(o *engine.Options) { o.CaptureCalls = capture }, echo)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := h.svc.Submit(ctx, engine.Submission{Request: engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "go"}}, Profile: "trusted"}})
		if err != nil {
			b.Fatal(err)
		}
		r, err = h.svc.Wait(ctx, "", r.ID)
		if err != nil || r.Status != store.StatusDone || r.Steps != steps {
			b.Fatalf("run %s steps %d err %v (%s)", r.Status, r.Steps, err, r.Error)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*steps)/b.Elapsed().Seconds(), "steps/s")
}
