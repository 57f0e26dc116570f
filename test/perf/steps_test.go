package perf

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/cascade"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/scripted"
	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

// lengths are the run lengths compared, in model calls (steps).
var lengths = []int{30, 300, 1000}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// echoTool is the read-only tool both sides answer.
func echoTool() tool.Tool {
	return tool.Func("echo", "Echo the text back.", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text(a.Text), nil
	})
}

// script calls echo until the request holds turns-1 assistant messages,
// then answers: a run of exactly turns model calls on either side.
func script(turns int) scripted.Script {
	return func(req scripted.ChatRequest) scripted.Reply {
		n := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		if n >= turns-1 {
			return scripted.TextReply("done")
		}
		return scripted.ToolReply(scripted.ToolCall{ID: "call_" + strconv.Itoa(n), Name: "echo", Arguments: `{"text":"hello"}`})
	}
}

// rig is one scripted endpoint and both contenders wired to it.
type rig struct {
	broker *event.Broker
	client *openai.Client
	echo   tool.Tool
	system []string
	specs  []model.ToolSpec
	svc    *engine.Service
	st     *store.Store
	turns  int
}

func newRig(b testing.TB, turns int) *rig {
	b.Helper()
	fake, err := scripted.Start(script(turns))
	if err != nil {
		b.Fatal(err)
	}
	fake.ForgetRequests()
	b.Cleanup(func() { fake.Close() })
	return newRigAt(b, turns, 4, fake.URL())
}

// newRigAt is newRig against the endpoint at url, with the engine's run
// concurrency.
func newRigAt(b testing.TB, turns, concurrency int, url string) *rig {
	b.Helper()
	dir := b.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "delta.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	bun, err := bundle.Load(bundle.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	echo := echoTool()
	reg := tool.NewRegistry()
	reg.Add(echo)
	client := openai.New(openai.Options{BaseURL: url, APIKey: "unused"})
	casc, err := cascade.New(cascade.Options{Endpoints: []cascade.Endpoint{{Label: "primary", Kind: cascade.KindChat, Provider: client, Models: []string{"primary"}}}})
	if err != nil {
		b.Fatal(err)
	}
	budget := engine.Budget{Steps: turns + 10, Tokens: 1 << 50, CostUSD: 1e9}
	broker := event.NewBroker()
	eng := engine.New(engine.Options{
		Store: st, Broker: broker, Provider: casc, Models: []string{"primary"},
		Prompt: bun, Tools: reg, WorkspaceDir: dir, Spill: ws, ResultMax: 20000,
		ToolNames: func(string) []string { return reg.Names() },
		Budget:    func(string) engine.Budget { return budget },
	})
	q := queue.New(st, eng.ExecuteHead, concurrency, nil)
	if err := q.Open(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close(context.Background()) })
	specs := []model.ToolSpec{echo.Spec()}
	return &rig{broker: broker, client: client, echo: echo, system: bun.System(bun.ReadSelf(), specs), specs: specs,
		svc: engine.NewService(st, q, eng), st: st, turns: turns}
}

// floor runs the task as a plain loop: the conversation grows in memory,
// each turn goes to the endpoint whole, the tool is answered inline.
func (r *rig) floor(ctx context.Context) (int, error) {
	msgs := []model.Message{{Role: model.RoleUser, Content: "go"}}
	for steps := 1; ; steps++ {
		resp, err := r.client.Complete(ctx, model.Request{Model: "primary", System: r.system, Messages: msgs, Tools: r.specs}, model.Stream{})
		if err != nil {
			return steps, err
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			return steps, nil
		}
		for _, tc := range resp.ToolCalls {
			res, err := r.echo.Run(ctx, tool.Call{CallID: tc.ID, Args: tc.Arguments})
			if err != nil {
				return steps, err
			}
			msgs = append(msgs, model.Message{Role: model.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: res.Text})
		}
	}
}

// delta runs the same task through the engine, durably.
func (r *rig) delta(ctx context.Context) (int, error) {
	run, err := r.svc.Submit(ctx, engine.Submission{Request: engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "go"}}, Profile: "trusted"}})
	if err != nil {
		return 0, err
	}
	run, err = r.svc.Wait(ctx, "", run.ID)
	if err != nil {
		return 0, err
	}
	if run.Status != store.StatusDone {
		return run.Steps, fmt.Errorf("run %s: %s", run.Status, run.Error)
	}
	return run.Steps, nil
}

// cpuTime is the process's user and system CPU time so far: the
// endpoint's share is in it too, the same on both sides.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timed runs one contender once and returns its steps per second of wall
// time and of process CPU time (which a busy machine disturbs far less).
func (r *rig) timed(b *testing.B, f func(context.Context) (int, error)) (wall, cpu float64) {
	b.Helper()
	start, cpu0 := time.Now(), cpuTime(b)
	steps, err := f(context.Background())
	d, c := time.Since(start), cpuTime(b)-cpu0
	if err != nil {
		b.Fatal(err)
	}
	if steps != r.turns {
		b.Fatalf("%d steps, want %d", steps, r.turns)
	}
	return float64(steps) / d.Seconds(), float64(steps) / c.Seconds()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkFloorRatio runs the floor and Delta alternately, one run each
// per iteration, at each length, and reports both medians in steps/s and
// the median, lowest and highest per-pair ratio delta/floor. Alternating
// inside one process keeps a noisy machine's drift out of the ratio. Run
// with -benchtime=Nx for N pairs.
func BenchmarkFloorRatio(b *testing.B) {
	for _, turns := range lengths {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			r := newRig(b, turns)
			r.timed(b, r.floor) // warm the connection and the caches
			r.timed(b, r.delta)
			var floors, deltas, ratios, cpuRatios []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var f, d, fc, dc float64
				if i%2 == 0 { // alternate which side goes first
					f, fc = r.timed(b, r.floor)
					d, dc = r.timed(b, r.delta)
				} else {
					d, dc = r.timed(b, r.delta)
					f, fc = r.timed(b, r.floor)
				}
				floors, deltas = append(floors, f), append(deltas, d)
				ratios, cpuRatios = append(ratios, d/f), append(cpuRatios, dc/fc)
			}
			b.StopTimer()
			b.ReportMetric(median(floors), "floor-steps/s")
			b.ReportMetric(median(deltas), "delta-steps/s")
			b.ReportMetric(median(ratios), "ratio")
			b.ReportMetric(slices.Min(ratios), "ratio-min")
			b.ReportMetric(slices.Max(ratios), "ratio-max")
			b.ReportMetric(median(cpuRatios), "cpu-ratio")
		})
	}
}

// BenchmarkSteps runs one contender alone (for profiling it): b.N runs of
// each length, reporting steps/s.
func BenchmarkSteps(b *testing.B) {
	for _, side := range []string{"floor", "delta"} {
		for _, turns := range lengths {
			b.Run(fmt.Sprintf("%s/turns=%d", side, turns), func(b *testing.B) {
				r := newRig(b, turns)
				f := r.floor
				if side == "delta" {
					f = r.delta
				}
				b.ResetTimer()
				steps := 0
				for i := 0; i < b.N; i++ {
					n, err := f(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					steps += n
				}
				b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}
