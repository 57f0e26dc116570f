package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

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

// stepRig is a read-only echo tool and a provider that calls it until the
// run has made steps model calls, then answers: the durable-step workload.
func stepRig(steps int) (tool.Tool, model.ProviderFunc) {
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
	return echo, p
}

func benchDurableStep(b *testing.B, capture bool) {
	h := newStepHarness(b, func(o *engine.Options) { o.CaptureCalls = capture })
	measureSteps(b, h)
}

// stepRunSteps is how many model calls a durable-step run makes.
const stepRunSteps = 20

// newStepHarness is a harness over stepRig(stepRunSteps) with a budget the
// runs never reach; mutate may adjust the engine options.
func newStepHarness(b *testing.B, mutate func(*engine.Options)) *harness {
	b.Helper()
	echo, p := stepRig(stepRunSteps)
	return newHarnessWith(b, p, engine.Budget{Steps: 1000, Tokens: 1 << 40, CostUSD: 1e6}, mutate, echo)
}

// measureSteps times b.N durable-step runs on h, each of which must finish
// with all its steps, and reports steps/s and the process CPU per step (a
// busy machine disturbs the CPU figure far less than wall time).
func measureSteps(b *testing.B, h *harness) {
	b.Helper()
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		r, err := h.svc.Submit(ctx, engine.Submission{Request: engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "go"}}, Profile: "trusted"}})
		if err != nil {
			b.Fatal(err)
		}
		r, err = h.svc.Wait(ctx, "", r.ID)
		if err != nil || r.Status != store.StatusDone || r.Steps != stepRunSteps {
			b.Fatalf("run %s steps %d err %v (%s)", r.Status, r.Steps, err, r.Error)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*stepRunSteps)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N*stepRunSteps), "cpu-µs/step")
}

// BenchmarkStepCostAtDepth measures what one step costs the engine early in
// a long run and deep into it: a 1,050-step tool run against a zero-latency
// scripted model at the default dial, with compactions as the history
// outgrows it. The time between consecutive main-loop calls is the step's
// cost (checkpoint, tool, result, prompt assembly, estimate and any
// compaction); it reports the mean and median over steps 25–35 and
// 995–1,005 and their ratio. Run with -benchtime=1x.
func BenchmarkStepCostAtDepth(b *testing.B) {
	const steps = 1050
	for i := 0; i < b.N; i++ {
		var stamps []time.Time
		l := &longRun{turns: steps}
		base := l.provider()
		p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
			if !engine.IsSummaryCall(req.System) {
				stamps = append(stamps, time.Now())
			}
			return base(ctx, req, s)
		})
		h := newHarness(b, p, engine.Budget{Steps: steps + 10, Tokens: 1 << 50, CostUSD: 1e9}, fetchTool(1000))
		r, _ := h.run(b, "fetch every page")
		if r.Status != store.StatusDone {
			b.Fatalf("run %s: %s", r.Status, r.Error)
		}
		window := func(at int) (mean, median time.Duration) {
			var ds []time.Duration
			for k := at - 25; k <= at+25; k++ {
				ds = append(ds, stamps[k+1].Sub(stamps[k]))
			}
			var sum time.Duration
			for _, d := range ds {
				sum += d
			}
			slices.Sort(ds)
			return sum / time.Duration(len(ds)), ds[len(ds)/2]
		}
		m30, med30 := window(30)
		if len(stamps) < 1022 {
			b.Fatalf("%d main calls", len(stamps))
		}
		m1000, med1000 := window(1000)
		b.ReportMetric(float64(med30.Microseconds()), "µs/step@30(median)")
		b.ReportMetric(float64(med1000.Microseconds()), "µs/step@1000(median)")
		b.ReportMetric(float64(m30.Microseconds()), "µs/step@30(mean)")
		b.ReportMetric(float64(m1000.Microseconds()), "µs/step@1000(mean)")
		b.ReportMetric(float64(med1000)/float64(med30), "ratio(median)")
		b.ReportMetric(float64(len(l.summaries)), "summaries")
	}
}
