package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/search"
)

type noArgs struct{}

func fn(name, desc string, readOnly bool) tool.Tool {
	return tool.Func(name, desc, readOnly, func(context.Context, tool.Call, noArgs) (tool.Result, error) {
		return tool.Text(name + " ran"), nil
	})
}

// builtins are the synthetic built-in tools (no "__").
var builtins = []string{"read_file", "write_file", "grep", "web_fetch"}

// fixture is a real store and a synthetic registry of 300 tools: the
// built-ins, search_tools, six calendar tools, one core-verb tool and
// filler MCP tools on an unrelated subject.
type fixture struct {
	st     *store.Store
	reg    *tool.Registry
	loader *search.Loader
}

// allowedFor is the envelope: trusted gets everything, safe only the
// read-only tools, "small" the first n names.
func allowedFor(reg *tool.Registry, small int) func(string) []string {
	return func(profile string) []string {
		var out []string
		for _, n := range reg.Names() {
			t, _ := reg.Get(n)
			switch {
			case profile == "safe" && !t.ReadOnly():
				continue
			case profile == "small" && len(out) >= small:
				continue
			}
			out = append(out, n)
		}
		return out
	}
}

func newFixture(t testing.TB, total int, pinned []string) *fixture {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := tool.NewRegistry()
	for _, n := range builtins {
		reg.Add(fn(n, "Built-in "+n, true))
	}
	f := &fixture{st: st, reg: reg}
	f.loader = newLoader(st, reg, pinned)
	reg.Add(f.loader.Tool())
	reg.Add(
		fn("crm__get_dashboard", "Show the CRM dashboard.", true),
		fn("cal__list_events", "List calendar events in a date range.", true),
		fn("cal__get_event", "Read one calendar event.", true),
		fn("cal__create_event", "Create a calendar event.\nSecond line never shown.", false),
		fn("cal__update_event", "Change a calendar event.", false),
		fn("cal__delete_event", "Delete a calendar event.", false),
		fn("cal__invite", "Invite people to a calendar event.", false),
	)
	for i := len(reg.Names()); i < total; i++ {
		reg.Add(fn(fmt.Sprintf("warehouse__op_%03d", i), fmt.Sprintf("Warehouse stock operation number %d.", i), i%2 == 0))
	}
	return f
}

func newLoader(st *store.Store, reg *tool.Registry, pinned []string) *search.Loader {
	return search.New(st, search.Options{
		Tools: reg, Allowed: allowedFor(reg, 40), Pinned: pinned,
		CoreVerbs: []string{"get_dashboard", "list_open_work"},
		Profile: func(ctx context.Context, runID string) (string, error) {
			r, err := st.Run(ctx, runID)
			if err != nil {
				return "", err
			}
			var req engine.Request
			if err := json.Unmarshal(r.Request, &req); err != nil {
				return "", err
			}
			return req.Profile, nil
		},
	})
}

// pinnedSet is what a fresh trusted run is offered in the fixture.
func pinnedSet(extra ...string) []string {
	return append(append(slices.Clone(builtins), search.Name, "crm__get_dashboard"), extra...)
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func TestResidentSet(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		total   int
		pinned  []string
		profile string
		want    []string
	}{
		{name: "300 tools: built-ins, search and core verbs", total: 300, profile: "trusted", want: pinnedSet()},
		{name: "DELTA_PINNED_TOOLS adds a tool", total: 300, profile: "trusted", pinned: []string{"cal__invite"}, want: pinnedSet("cal__invite")},
		{name: "a pinned name outside the envelope is ignored", total: 300, profile: "safe", pinned: []string{"cal__invite"}, want: pinnedSet()},
		{name: "a pinned set past the guardrail falls back", total: 300, profile: "trusted", pinned: warehouse(10, 70), want: pinnedSet()},
		{name: "60 allowed: everything, without search", total: 60, profile: "trusted"},
		{name: "40 allowed of 300: everything, without search", total: 300, profile: "small"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.total, c.pinned)
			if len(f.reg.Names()) != c.total {
				t.Fatalf("registry has %d tools, want %d", len(f.reg.Names()), c.total)
			}
			want := c.want
			if want == nil {
				want = slices.DeleteFunc(allowedFor(f.reg, 40)(c.profile), func(n string) bool { return n == search.Name })
			}
			got := f.loader.Resident(ctx, "resp_x", c.profile)
			if !slices.Equal(sorted(got), sorted(want)) {
				t.Errorf("resident = %v\nwant %v", got, want)
			}
		})
	}
}

func warehouse(from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, fmt.Sprintf("warehouse__op_%03d", i))
	}
	return out
}

func TestSearchActivatesAtMostFiveInsideTheEnvelope(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 300, nil)
	// Six calendar tools match; only five are activated, the best first.
	ms, err := f.loader.Search(ctx, "resp_a", "trusted", "create calendar events")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != search.MaxActivations || ms[0].Name != "cal__create_event" {
		t.Fatalf("matches = %v, want 5 led by cal__create_event", ms)
	}
	if ms[0].Description != "Create a calendar event." {
		t.Errorf("description = %q, want its first line", ms[0].Description)
	}
	got, err := f.loader.Activated(ctx, "resp_a")
	if err != nil || len(got) != 5 {
		t.Fatalf("activated = %v (%v), want 5", got, err)
	}
	res := f.loader.Resident(ctx, "resp_a", "trusted")
	for _, m := range ms {
		if !slices.Contains(res, m.Name) {
			t.Errorf("activated %s is not resident: %v", m.Name, res)
		}
	}
	// Activations belong to the run: another run is unaffected.
	if other := f.loader.Resident(ctx, "resp_b", "trusted"); !slices.Equal(sorted(other), sorted(pinnedSet())) {
		t.Errorf("another run's resident set = %v", other)
	}
	// A second search finds the sixth and never re-offers resident tools.
	ms, err = f.loader.Search(ctx, "resp_a", "trusted", "calendar event")
	if err != nil || len(ms) != 1 {
		t.Fatalf("second search = %v (%v), want the one remaining calendar tool", ms, err)
	}

	// The safe envelope: mutating calendar tools are never found nor activated.
	ms, err = f.loader.Search(ctx, "resp_s", "safe", "create update delete invite calendar event")
	if err != nil {
		t.Fatal(err)
	}
	allowed := allowedFor(f.reg, 40)("safe")
	for _, m := range ms {
		if !slices.Contains(allowed, m.Name) {
			t.Errorf("search activated %s outside the safe envelope", m.Name)
		}
	}
	if len(ms) != 2 {
		t.Errorf("safe matches = %v, want cal__list_events and cal__get_event", ms)
	}
	// An activation stored for a run is dropped if the envelope no longer allows it.
	if _, err := f.loader.Search(ctx, "resp_w", "trusted", "invite"); err != nil {
		t.Fatal(err)
	}
	if res := f.loader.Resident(ctx, "resp_w", "safe"); slices.Contains(res, "cal__invite") {
		t.Errorf("resident under safe includes cal__invite: %v", res)
	}
}

func TestSearchToolResults(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 300, nil)
	r, _, _, err := f.st.CreateRun(ctx, store.NewRun{ID: "resp_t", SessionID: "sess_t", Request: json.RawMessage(`{"profile":"safe"}`)})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.reg.Get(search.Name)
	cases := []struct {
		args    string
		isError bool
		want    string
	}{
		{args: `{"query":"  ,, "}`, isError: true, want: "query is empty"},
		{args: `{}`, isError: true, want: "query"},
		{args: `{"query":"zebra xylophone"}`, want: "No further tools match"},
		{args: `{"query":"calendar"}`, want: "- cal__list_events: List calendar events in a date range."},
	}
	for _, c := range cases {
		res, err := st.Run(ctx, tool.Call{RunID: r.ID, Args: json.RawMessage(c.args)})
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if res.IsError != c.isError || !strings.Contains(res.Text, c.want) {
			t.Errorf("%s: got %+v, want error=%v containing %q", c.args, res, c.isError, c.want)
		}
	}
	if strings.Contains(mustRun(t, st, r.ID, `{"query":"create calendar event"}`), "cal__create_event") {
		t.Error("search_tools offered cal__create_event to a safe run")
	}
	if _, err := st.Run(ctx, tool.Call{RunID: "resp_missing", Args: json.RawMessage(`{"query":"calendar"}`)}); err == nil {
		t.Error("search for an unknown run: want an error")
	}
}

func mustRun(t *testing.T, tl tool.Tool, runID, args string) string {
	t.Helper()
	res, err := tl.Run(context.Background(), tool.Call{RunID: runID, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Text
}

// prompt is a minimal engine.Prompt whose system spine lists the tools.
type prompt struct{}

func (prompt) ReadSelf() string { return "" }
func (prompt) System(_ string, specs []model.ToolSpec) []string {
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return []string{"tools: " + strings.Join(names, ",")}
}
func (prompt) Turn(string, time.Time, map[string]any) string { return "" }

// recorder is a scripted provider that records the tools of every call.
type recorder struct {
	mu    sync.Mutex
	calls [][]string
	next  func(n int, req model.Request) (model.Response, error)
}

func (r *recorder) Complete(ctx context.Context, req model.Request, _ model.Stream) (model.Response, error) {
	r.mu.Lock()
	var names []string
	for _, s := range req.Tools {
		names = append(names, s.Name)
	}
	r.calls = append(r.calls, names)
	n := len(r.calls)
	r.mu.Unlock()
	return r.next(n, req)
}

func newEngine(f *fixture, loader *search.Loader, p model.Provider) *engine.Engine {
	big := engine.Budget{Steps: 100, Tokens: 1 << 40, CostUSD: 1000}
	return engine.New(engine.Options{
		Store: f.st, Provider: p, Models: []string{"m"}, Prompt: prompt{}, Tools: f.reg,
		ToolNames: allowedFor(f.reg, 40), Resident: loader.Resident,
		Budget: func(string) engine.Budget { return big },
	})
}

// TestEngineOffersActivatedToolsAcrossTurnsAndRestart drives the real
// engine: turn 1 offers only the resident set and calls search_tools, turn 2
// offers the activated tools, then the daemon "stops"; a new engine and
// loader on the same database resume the run and still offer them.
func TestEngineOffersActivatedToolsAcrossTurnsAndRestart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 300, nil)
	if _, _, _, err := f.st.CreateRun(ctx, store.NewRun{ID: "resp_e", SessionID: "sess_e",
		Request: json.RawMessage(`{"input":[{"role":"user","content":"book a meeting"}],"profile":"trusted"}`)}); err != nil {
		t.Fatal(err)
	}
	runCtx, shutdown := context.WithCancel(ctx)
	defer shutdown()
	var systems []string
	first := &recorder{next: func(n int, req model.Request) (model.Response, error) {
		systems = append(systems, strings.Join(req.System, ""))
		if n == 1 {
			return model.Response{Model: "m", ToolCalls: []model.ToolCall{{ID: "c1", Name: search.Name,
				Arguments: json.RawMessage(`{"query":"create calendar event"}`)}}}, nil
		}
		shutdown() // the daemon stops mid-run; the run resumes on the next start
		return model.Response{}, context.Canceled
	}}
	newEngine(f, f.loader, first).Execute(runCtx, "resp_e", func() bool { return false })

	if len(first.calls) != 2 {
		t.Fatalf("model calls = %d, want 2", len(first.calls))
	}
	if got := first.calls[0]; !slices.Equal(sorted(got), sorted(pinnedSet())) {
		t.Errorf("turn 1 offered %d tools %v, want only the resident set", len(got), got)
	}
	if got := first.calls[1]; !slices.Contains(got, "cal__create_event") || len(got) != len(pinnedSet())+5 {
		t.Errorf("turn 2 offered %v, want the resident set plus 5 activated tools", got)
	}
	if !strings.Contains(systems[1], "cal__create_event") {
		t.Errorf("turn 2 spine does not index the activated tool: %q", systems[1])
	}
	if r, _ := f.st.Run(ctx, "resp_e"); r.Status != store.StatusRunning {
		t.Fatalf("after shutdown the run is %s, want running", r.Status)
	}

	second := &recorder{next: func(int, model.Request) (model.Response, error) {
		return model.Response{Model: "m", Text: "booked"}, nil
	}}
	newEngine(f, newLoader(f.st, f.reg, nil), second).Execute(ctx, "resp_e", func() bool { return false })
	if len(second.calls) != 1 || !slices.Equal(second.calls[0], first.calls[1]) {
		t.Errorf("resumed turn offered %v, want %v", second.calls, first.calls[1])
	}
	if r, _ := f.st.Run(ctx, "resp_e"); r.Status != store.StatusDone {
		t.Errorf("resumed run is %s, want done", r.Status)
	}
}

func FuzzSearchQuery(f *testing.F) {
	for _, s := range []string{"", "calendar event", "ÜBER Straße__x", "a,b;;c", strings.Repeat("notes ", 50), "\x00\xff"} {
		f.Add(s)
	}
	fx := newFixture(f, 80, nil)
	f.Fuzz(func(t *testing.T, q string) {
		ms, err := fx.loader.Search(context.Background(), "resp_f", "trusted", q)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) > search.MaxActivations {
			t.Fatalf("%d activations for %q", len(ms), q)
		}
	})
}

// BenchmarkResident is the per-turn cost of choosing the tools of a run
// with 5 activations out of a 300-tool registry.
func BenchmarkResident(b *testing.B) {
	f := newFixture(b, 300, nil)
	ctx := context.Background()
	if _, err := f.loader.Search(ctx, "resp_b", "trusted", "calendar event"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if len(f.loader.Resident(ctx, "resp_b", "trusted")) == 0 {
			b.Fatal("empty resident set")
		}
	}
}
