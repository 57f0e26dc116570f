package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/memory"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// TestBindCuratedTable: the curated tool is the one connected tool whose
// full name ends with writeVerbSuffix; none or two bind nothing and warn.
func TestBindCuratedTable(t *testing.T) {
	cases := []struct {
		name, suffix string
		tools        []string
		want, warn   string
	}{
		{"zero matches", "propose_change", []string{"crm__get_dashboard", "crm__list_open_work"}, "", "no connected tool ends with"},
		{"one match", "propose_change", []string{"crm__get_dashboard", "crm__propose_change"}, "crm__propose_change", ""},
		{"two matches", "propose_change", []string{"crm__propose_change", "hr__propose_change"}, "", "matches 2 tools"},
		{"a server-specific suffix disambiguates", "hr__propose_change", []string{"crm__propose_change", "hr__propose_change"}, "hr__propose_change", ""},
		{"empty suffix", " ", []string{"crm__propose_change"}, "", "writeVerbSuffix is empty"},
		{"no tools", "propose_change", nil, "", "no connected tool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, warn := memory.BindCurated(tc.tools, tc.suffix)
			if got != tc.want || (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
				t.Fatalf("bound %q warning %q, want %q and a warning containing %q", got, warn, tc.want, tc.warn)
			}
		})
	}
}

// TestRecursTable: the recurrence rule. Two distinct runs by default (one
// when DELTA_PROMOTE_MIN_RUNS=1); a trusted review correction at once; never
// a user's private row, a held row, or a write that added no new run.
func TestRecursTable(t *testing.T) {
	row := func(scope string, runs int, untrusted bool) store.Memory {
		return store.Memory{MemoryKey: store.MemoryKey{Scope: scope}, Runs: runs, Untrusted: untrusted}
	}
	cases := []struct {
		name    string
		m       store.Memory
		rubric  string
		newRun  bool
		minRuns int
		want    bool
	}{
		{"one run", row("task_type", 1, false), "task", true, 2, false},
		{"two distinct runs", row("task_type", 2, false), "task", true, 2, true},
		{"agent scope", row("agent", 2, false), "task", true, 2, true},
		{"org scope", row("org", 3, false), "task", true, 2, true},
		{"same run again", row("task_type", 2, false), "task", false, 2, false},
		{"user memory never", row("user", 5, false), "correction", true, 2, false},
		{"min runs 3", row("task_type", 2, false), "task", true, 3, false},
		{"min runs 1", row("task_type", 1, false), "task", true, 1, true},
		{"untrusted single run held", row("task_type", 1, true), "task", true, 1, false},
		{"untrusted confirmed by a second run", row("task_type", 2, true), "task", true, 2, true},
		{"correction promotes at once", row("agent", 1, false), "correction", true, 2, true},
		{"untrusted correction still held", row("agent", 1, true), "correction", true, 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := memory.Recurs(tc.m, tc.rubric, tc.newRun, tc.minRuns); got != tc.want {
				t.Fatalf("Recurs = %v, want %v", got, tc.want)
			}
		})
	}
}

// rig is a real store with reflected runs: each run's reflection answers
// with the artifact it was given.
type rig struct {
	t        *testing.T
	st       *store.Store
	n        int
	answer   string
	refl     *memory.Reflector
	promoter *memory.Promoter
	calls    []curatedCall
	fail     error
	proposed []memory.Procedure
}

type curatedCall struct {
	tool string
	args map[string]any
	key  string
}

func (g *rig) Family() string { return "product" }

func (g *rig) ProposeProcedure(_ context.Context, p memory.Procedure) (string, error) {
	g.proposed = append(g.proposed, p)
	return "created", g.fail
}

func newRig(t *testing.T, o memory.PromoterOptions) *rig {
	g := &rig{t: t, st: openStore(t)}
	o.Store = g.st
	if o.CuratedTool == "" {
		o.CuratedTool = "product__learning_write"
	}
	o.Call = func(_ context.Context, tool string, args map[string]any, key string) (string, error) {
		g.calls = append(g.calls, curatedCall{tool, args, key})
		if g.fail != nil {
			return "", g.fail
		}
		return "proposal accepted", nil
	}
	o.Capability = g
	g.promoter = memory.NewPromoter(o)
	g.refl = memory.NewReflector(memory.ReflectorOptions{Store: g.st, Namespace: "ns", AgentID: "agent",
		Utility: func(context.Context, model.Request) (model.Response, error) {
			return model.Response{Text: g.answer}, nil
		}, Stage: g.promoter.Stage})
	return g
}

// reflect finishes one run of owner and task type with reflection owed and
// drains it, the reflection answering with the lesson.
func (g *rig) reflect(owner, taskType, kind, content string) string {
	g.t.Helper()
	ctx := context.Background()
	g.n++
	id := fmt.Sprintf("resp_%d", g.n)
	req := fmt.Sprintf(`{"input":"draft","metadata":{"task_type":%q}}`, taskType)
	if _, _, _, err := g.st.CreateRun(ctx, store.NewRun{ID: id, SessionID: "sess_" + id, Owner: owner, Request: json.RawMessage(req)}); err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.st.FinishReflecting(ctx, id, store.StatusDone, json.RawMessage(`{}`), ""); err != nil {
		g.t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"kind": kind, "content": content, "confidence": 0.85})
	g.answer = string(b)
	if err := g.refl.Drain(ctx); err != nil {
		g.t.Fatal(err)
	}
	return id
}

func (g *rig) promotions() []store.Promotion {
	g.t.Helper()
	ps, err := g.st.Promotions(context.Background())
	if err != nil {
		g.t.Fatal(err)
	}
	return ps
}

func (g *rig) drain() {
	g.t.Helper()
	if err := g.promoter.Drain(context.Background()); err != nil {
		g.t.Fatal(err)
	}
}

// TestPromotionOutboxStagesOnceAndSendsOnce: the same lesson (differing
// only in case and spacing) from a second distinct run stages one row, in
// the reflection's transaction; a third confirmation stages nothing more; a
// paraphrase is another lesson; user memory never stages. Draining sends one
// call with the writeShape rendered and the idempotency key, and a second
// drain sends nothing.
func TestPromotionOutboxStagesOnceAndSendsOnce(t *testing.T) {
	shape := []byte(`{"summary":"{{summary}}","details":"{{brief}}","provenance":{"key":"{{run_ref_key}}","value":"{{run_id}}"},` +
		`"items":[{"kind":"{{target_kind}}","source_kind":"{{kind}}","content":"{{content}}","confidence":"{{confidence}}","missing":"{{nothing}}"}]}`)
	g := newRig(t, memory.PromoterOptions{Shape: shape, RunRefKey: "run_ref", TargetKind: "note"})
	g.reflect("", "jd-generation", "pitfall", "Lead with the role's scope; cut adjectives.")
	if ps := g.promotions(); len(ps) != 0 {
		t.Fatalf("staged after one run: %+v", ps)
	}
	second := g.reflect("", "jd-generation", "pitfall", "  lead with the ROLE'S scope;   cut adjectives. ")
	ps := g.promotions()
	if len(ps) != 1 || ps[0].State != store.PromotionStaged || ps[0].Runs != 2 || ps[0].RunID != second || ps[0].Target != store.PromotionCurated {
		t.Fatalf("after the second run: %+v", ps)
	}
	mems, _ := g.st.Memories(context.Background())
	if len(mems) != 1 || !mems[0].Protected {
		t.Fatalf("the staged lesson's memory row is not protected from the cap: %+v", mems)
	}
	g.reflect("", "jd-generation", "pitfall", "Lead with the role's scope; cut adjectives.")
	g.reflect("", "jd-generation", "pitfall", "Open with the scope of the role and drop adjectives.") // a paraphrase
	g.reflect("", "jd-generation", "pitfall", "Open with the scope of the role and drop adjectives.")
	g.reflect("alice", "jd-generation", "fact", "Alice likes tables.")
	g.reflect("alice", "jd-generation", "fact", "Alice likes tables.")
	if ps := g.promotions(); len(ps) != 2 || ps[1].Content != "Open with the scope of the role and drop adjectives." {
		t.Fatalf("want the lesson and its paraphrase staged, user memory never: %+v", ps)
	}

	g.drain()
	g.drain()
	if len(g.calls) != 2 {
		t.Fatalf("%d calls, want one per staged row", len(g.calls))
	}
	c := g.calls[0]
	want := map[string]any{
		"summary":    "Reflection (pitfall) from run " + second,
		"details":    "Post-task reflection: a pitfall learned in 2 distinct run(s) of task type jd-generation, confidence 0.85.",
		"provenance": map[string]any{"key": "run_ref", "value": second},
		"items": []any{map[string]any{"kind": "note", "source_kind": "pitfall", "content": "Lead with the role's scope; cut adjectives.",
			"confidence": 0.85}},
	}
	if c.tool != "product__learning_write" || !reflect.DeepEqual(c.args, want) || c.key != ps[0].Key || !strings.HasPrefix(c.key, "prm_") {
		t.Fatalf("call %s %#v key %q\nwant %#v key %q", c.tool, c.args, c.key, want, ps[0].Key)
	}
	for _, p := range g.promotions() {
		if p.State != store.PromotionSent || p.Attempts != 1 {
			t.Fatalf("after the drain: %+v", p)
		}
	}
	evs, _ := g.st.Events(context.Background(), store.EventFilter{})
	names := map[string]int{}
	for _, e := range evs {
		names[e.Name]++
	}
	if names["promotion.staged"] != 2 || names["promotion.sent"] != 2 {
		t.Fatalf("events %v", names)
	}
}

// TestPromotionDefaultEnvelope: without writeShape the call carries the
// built-in envelope under the vocabulary's runRefKey.
func TestPromotionDefaultEnvelope(t *testing.T) {
	g := newRig(t, memory.PromoterOptions{RunRefKey: "ticket_run", TargetKind: "guideline"})
	g.reflect("", "", "fact", "Invoices go out on the 1st.")
	id := g.reflect("", "", "fact", "Invoices go out on the 1st.")
	g.drain()
	want := map[string]any{"summary": "Reflection (fact) from run " + id,
		"details":    "Post-task reflection: a fact learned in 2 distinct run(s), confidence 0.85.",
		"ticket_run": id,
		"items":      []any{map[string]any{"kind": "guideline", "content": "Invoices go out on the 1st.", "confidence": 0.85}}}
	if len(g.calls) != 1 || !reflect.DeepEqual(g.calls[0].args, want) {
		t.Fatalf("calls %#v\nwant %#v", g.calls, want)
	}
}

// TestPromotionRetriesOnlyOnDrainThenTerminal: a failing tool is retried
// once per drain (no timer), five attempts in all, then the row is
// terminal, its memory row unprotected, and no further call is made.
func TestPromotionRetriesOnlyOnDrainThenTerminal(t *testing.T) {
	g := newRig(t, memory.PromoterOptions{})
	g.fail = errors.New("error: the product is down")
	g.reflect("", "ops", "pitfall", "Restart the worker before the backfill.")
	g.reflect("", "ops", "pitfall", "Restart the worker before the backfill.")
	for i := 1; i <= 7; i++ {
		g.drain()
		p := g.promotions()[0]
		wantState := store.PromotionStaged
		if i >= memory.PromoteAttempts {
			wantState = store.PromotionFailed
		}
		if p.Attempts != min(i, memory.PromoteAttempts) || p.State != wantState || !strings.Contains(p.LastError, "product is down") {
			t.Fatalf("after drain %d: %+v", i, p)
		}
	}
	if len(g.calls) != memory.PromoteAttempts {
		t.Fatalf("%d calls, want %d", len(g.calls), memory.PromoteAttempts)
	}
	mems, _ := g.st.Memories(context.Background())
	if mems[0].Protected {
		t.Fatal("a terminal promotion still protects its memory row")
	}
	evs, _ := g.st.Events(context.Background(), store.EventFilter{})
	names := map[string]int{}
	for _, e := range evs {
		names[e.Name]++
	}
	if names["promotion.failed"] != memory.PromoteAttempts-1 || names["promotion.terminal"] != 1 {
		t.Fatalf("events %v", names)
	}
}

// TestClaimedPromotionIsDueAgain: an attempt interrupted after its claim
// (a crash) leaves the row claimed; the next drain sends it again with the
// same idempotency key, and the interrupted attempt still counts.
func TestClaimedPromotionIsDueAgain(t *testing.T) {
	g := newRig(t, memory.PromoterOptions{})
	g.reflect("", "ops", "fact", "The backfill takes an hour.")
	g.reflect("", "ops", "fact", "The backfill takes an hour.")
	p := g.promotions()[0]
	if _, err := g.st.ClaimPromotion(context.Background(), p.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	g.drain()
	p = g.promotions()[0]
	if len(g.calls) != 1 || g.calls[0].key != p.Key || p.State != store.PromotionSent || p.Attempts != 2 {
		t.Fatalf("calls %+v, row %+v", g.calls, p)
	}
}

// TestProcedurePromotesToTheCapabilityStore: a recurring procedure goes to
// the skill registry, named after the task type, with a change summary.
func TestProcedurePromotesToTheCapabilityStore(t *testing.T) {
	g := newRig(t, memory.PromoterOptions{})
	g.reflect("", "jd-generation", "procedure", "1. Read the brief. 2. List the scope first.")
	id := g.reflect("", "jd-generation", "procedure", "1. Read the brief. 2. List the scope first.")
	g.drain()
	if len(g.calls) != 0 || len(g.proposed) != 1 {
		t.Fatalf("curated calls %d, procedures %d", len(g.calls), len(g.proposed))
	}
	p := g.proposed[0]
	if p.Name != "jd-generation" || p.Body != "1. Read the brief. 2. List the scope first." ||
		!strings.Contains(p.ChangeSummary, id) || p.Key == "" || p.Description == "" {
		t.Fatalf("procedure %+v", p)
	}
	if ps := g.promotions(); ps[0].Target != store.PromotionCapability || ps[0].Adapter != "product" || ps[0].State != store.PromotionSent {
		t.Fatalf("row %+v", ps[0])
	}
}

// TestPromotionWaitsForItsAdapterToBind: a promotion staged by an earlier
// process whose curated tool is not connected at this boot stays staged;
// binding another tool leaves it stranded; once its own tool binds (the MCP
// server connected late), the next drain sends it exactly once.
func TestPromotionWaitsForItsAdapterToBind(t *testing.T) {
	g := newRig(t, memory.PromoterOptions{})
	g.reflect("", "jd-generation", "pitfall", "Lead with the role's scope; cut adjectives.")
	g.reflect("", "jd-generation", "pitfall", "Lead with the role's scope; cut adjectives.")
	if ps := g.promotions(); len(ps) != 1 || ps[0].Adapter != "product__learning_write" {
		t.Fatalf("staged: %+v", ps)
	}
	var sent []string
	late := memory.NewPromoter(memory.PromoterOptions{Store: g.st,
		Call: func(_ context.Context, tool string, _ map[string]any, _ string) (string, error) {
			sent = append(sent, tool)
			return "proposal accepted", nil
		}})
	if late.Bound() {
		t.Fatal("a promoter with no adapters reports bound")
	}
	ctx := context.Background()
	if err := late.Drain(ctx); err != nil || len(sent) != 0 {
		t.Fatalf("unbound drain sent %v (%v)", sent, err)
	}
	late.Bind("other__learning_write", nil)
	if err := late.Drain(ctx); err != nil || len(sent) != 0 {
		t.Fatalf("a drain bound to another tool sent %v (%v)", sent, err)
	}
	if ps := g.promotions(); ps[0].State != store.PromotionStaged || ps[0].Attempts != 0 {
		t.Fatalf("the stranded row was touched: %+v", ps[0])
	}
	late.Bind("product__learning_write", nil)
	for range 2 {
		if err := late.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(sent) != 1 || sent[0] != "product__learning_write" {
		t.Fatalf("after binding the row's tool: sent %v, want one call", sent)
	}
	if ps := g.promotions(); ps[0].State != store.PromotionSent {
		t.Fatalf("after the send: %+v", ps[0])
	}
}
