package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/cascade"
	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

// harness is a real store, bundle, registry, engine, queue and service
// around a scripted in-process provider.
type harness struct {
	st   *store.Store
	svc  *engine.Service
	q    *queue.Queue
	eng  *engine.Engine
	reg  *tool.Registry
	dir  string
	opts engine.Options
}

type echoArgs struct {
	Text string `json:"text"`
}

// echoedTool is a read-only echo tool that answers "echoed " and its text.
func echoedTool() tool.Tool {
	return tool.Func("echo", "echo text", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text("echoed " + a.Text), nil
	})
}

func newHarness(t testing.TB, p model.ProviderFunc, budget engine.Budget, tools ...tool.Tool) *harness {
	t.Helper()
	return newHarnessWith(t, p, budget, nil, tools...)
}

// openEnv is a temp dir holding a real store and a bundle loaded from it.
func openEnv(t testing.TB) (string, *store.Store, *bundle.Bundle) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := bundle.Load(bundle.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return dir, st, b
}

// newHarnessWith lets a test adjust the engine options before it starts.
func newHarnessWith(t testing.TB, p model.ProviderFunc, budget engine.Budget, mutate func(*engine.Options), tools ...tool.Tool) *harness {
	t.Helper()
	dir, st, b := openEnv(t)
	opts, reg := daemonOptions(t, dir, st, b, p, []string{"primary", "fallback"}, budget, tools...)
	if mutate != nil {
		mutate(&opts)
	}
	eng := engine.New(opts)
	q, svc := serve(t, st, eng, 4)
	return &harness{st: st, eng: eng, reg: reg, dir: dir, opts: opts, q: q, svc: svc}
}

// daemonOptions are the engine options the daemon would build over the
// environment openEnv made: p behind the cascade (serving models, with a
// millisecond backoff), a broker, a workspace for spills, the given budget,
// and a registry holding tools, which it also returns.
func daemonOptions(t testing.TB, dir string, st *store.Store, b *bundle.Bundle, p model.ProviderFunc, models []string, budget engine.Budget, tools ...tool.Tool) (engine.Options, *tool.Registry) {
	t.Helper()
	reg := tool.NewRegistry()
	reg.Add(tools...)
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	casc, err := cascade.New(cascade.Options{
		Endpoints: []cascade.Endpoint{{Label: "test", Kind: cascade.KindChat, Provider: p, Models: models}},
		Backoff:   func(int) time.Duration { return time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	return engine.Options{
		Store: st, Broker: event.NewBroker(), Provider: casc, Models: models,
		Prompt: b, Tools: reg, WorkspaceDir: dir, Spill: ws, ResultMax: 20000,
		ToolNames: func(string) []string { return reg.Names() },
		Budget:    func(string) engine.Budget { return budget },
	}, reg
}

// serve opens a queue running workers of eng's runs at a time, closed when
// the test ends, and returns it with the service over it.
func serve(t testing.TB, st *store.Store, eng *engine.Engine, workers int) (*queue.Queue, *engine.Service) {
	t.Helper()
	q := queue.New(st, eng.ExecuteHead, workers, nil)
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close(context.Background()) })
	return q, engine.NewService(st, q, eng)
}

var big = engine.Budget{Steps: 100, Tokens: 1 << 40, CostUSD: 1000}

// run submits input as a stored trusted request and waits for the run to
// end; it returns the run and the response it stored.
func (h *harness) run(t testing.TB, input string) (store.Run, engine.Response) {
	t.Helper()
	r := submitAndWait(t, h.svc, engine.Submission{Request: userRequest(input)})
	return r, responseOf(t, r)
}

// userRequest is a stored trusted request whose input is one user message.
func userRequest(input string) engine.Request {
	return engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: input}}, Profile: "trusted", Store: true}
}

// waitLimit bounds every wait for a run to end, so a run that never ends
// fails its test instead of hanging it.
const waitLimit = time.Minute

// submitAndWait submits sub to svc and waits for the run to end, as its
// owner; an error from either fails the test.
func submitAndWait(t testing.TB, svc *engine.Service, sub engine.Submission) store.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	r, err := svc.Submit(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = svc.Wait(ctx, sub.Owner, r.ID); err != nil {
		t.Fatalf("wait: %v", err)
	}
	return r
}

// waitFor waits for run id, already in svc's store, to end.
func waitFor(t testing.TB, svc *engine.Service, id string) store.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	r, err := svc.Wait(ctx, "", id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	return r
}

// responseOf is the response a finished run stored as its result.
func responseOf(t testing.TB, r store.Run) engine.Response {
	t.Helper()
	var resp engine.Response
	if err := json.Unmarshal(r.Result, &resp); err != nil {
		t.Fatalf("result %q: %v", r.Result, err)
	}
	return resp
}

// cancelOnceStarted submits input, waits until started is closed (the
// model is in a call that only cancellation ends), cancels the run and
// waits for it to end; it fails the test unless the run ends cancelled.
func (h *harness) cancelOnceStarted(t *testing.T, input string, started <-chan struct{}, notStarted string) store.Run {
	t.Helper()
	ctx := context.Background()
	r, err := h.svc.Submit(ctx, engine.Submission{Request: engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: input}}, Profile: "trusted"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal(notStarted)
	}
	if _, err := h.svc.Cancel(ctx, "", r.ID); err != nil {
		t.Fatal(err)
	}
	if r = waitFor(t, h.svc, r.ID); r.Status != store.StatusCancelled {
		t.Fatalf("status %s (%s), want cancelled", r.Status, r.Error)
	}
	return r
}

// seedRun creates run id of session sessionID from req as a process that
// died before finishing it left it: queued, or with started, running with
// req's input as its first messages.
func seedRun(t testing.TB, st *store.Store, id, sessionID string, req engine.Request, started bool) store.Run {
	t.Helper()
	ctx := context.Background()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, _, _, err := st.CreateRun(ctx, store.NewRun{ID: id, SessionID: sessionID, Request: body})
	if err != nil {
		t.Fatal(err)
	}
	if started {
		if r, _, err = st.Start(ctx, id, req.Input); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// restart starts a fresh engine and queue over st, as a new daemon process
// would, and returns its service; mutate may adjust the engine options.
func restart(t *testing.T, st *store.Store, dir string, p model.ProviderFunc, mutate func(*engine.Options), tools ...tool.Tool) *engine.Service {
	t.Helper()
	b, err := bundle.Load(bundle.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	reg.Add(tools...)
	opts := engine.Options{Store: st, Provider: p, Models: []string{"primary"}, Prompt: b, Tools: reg,
		ToolNames: func(string) []string { return reg.Names() }, Budget: func(string) engine.Budget { return big }}
	if mutate != nil {
		mutate(&opts)
	}
	_, svc := serve(t, st, engine.New(opts), 2)
	return svc
}

func (h *harness) eventNames(t *testing.T, runID string) []string {
	evs, err := h.st.Events(context.Background(), store.EventFilter{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
	}
	return names
}

func count(names []string, n string) int {
	c := 0
	for _, x := range names {
		if x == n {
			c++
		}
	}
	return c
}

// toolThenAnswer: the script calls a tool on a fresh user turn and answers once
// it sees a tool result.
func toolThenAnswer(calls ...model.ToolCall) model.ProviderFunc {
	return func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == model.RoleTool {
				if s.OnText != nil {
					s.OnText("done: ")
					s.OnText(req.Messages[i].Content)
				}
				return model.Response{Model: req.Model, Text: "done: " + req.Messages[i].Content, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
			}
			if req.Messages[i].Role == model.RoleAssistant {
				break
			}
		}
		return model.Response{Model: req.Model, ToolCalls: calls, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
}

func TestRunCallsToolAndFinishesOnce(t *testing.T) {
	var got atomic.Value
	echo := tool.Func("echo", "echo text", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		got.Store(a.Text)
		return tool.Text("echoed " + a.Text), nil
	})
	h := newHarness(t, toolThenAnswer(model.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}), big, echo)
	r, resp := h.run(t, "please echo")
	if r.Status != store.StatusDone || resp.Status != "completed" || resp.OutputText != "done: echoed hi" {
		t.Fatalf("run %s / %s: %q", r.Status, resp.Status, resp.OutputText)
	}
	if got.Load() != "hi" {
		t.Fatalf("tool saw %v", got.Load())
	}
	if r.Steps != 2 || r.Usage.InputTokens != 20 || resp.Usage.TotalTokens != 30 {
		t.Fatalf("steps %d usage %+v resp usage %+v", r.Steps, r.Usage, resp.Usage)
	}
	evs, _ := h.st.Events(context.Background(), store.EventFilter{RunID: r.ID})
	for _, e := range evs {
		if e.Name != event.ModelCall {
			continue
		}
		var d map[string]any
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"model", "provider", "latency_ms", "wall_ms", "retries", "cache_hit_pct", "cache_shortfall_tokens", "cost_usd", "usage"} {
			if _, ok := d[k]; !ok {
				t.Fatalf("model.call lacks %s: %s", k, e.Data)
			}
		}
		if d["provider"] != "chat" {
			t.Fatalf("model.call provider %v", d["provider"])
		}
	}
	names := h.eventNames(t, r.ID)
	want := []string{event.RunQueued, event.RunStarted, event.TurnStarted, event.ModelCall, event.ToolCall, event.Checkpoint, event.ToolResult,
		event.TurnStarted, event.ModelCall, event.Checkpoint, event.RunFinished}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("events = %v, want %v", names, want)
	}
}

func TestToolsOfOneTurnRunConcurrently(t *testing.T) {
	// Each call waits until both have started: serial execution never finishes.
	var wg sync.WaitGroup
	wg.Add(2)
	barrier := tool.Func("barrier", "waits for its sibling", true, func(ctx context.Context, _ tool.Call, _ echoArgs) (tool.Result, error) {
		wg.Done()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return tool.Text("met"), nil
		case <-time.After(5 * time.Second):
			return tool.Errorf("sibling never started: calls ran one after another"), nil
		}
	})
	h := newHarness(t, toolThenAnswer(
		model.ToolCall{ID: "a", Name: "barrier", Arguments: json.RawMessage(`{"text":"1"}`)},
		model.ToolCall{ID: "b", Name: "barrier", Arguments: json.RawMessage(`{"text":"2"}`)},
	), big, barrier)
	r, resp := h.run(t, "go")
	if r.Status != store.StatusDone || !strings.Contains(resp.OutputText, "met") {
		t.Fatalf("status %s output %q", r.Status, resp.OutputText)
	}
	msgs, _ := h.st.Messages(context.Background(), r.SessionID)
	for _, m := range msgs {
		if m.Role == model.RoleTool && m.Content != "met" {
			t.Fatalf("tool result %q", m.Content)
		}
	}
}

func TestBudgetExhaustionHandsOff(t *testing.T) {
	loop := tool.Func("echo", "echo", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) { return tool.Text("again"), nil })
	// The model never stops calling tools; two steps are allowed.
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		return model.Response{Model: req.Model, Text: "I have found two sources so far.", ToolCalls: []model.ToolCall{{ID: fmt.Sprint(len(req.Messages)), Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}}}, nil
	})
	h := newHarness(t, p, engine.Budget{Steps: 2, Tokens: 1 << 40, CostUSD: 100}, loop)
	r, resp := h.run(t, "research forever")
	if r.Status != store.StatusFailed || resp.Status != "failed" {
		t.Fatalf("status %s/%s", r.Status, resp.Status)
	}
	if r.Steps != 2 {
		t.Fatalf("steps = %d, want 2", r.Steps)
	}
	if !strings.HasPrefix(resp.OutputText, engine.MarkerFailed) || !strings.Contains(resp.OutputText, "two sources so far") || !strings.Contains(resp.OutputText, "narrow") {
		t.Fatalf("handoff = %q", resp.OutputText)
	}
	if !strings.HasPrefix(r.Error, "budget exhausted: 2/2 steps") {
		t.Fatalf("runs.error = %q", r.Error)
	}
}

func TestZeroTokenBudgetFailsClosed(t *testing.T) {
	called := false
	p := model.ProviderFunc(func(context.Context, model.Request, model.Stream) (model.Response, error) {
		called = true
		return model.Response{Text: "hi"}, nil
	})
	h := newHarness(t, p, engine.Budget{Steps: 10, Tokens: 0, CostUSD: 10})
	r, _ := h.run(t, "hi")
	if r.Status != store.StatusFailed || called {
		t.Fatalf("status %s, model called %v", r.Status, called)
	}
}

func TestToolPanicBecomesErrorResult(t *testing.T) {
	boom := tool.Func("boom", "panics", false, func(context.Context, tool.Call, echoArgs) (tool.Result, error) { panic("kaboom") })
	h := newHarness(t, toolThenAnswer(model.ToolCall{ID: "c1", Name: "boom", Arguments: json.RawMessage(`{"text":""}`)}), big, boom)
	r, resp := h.run(t, "explode")
	if r.Status != store.StatusDone || !strings.Contains(resp.OutputText, "internal error") {
		t.Fatalf("status %s output %q", r.Status, resp.OutputText)
	}
}

func TestProviderPanicStillEndsWithOneTerminalEvent(t *testing.T) {
	p := model.ProviderFunc(func(context.Context, model.Request, model.Stream) (model.Response, error) { panic("provider bug") })
	h := newHarness(t, p, big)
	r, resp := h.run(t, "hi")
	if r.Status != store.StatusFailed || !strings.HasPrefix(resp.OutputText, engine.MarkerFailed) {
		t.Fatalf("status %s output %q", r.Status, resp.OutputText)
	}
	if n := count(h.eventNames(t, r.ID), event.RunFinished); n != 1 {
		t.Fatalf("run.finished count = %d", n)
	}
}

func TestRetriesThenFallsBack(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		mu.Lock()
		calls = append(calls, req.Model)
		mu.Unlock()
		if req.Model == "primary" {
			return model.Response{}, &model.Error{Status: 503, Message: "overloaded", Retriable: true}
		}
		return model.Response{Model: req.Model, Text: "from fallback"}, nil
	})
	h := newHarness(t, p, big)
	r, resp := h.run(t, "hi")
	if r.Status != store.StatusDone || resp.OutputText != "from fallback" || resp.Model != "fallback" {
		t.Fatalf("status %s output %q model %q", r.Status, resp.OutputText, resp.Model)
	}
	if strings.Join(calls, ",") != "primary,primary,primary,fallback" {
		t.Fatalf("attempts = %v, want 3 on primary then fallback", calls)
	}
	if n := count(h.eventNames(t, r.ID), event.ModelRetry); n != 3 {
		t.Fatalf("model.retry events = %d, want 3", n)
	}
}

func TestNonRetriableErrorFailsWithReason(t *testing.T) {
	p := model.ProviderFunc(func(context.Context, model.Request, model.Stream) (model.Response, error) {
		return model.Response{}, &model.Error{Status: 401, Message: "bad key"}
	})
	h := newHarness(t, p, big)
	r, resp := h.run(t, "hi")
	if r.Status != store.StatusFailed || !strings.Contains(r.Error, "bad key") || !strings.HasPrefix(resp.OutputText, engine.MarkerFailed) {
		t.Fatalf("status %s error %q output %q", r.Status, r.Error, resp.OutputText)
	}
}

func TestCancelRunningRun(t *testing.T) {
	started := make(chan struct{})
	p := model.ProviderFunc(func(ctx context.Context, _ model.Request, _ model.Stream) (model.Response, error) {
		close(started)
		<-ctx.Done()
		return model.Response{}, ctx.Err()
	})
	h := newHarness(t, p, big)
	r := h.cancelOnceStarted(t, "slow", started, "model never called")
	var resp engine.Response
	_ = json.Unmarshal(r.Result, &resp)
	if !strings.HasPrefix(resp.OutputText, engine.MarkerCancelled) || resp.Status != "cancelled" {
		t.Fatalf("result %+v", resp)
	}
	if _, err := h.svc.Get(context.Background(), "someone-else", r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another owner sees the run: %v", err)
	}
}

// TestResumeSettlesInDoubtCalls simulates a crash after the intents of a
// step were committed: one call finished, one read-only and one mutating
// call were in flight.
func TestResumeSettlesInDoubtCalls(t *testing.T) {
	var readRuns, writeRuns, doneRuns atomic.Int32
	read := tool.Func("read", "read-only", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		readRuns.Add(1)
		return tool.Text("fresh read"), nil
	})
	write := tool.Func("write", "mutating", false, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		writeRuns.Add(1)
		return tool.Text("wrote"), nil
	})
	done := tool.Func("done", "mutating, finished before the crash", false, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		doneRuns.Add(1)
		return tool.Text("again"), nil
	})
	var seen []model.Message
	var mu sync.Mutex
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		mu.Lock()
		seen = req.Messages
		mu.Unlock()
		return model.Response{Model: req.Model, Text: "verified"}, nil
	})
	ctx := context.Background()
	dir, st, _ := openEnv(t)
	seedRun(t, st, "resp_x", "sess_x", engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "do it"}}, Profile: "trusted"}, true)
	args := json.RawMessage(`{"text":"a"}`)
	calls := []model.ToolCall{{ID: "r1", Name: "read", Arguments: args}, {ID: "w1", Name: "write", Arguments: args}, {ID: "d1", Name: "done", Arguments: args}}
	if _, err := st.CommitStep(ctx, store.Step{RunID: "resp_x", SessionID: "sess_x", Model: "primary",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls},
		Intents: []store.Intent{{CallID: "r1", Name: "read", Args: args, ReadOnly: true}, {CallID: "w1", Name: "write", Args: args}, {CallID: "d1", Name: "done", Args: args}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CommitToolResult(ctx, store.ToolResult{RunID: "resp_x", SessionID: "sess_x", CallID: "d1", Name: "done", Text: "done before crash"}); err != nil {
		t.Fatal(err)
	}
	// "Restart": a fresh engine and queue over the same database.
	r := waitFor(t, restart(t, st, dir, p, nil, read, write, done), "resp_x")
	if r.Status != store.StatusDone {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	if readRuns.Load() != 1 || writeRuns.Load() != 0 || doneRuns.Load() != 0 {
		t.Fatalf("re-executions: read %d (want 1), write %d (want 0), done %d (want 0)", readRuns.Load(), writeRuns.Load(), doneRuns.Load())
	}
	results := map[string]string{}
	users := 0
	for _, m := range seen {
		if m.Role == model.RoleTool {
			results[m.ToolCallID] = m.Content
		}
		if m.Role == model.RoleUser && m.Content == "do it" {
			users++
		}
	}
	if results["r1"] != "fresh read" || results["d1"] != "done before crash" || !strings.HasPrefix(results["w1"], "[interrupted]") {
		t.Fatalf("results the model saw: %v", results)
	}
	if users != 1 {
		t.Fatalf("user input appears %d times after resume", users)
	}
	if r.Attempts != 2 {
		t.Fatalf("attempts = %d, want 2", r.Attempts)
	}
}

func TestInvalidToolArgumentsReachTheModelAsAnError(t *testing.T) {
	echo := echoedTool()
	h := newHarness(t, toolThenAnswer(model.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text": unquoted`)}), big, echo)
	r, resp := h.run(t, "please echo")
	if r.Status != store.StatusDone || !strings.Contains(resp.OutputText, "error") {
		t.Fatalf("status %s output %q", r.Status, resp.OutputText)
	}
}

func TestLargeResultSpillsToWorkspace(t *testing.T) {
	huge := strings.Repeat("0123456789", 5000) + "THE-END"
	big := tool.Func("big", "returns a lot", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		return tool.Text(huge), nil
	})
	var seen string
	var mu sync.Mutex
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		for _, m := range req.Messages {
			if m.Role == model.RoleTool {
				mu.Lock()
				seen = m.Content
				mu.Unlock()
				return model.Response{Model: req.Model, Text: "ok"}, nil
			}
		}
		return model.Response{Model: req.Model, ToolCalls: []model.ToolCall{{ID: "call-1", Name: "big", Arguments: json.RawMessage(`{"text":""}`)}}}, nil
	})
	h := newHarness(t, p, engine.Budget{Steps: 10, Tokens: 1 << 40, CostUSD: 100}, big)
	r, _ := h.run(t, "fetch it all")
	if r.Status != store.StatusDone {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	if n := len([]rune(seen)); n > 20000 || !strings.HasPrefix(seen, "0123456789") || !strings.HasSuffix(seen, "THE-END") {
		t.Fatalf("inline result: %d runes, head/tail kept? %q…%q", n, seen[:20], seen[len(seen)-20:])
	}
	spill := filepath.Join(h.dir, ".delta", "spill", r.ID+".call-1.txt")
	b, err := os.ReadFile(spill)
	if err != nil || string(b) != huge {
		t.Fatalf("spill file %s: %v (len %d)", spill, err, len(b))
	}
	if !strings.Contains(seen, ".delta/spill/"+r.ID+".call-1.txt") {
		t.Fatalf("inline note does not name the spill path")
	}
}

func TestContextOverflowElidesOnceThenFailsCleanly(t *testing.T) {
	big := tool.Func("big", "returns a lot", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		return tool.Text(strings.Repeat("x", 5000)), nil
	})
	overflow := &model.Error{Status: 400, Message: "prompt is too long", Err: model.ErrContextOverflow}
	for _, tt := range []struct {
		name       string
		limit      int // the largest prompt (in characters of tool results) the fake accepts
		wantStatus string
	}{
		{"fits after eliding", 1000, store.StatusDone},
		{"irreducible", -1, store.StatusFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
				calls++
				size := 0
				sawTool := false
				for _, m := range req.Messages {
					if m.Role == model.RoleTool {
						size += len(m.Content)
						sawTool = true
					}
				}
				if !sawTool {
					return model.Response{Model: req.Model, ToolCalls: []model.ToolCall{{ID: "c1", Name: "big", Arguments: json.RawMessage(`{"text":""}`)}}}, nil
				}
				if tt.limit < 0 || size > tt.limit {
					return model.Response{}, overflow
				}
				return model.Response{Model: req.Model, Text: "summarised"}, nil
			})
			h := newHarness(t, p, engine.Budget{Steps: 10, Tokens: 1 << 40, CostUSD: 100}, big)
			r, resp := h.run(t, "go")
			if r.Status != tt.wantStatus {
				t.Fatalf("status %s (%s) output %q", r.Status, r.Error, resp.OutputText)
			}
			if tt.wantStatus == store.StatusFailed && !strings.Contains(r.Error, "context window") {
				t.Fatalf("error %q does not say why", r.Error)
			}
			if calls != 3 {
				t.Fatalf("model calls = %d, want 3 (tool turn, overflow, one retry)", calls)
			}
		})
	}
}

func TestTurnBlocksReachEveryModelCall(t *testing.T) {
	echo := echoedTool()
	var mu sync.Mutex
	var lastUserBlocks []string
	calls := 0
	base := toolThenAnswer(model.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		mu.Lock()
		calls++
		lastUserBlocks = nil
		for _, m := range req.Messages {
			if m.Role == model.RoleUser && strings.HasPrefix(m.Content, "<delta:todo>") {
				lastUserBlocks = append(lastUserBlocks, m.Content)
			}
		}
		if len(lastUserBlocks) != 1 {
			mu.Unlock()
			return model.Response{}, &model.Error{Status: 400, Message: "the plan block is missing"}
		}
		mu.Unlock()
		return base(ctx, req, s)
	})
	h := newHarnessWith(t, p, big, func(o *engine.Options) {
		o.TurnBlocks = func(_ context.Context, sessionID string) []string {
			return []string{"<delta:todo>\n- [doing] the plan of " + sessionID + "\n</delta:todo>"}
		}
	}, echo)
	r, _ := h.run(t, "go")
	if r.Status != store.StatusDone || calls != 2 {
		t.Fatalf("status %s (%s), calls %d", r.Status, r.Error, calls)
	}
	if !strings.Contains(lastUserBlocks[0], r.SessionID) {
		t.Fatalf("block %q is not this session's", lastUserBlocks[0])
	}
}

// Attempt blocks are computed once per execution attempt from the run's
// own input, ride on every turn of it after the other user-role blocks,
// and never reach the stored conversation.
func TestAttemptBlocksAreComputedOncePerAttempt(t *testing.T) {
	echo := echoedTool()
	var mu sync.Mutex
	var seen []string // the last message of every model call
	computed, tasks := 0, []string{}
	base := toolThenAnswer(model.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		mu.Lock()
		seen = append(seen, req.Messages[len(req.Messages)-1].Content)
		mu.Unlock()
		return base(ctx, req, s)
	})
	h := newHarnessWith(t, p, big, func(o *engine.Options) {
		o.AttemptBlocks = func(_ context.Context, runID, sessionID, task string) []string {
			mu.Lock()
			defer mu.Unlock()
			computed++
			tasks = append(tasks, task)
			return []string{"<delta:skills>\n- cite-check: for " + runID + "\n</delta:skills>"}
		}
	}, echo)
	r, _ := h.run(t, "check the citations")
	if r.Status != store.StatusDone || len(seen) != 2 {
		t.Fatalf("status %s (%s), calls %d", r.Status, r.Error, len(seen))
	}
	if computed != 1 || tasks[0] != "check the citations" {
		t.Fatalf("computed %d times from %q, want once from the run's input", computed, tasks)
	}
	for i, last := range seen {
		if !strings.HasPrefix(last, "<delta:skills>") || !strings.Contains(last, r.ID) {
			t.Fatalf("call %d ends with %q, want the attempt block", i+1, last)
		}
	}
	msgs, err := h.st.Messages(context.Background(), r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(m.Content, "<delta:skills>") {
			t.Fatalf("the attempt block was stored: %+v", m)
		}
	}
}
