package engine_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// childRig is a real store, bundle, registry and engine (behind the
// cascade, as in the daemon) for research-child tests. With a queue it also
// executes whole parent runs.
type childRig struct {
	st  *store.Store
	eng *engine.Engine
	svc *engine.Service // nil without a queue
	dir string

	mu   sync.Mutex
	reqs []model.Request // every request the provider saw
}

// roomy is a budget no child test reaches.
var roomy = engine.Budget{Steps: 100, Tokens: 1 << 40, CostUSD: 1000}

type lookArgs struct {
	Q string `json:"q"`
}

// plainTool is a hand-written tool whose read-only flag is false unless
// set: a tool that forgets to declare itself must not reach a child.
type plainTool struct {
	name     string
	readOnly bool
	ran      atomic.Int32
}

func (p *plainTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: p.name, Description: "a hand-written tool", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
}
func (p *plainTool) ReadOnly() bool { return p.readOnly }
func (p *plainTool) Run(context.Context, tool.Call) (tool.Result, error) {
	p.ran.Add(1)
	return tool.Text("plain ran"), nil
}

func newChildRig(t testing.TB, p model.ProviderFunc, budget engine.Budget, withQueue bool, mutate func(*engine.Options), tools ...tool.Tool) *childRig {
	t.Helper()
	dir, st, b := openEnv(t)
	rig := &childRig{st: st, dir: dir}
	recorded := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		rig.mu.Lock()
		rig.reqs = append(rig.reqs, req)
		rig.mu.Unlock()
		return p(ctx, req, s)
	})
	opts, _ := daemonOptions(t, dir, st, b, recorded, []string{"primary"}, budget, tools...)
	if mutate != nil {
		mutate(&opts)
	}
	rig.eng = engine.New(opts)
	if withQueue {
		_, rig.svc = serve(t, st, rig.eng, 2)
	}
	return rig
}

// parent creates a running run for a child to work for, without a queue.
func (r *childRig) parent(t testing.TB) store.Run {
	t.Helper()
	return seedRun(t, r.st, engine.NewID("resp_"), engine.NewID("sess_"), userRequest("the parent's task"), true)
}

func (r *childRig) requests() []model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// rows counts a table's rows through a read-only connection of its own:
// the store exposes no SQL handle.
func (r *childRig) rows(t testing.TB, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.dir, "delta.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func explore(t testing.TB, r *childRig, runID, q string) (engine.Finding, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return r.eng.Explore(ctx, runID, q)
}

func toolNames(specs []model.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// lastToolResults returns the tool messages after the last assistant message.
func lastToolResults(req model.Request) []model.Message {
	var out []model.Message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		switch req.Messages[i].Role {
		case model.RoleTool:
			out = append([]model.Message{req.Messages[i]}, out...)
		case model.RoleAssistant:
			return out
		}
	}
	return out
}

// callThenAnswer calls one tool on the first step and answers with the
// tool's result once it has one.
func callThenAnswer(name, args string) model.ProviderFunc {
	return func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		if res := lastToolResults(req); len(res) > 0 {
			return model.Response{Text: "Found it.\n\nSummary: " + res[0].Content, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
		}
		return model.Response{ToolCalls: []model.ToolCall{{ID: "k1", Name: name, Arguments: json.RawMessage(args)}}, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
}

func readOnlyLook(ran *atomic.Int32) tool.Tool {
	return tool.Func("look", "look something up", true, func(_ context.Context, _ tool.Call, a lookArgs) (tool.Result, error) {
		if ran != nil {
			ran.Add(1)
		}
		return tool.Text("looked at " + a.Q), nil
	})
}

func mutating(ran *atomic.Int32) tool.Tool {
	return tool.Func("mutate", "change something", false, func(context.Context, tool.Call, lookArgs) (tool.Result, error) {
		ran.Add(1)
		return tool.Text("changed"), nil
	})
}

func TestExploreOffersOnlyReadOnlyTools(t *testing.T) {
	var mutated atomic.Int32
	plain := &plainTool{name: "plain"}
	// search_tools and todo say read-only (safe to replay) yet write
	// per-run and per-session state: a child gets neither.
	loader := tool.Func("search_tools", "find tools", true, func(context.Context, tool.Call, lookArgs) (tool.Result, error) { return tool.Text(""), nil })
	plan := tool.Func("todo", "plan", true, func(context.Context, tool.Call, lookArgs) (tool.Result, error) { return tool.Text(""), nil })
	delegate := tool.Func("research", "delegate", false, func(context.Context, tool.Call, lookArgs) (tool.Result, error) { return tool.Text(""), nil })
	r := newChildRig(t, callThenAnswer("look", `{"q":"README"}`), roomy, false, nil,
		readOnlyLook(nil), mutating(&mutated), plain, loader, plan, delegate)
	f, err := explore(t, r, r.parent(t).ID, "What does the README say?")
	if err != nil {
		t.Fatal(err)
	}
	reqs := r.requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	for _, req := range reqs {
		if got := toolNames(req.Tools); !slices.Equal(got, []string{"look"}) {
			t.Fatalf("child offered %v, want only [look]", got)
		}
		spine := strings.Join(req.System, "\n")
		if !strings.Contains(spine, bundle.BasePrompt()) || !strings.Contains(spine, "- look:") || strings.Contains(spine, "- mutate:") || strings.Contains(spine, "- plain:") {
			t.Fatalf("child spine is not the parent's spine over the child's tools:\n%s", spine)
		}
		first := req.Messages[0]
		if first.Role != model.RoleUser || !strings.Contains(first.Content, "What does the README say?") || !strings.Contains(first.Content, "cannot change anything") {
			t.Fatalf("child's question message = %+v", first)
		}
	}
	if f.Text != "Found it.\n\nSummary: looked at README" || f.Summary != "looked at README" || f.Note != "" || f.Steps != 2 {
		t.Fatalf("finding = %+v", f)
	}
}

func TestExploreRefusesToolsOutsideItsSet(t *testing.T) {
	for _, tt := range []struct {
		name string
		tool string
	}{
		{"mutating tool", "mutate"},
		{"read-only flag false by default", "plain"},
		{"read-only but per-run state", "search_tools"},
		{"unknown tool", "nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mutated atomic.Int32
			plain := &plainTool{name: "plain"}
			loader := tool.Func("search_tools", "find tools", true, func(context.Context, tool.Call, lookArgs) (tool.Result, error) {
				mutated.Add(1)
				return tool.Text("activated"), nil
			})
			r := newChildRig(t, callThenAnswer(tt.tool, `{"q":"x"}`), roomy, false, nil, readOnlyLook(nil), mutating(&mutated), plain, loader)
			f, err := explore(t, r, r.parent(t).ID, "try it")
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("no tool named %q", tt.tool)
			if !strings.Contains(f.Summary, want) {
				t.Fatalf("the child saw %q, want it to contain %q", f.Summary, want)
			}
			if mutated.Load() != 0 || plain.ran.Load() != 0 {
				t.Fatalf("a refused tool ran")
			}
		})
	}
}

func TestExploreStepCapHolds(t *testing.T) {
	var ran atomic.Int32
	step := 0
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		step++ // calls are sequential within one child
		return model.Response{Text: fmt.Sprintf("progress %d", step), ToolCalls: []model.ToolCall{{ID: fmt.Sprint("c", step), Name: "look", Arguments: json.RawMessage(`{"q":"more"}`)}},
			Usage: model.Usage{InputTokens: 10, OutputTokens: 1}}, nil
	})
	r := newChildRig(t, p, roomy, false, nil, readOnlyLook(&ran))
	f, err := explore(t, r, r.parent(t).ID, "never finish")
	if err != nil {
		t.Fatal(err)
	}
	reqs := r.requests()
	if len(reqs) != engine.ExploreSteps || f.Steps != engine.ExploreSteps {
		t.Fatalf("model calls = %d (finding says %d), want the cap %d", len(reqs), f.Steps, engine.ExploreSteps)
	}
	if int(ran.Load()) != engine.ExploreSteps-1 {
		t.Fatalf("tool ran %d times, want %d (the last step's calls are not run)", ran.Load(), engine.ExploreSteps-1)
	}
	last := reqs[len(reqs)-1].Messages
	if !strings.Contains(last[len(last)-1].Content, "last step") {
		t.Fatalf("the last call does not tell the child to answer now: %q", last[len(last)-1].Content)
	}
	if strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, "last step") {
		t.Fatal("the first call already says it is the last step")
	}
	if f.Text != fmt.Sprintf("progress %d", engine.ExploreSteps) || !strings.Contains(f.Note, fmt.Sprintf("limit of %d model calls", engine.ExploreSteps)) {
		t.Fatalf("finding = %+v", f)
	}
}

func TestExploreChargesTheParentAndWritesNoConversation(t *testing.T) {
	r := newChildRig(t, callThenAnswer("look", `{"q":"a"}`), roomy, false, nil, readOnlyLook(nil))
	parent := r.parent(t)
	msgs, sessions, journal := r.rows(t, "messages"), r.rows(t, "sessions"), r.rows(t, "tool_journal")
	f, err := explore(t, r, parent.ID, "q")
	if err != nil {
		t.Fatal(err)
	}
	after, err := r.st.Run(context.Background(), parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{InputTokens: 20, OutputTokens: 10}
	if after.Usage.InputTokens != want.InputTokens || after.Usage.OutputTokens != want.OutputTokens || f.Usage.Fresh() != want.Fresh() {
		t.Fatalf("parent usage %+v, finding usage %+v, want %+v on both", after.Usage, f.Usage, want)
	}
	if after.Steps != 0 {
		t.Fatalf("parent steps = %d: a child's calls are not the parent's steps", after.Steps)
	}
	if m, s, j := r.rows(t, "messages"), r.rows(t, "sessions"), r.rows(t, "tool_journal"); m != msgs || s != sessions || j != journal {
		t.Fatalf("rows messages %d→%d, sessions %d→%d, tool_journal %d→%d: a child must write none", msgs, m, sessions, s, journal, j)
	}
}

func TestExploreStopsWhenTheParentBudgetIsSpent(t *testing.T) {
	// Every call costs 110 fresh tokens; the run may spend 250.
	loop := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		return model.Response{Text: "still looking", ToolCalls: []model.ToolCall{{ID: fmt.Sprint(len(req.Messages)), Name: "look", Arguments: json.RawMessage(`{"q":"x"}`)}},
			Usage: model.Usage{InputTokens: 100, OutputTokens: 10}}, nil
	})
	for _, tt := range []struct {
		name      string
		spent     int64 // the parent's usage before the child starts
		wantCalls int
	}{
		{"spent by the child", 0, 3},    // 0, 110, 220 are under 250; 330 is not
		{"spent by the parent", 250, 0}, // nothing left: the child never calls the model
		{"spent by both", 200, 1},       // 200 → 310
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newChildRig(t, loop, engine.Budget{Steps: 100, Tokens: 250, CostUSD: 100}, false, nil, readOnlyLook(nil))
			parent := r.parent(t)
			if tt.spent > 0 {
				if err := r.st.AddUsage(context.Background(), parent.ID, model.Usage{OutputTokens: tt.spent}); err != nil {
					t.Fatal(err)
				}
			}
			f, err := explore(t, r, parent.ID, "dig")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(r.requests()); n != tt.wantCalls {
				t.Fatalf("model calls = %d, want %d", n, tt.wantCalls)
			}
			if !strings.Contains(f.Note, "budget is exhausted") {
				t.Fatalf("note = %q", f.Note)
			}
			after, _ := r.st.Run(context.Background(), parent.ID)
			if got := after.Usage.Fresh(); got != tt.spent+int64(tt.wantCalls)*110 {
				t.Fatalf("parent fresh tokens = %d", got)
			}
		})
	}
}

func TestExploreNeedsARunningParent(t *testing.T) {
	r := newChildRig(t, callThenAnswer("look", `{}`), roomy, false, nil, readOnlyLook(nil))
	parent := r.parent(t)
	if _, err := r.st.Finish(context.Background(), parent.ID, store.StatusDone, json.RawMessage(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, runID, question string }{
		{"finished parent", parent.ID, "q"},
		{"unknown parent", "resp_nobody", "q"},
		{"empty question", parent.ID, "  "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := explore(t, r, tt.runID, tt.question); err == nil {
				t.Fatal("no error")
			}
		})
	}
	if n := len(r.requests()); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
}

func TestExploreToolResultsAreRedactedCappedAndSafe(t *testing.T) {
	huge := tool.Func("huge", "returns a lot", true, func(context.Context, tool.Call, lookArgs) (tool.Result, error) {
		return tool.Text("token=s3cret " + strings.Repeat("x", 5000)), nil
	})
	boom := tool.Func("boom", "panics", true, func(context.Context, tool.Call, lookArgs) (tool.Result, error) { panic("kaboom") })
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		if res := lastToolResults(req); len(res) > 0 {
			var parts []string
			for _, m := range res {
				parts = append(parts, m.Name+"="+m.Content)
			}
			return model.Response{Text: strings.Join(parts, "\n")}, nil
		}
		return model.Response{ToolCalls: []model.ToolCall{
			{ID: "h", Name: "huge", Arguments: json.RawMessage(`{"q":""}`)},
			{ID: "b", Name: "boom", Arguments: json.RawMessage(`{"q":""}`)},
		}}, nil
	})
	r := newChildRig(t, p, roomy, false, func(o *engine.Options) {
		o.ResultMax = 200
		o.Redact = func(s string) string { return strings.ReplaceAll(s, "s3cret", "[redacted]") }
	}, huge, boom)
	parent := r.parent(t)
	f, err := explore(t, r, parent.ID, "q")
	if err != nil {
		t.Fatal(err)
	}
	res := lastToolResults(r.requests()[1])
	if len(res) != 2 || res[0].Name != "huge" || res[1].Name != "boom" {
		t.Fatalf("tool results = %+v", res)
	}
	if n := len([]rune(res[0].Content)); n > 200 || !strings.Contains(res[0].Content, "truncated") || !strings.HasPrefix(res[0].Content, "token=[redacted] xxx") {
		t.Fatalf("huge result (%d runes): %q", n, res[0].Content)
	}
	if !strings.Contains(res[1].Content, "internal error") {
		t.Fatalf("panic result = %q", res[1].Content)
	}
	if strings.Contains(f.Text, "s3cret") {
		t.Fatalf("finding leaks the secret: %q", f.Text)
	}
	// A child truncates; it never spills under the parent's run id.
	if m, _ := filepath.Glob(filepath.Join(r.dir, ".delta", "spill", "*")); len(m) != 0 {
		t.Fatalf("spill files %v", m)
	}
}

func TestExploreGoesThroughTheProviderRetries(t *testing.T) {
	var calls atomic.Int32
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		if calls.Add(1) == 1 {
			return model.Response{}, &model.Error{Status: 503, Message: "overloaded", Retriable: true}
		}
		return model.Response{Text: "answer", Usage: model.Usage{InputTokens: 7, OutputTokens: 3}}, nil
	})
	r := newChildRig(t, p, roomy, false, nil)
	parent := r.parent(t)
	f, err := explore(t, r, parent.ID, "q")
	if err != nil || f.Text != "answer" || f.Steps != 1 {
		t.Fatalf("finding %+v, err %v", f, err)
	}
	if after, _ := r.st.Run(context.Background(), parent.ID); after.Usage.Fresh() != 10 {
		t.Fatalf("parent fresh tokens = %d, want 10 (the failed attempt has no usage)", after.Usage.Fresh())
	}
	// A hard failure is an error, with what the child had.
	hard := model.ProviderFunc(func(context.Context, model.Request, model.Stream) (model.Response, error) {
		return model.Response{}, &model.Error{Status: 401, Message: "bad key"}
	})
	r = newChildRig(t, hard, roomy, false, nil)
	if _, err := explore(t, r, r.parent(t).ID, "q"); err == nil || !strings.Contains(err.Error(), "bad key") {
		t.Fatalf("err = %v", err)
	}
}

func TestExploreHonoursCancel(t *testing.T) {
	started := make(chan struct{})
	p := model.ProviderFunc(func(ctx context.Context, _ model.Request, _ model.Stream) (model.Response, error) {
		close(started)
		<-ctx.Done()
		return model.Response{}, ctx.Err()
	})
	r := newChildRig(t, p, roomy, false, nil)
	parent := r.parent(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := r.eng.Explore(ctx, parent.ID, "q"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestExploreSummary(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"marked", "Long answer.\n\nSummary: short one", "short one"},
		{"heading", "Details.\n## Summary\nThe gist.\nSecond line.", "The gist.\nSecond line."},
		{"bold", "Details.\n**Summary:** bold gist", "bold gist"},
		{"last one wins", "Summary: first\nmore\nSummary: second", "second"},
		{"prose is not a marker", "Summary of options: many\nend", "Summary of options: many\nend"},
		{"none", "  just an answer  ", "just an answer"},
		{"empty marker", "Answer.\nSummary:", "Answer.\nSummary:"},
	}
	// The question names the case; the scripted child answers with its text.
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		for _, tt := range cases {
			if strings.Contains(req.Messages[0].Content, "case <"+tt.name+">") {
				return model.Response{Text: tt.text}, nil
			}
		}
		return model.Response{}, &model.Error{Status: 400, Message: "unknown case"}
	})
	r := newChildRig(t, p, roomy, false, nil)
	parent := r.parent(t)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			f, err := explore(t, r, parent.ID, "case <"+tt.name+">")
			if err != nil {
				t.Fatal(err)
			}
			if f.Summary != tt.want {
				t.Fatalf("summary = %q, want %q", f.Summary, tt.want)
			}
		})
	}
}

// A whole parent run delegating to a child through a tool: the child's
// spend is on the run's final usage, and the parent's conversation holds
// only its own messages.
func TestParentRunPaysForItsChild(t *testing.T) {
	var rig *childRig
	ask := tool.Func("ask", "delegate a question", false, func(ctx context.Context, c tool.Call, a lookArgs) (tool.Result, error) {
		f, err := rig.eng.Explore(ctx, c.RunID, a.Q)
		if err != nil {
			return tool.Result{}, err
		}
		return tool.Text("child says: " + f.Summary), nil
	})
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		u := model.Usage{InputTokens: 100, OutputTokens: 10}
		if strings.Contains(req.Messages[0].Content, "research child") {
			return model.Response{Text: "Summary: the answer is 42", Usage: u}, nil
		}
		if res := lastToolResults(req); len(res) > 0 {
			return model.Response{Text: res[0].Content, Usage: u}, nil
		}
		return model.Response{ToolCalls: []model.ToolCall{{ID: "a1", Name: "ask", Arguments: json.RawMessage(`{"q":"what is it?"}`)}}, Usage: u}, nil
	})
	rig = newChildRig(t, p, roomy, true, nil, ask, readOnlyLook(nil))
	run := submitAndWait(t, rig.svc, engine.Submission{Request: userRequest("find out")})
	resp := responseOf(t, run)
	if run.Status != store.StatusDone || resp.OutputText != "child says: the answer is 42" {
		t.Fatalf("status %s output %q", run.Status, resp.OutputText)
	}
	if run.Steps != 2 || run.Usage.InputTokens != 300 || resp.Usage.TotalTokens != 330 {
		t.Fatalf("steps %d usage %+v: want 2 parent steps and 3 calls' usage", run.Steps, run.Usage)
	}
	msgs, err := rig.st.Messages(context.Background(), run.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(m.Content, "research child") {
			t.Fatalf("the child's prompt is in the parent's conversation: %+v", m)
		}
	}
	if len(msgs) != 4 { // user, assistant(tool call), tool, assistant
		t.Fatalf("parent conversation has %d messages, want 4", len(msgs))
	}
}

// BenchmarkExplore measures one research child that makes a tool call and
// then answers: two zero-latency model calls, each charged to the parent
// (a budget read and a usage UPDATE per call), and one read-only tool.
func BenchmarkExplore(b *testing.B) {
	r := newChildRig(b, callThenAnswer("look", `{"q":"x"}`), roomy, false, nil, readOnlyLook(nil))
	parent := r.parent(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := r.eng.Explore(ctx, parent.ID, "q"); err != nil {
			b.Fatal(err)
		}
	}
}
