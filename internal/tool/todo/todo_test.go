package todo_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/todo"
	"github.com/deltaharness/delta/internal/tool/tooltest"
)

func newPlans(t *testing.T, o todo.Options) *todo.Plans {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return todo.New(st, o)
}

func call(t *testing.T, tl tool.Tool, session string, args string) tool.Result {
	t.Helper()
	return tooltest.Run(t, tl, tool.Call{RunID: "r", SessionID: session, CallID: "c", Args: json.RawMessage(args)})
}

func TestPlanIsStoredPerSessionAndReinjected(t *testing.T) {
	p := newPlans(t, todo.Options{})
	tl := p.Tool()
	if !tl.ReadOnly() {
		t.Error("todo must be replayable (read-only) so the safe tier has it")
	}
	res := call(t, tl, "s1", `{"items":[{"text":"read the brief","status":"done"},{"text":" draft reply ","status":"Doing"},{"text":"send","status":"pending"}]}`)
	if res.IsError || !strings.Contains(res.Text, "2. [doing] draft reply") {
		t.Fatalf("result = %+v", res)
	}
	blk := p.Block(context.Background(), "s1")
	for _, want := range []string{todo.BlockPrefix, "1. [done] read the brief", "2. [doing] draft reply", "3. [pending] send", "</delta:todo>"} {
		if !strings.Contains(blk, want) {
			t.Errorf("block lacks %q:\n%s", want, blk)
		}
	}
	if b := p.Block(context.Background(), "s2"); b != "" {
		t.Errorf("another session sees a plan: %q", b)
	}
	// A second call replaces the plan whole.
	call(t, tl, "s1", `{"items":[{"text":"only this","status":"pending"}]}`)
	items, err := p.Get(context.Background(), "s1")
	if err != nil || len(items) != 1 || items[0].Text != "only this" {
		t.Fatalf("after replace: %v %v", items, err)
	}
	// An empty list clears it and the block disappears.
	if res := call(t, tl, "s1", `{"items":[]}`); res.IsError {
		t.Fatalf("clear: %+v", res)
	}
	if b := p.Block(context.Background(), "s1"); b != "" {
		t.Errorf("cleared plan still injected: %q", b)
	}
}

func TestBadInputIsAnErrorResultAndKeepsThePlan(t *testing.T) {
	p := newPlans(t, todo.Options{MaxItems: 3, MaxChars: 20})
	tl := p.Tool()
	call(t, tl, "s", `{"items":[{"text":"keep me","status":"pending"}]}`)
	cases := []struct {
		name, session, args, want string
	}{
		{"not json", "s", `{`, "not valid JSON"},
		{"missing items", "s", `{}`, "items"},
		{"items not a list", "s", `{"items":"x"}`, "items"},
		{"unknown field", "s", `{"items":[],"plan":1}`, "plan"},
		{"empty text", "s", `{"items":[{"text":"  ","status":"pending"}]}`, "items[0].text is empty"},
		{"bad status", "s", `{"items":[{"text":"a","status":"started"}]}`, `items[0].status is "started"`},
		{"missing status", "s", `{"items":[{"text":"a"}]}`, "status"},
		{"line break", "s", `{"items":[{"text":"a\nb","status":"done"}]}`, "line break"},
		{"too many items", "s", `{"items":[{"text":"a","status":"done"},{"text":"b","status":"done"},{"text":"c","status":"done"},{"text":"d","status":"done"}]}`, "4 items"},
		{"too many characters", "s", `{"items":[{"text":"` + strings.Repeat("é", 21) + `","status":"done"}]}`, "21 characters"},
		{"no session", "", `{"items":[]}`, "per session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, tl, tc.session, tc.args)
			if !res.IsError || !strings.Contains(res.Text, tc.want) {
				t.Fatalf("result = %+v, want an error containing %q", res, tc.want)
			}
			items, err := p.Get(context.Background(), "s")
			if err != nil || len(items) != 1 || items[0].Text != "keep me" {
				t.Fatalf("plan changed to %v (%v)", items, err)
			}
		})
	}
	res := call(t, tl, "s", `{"items":[{"text":"`+strings.Repeat("x", 30)+`","status":"done"}]}`)
	if !strings.Contains(res.Text, "workspace file") {
		t.Errorf("over-budget feedback does not say where longer notes go: %q", res.Text)
	}
}

func TestCancelledCallSavesNothing(t *testing.T) {
	p := newPlans(t, todo.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Tool().Run(ctx, tool.Call{SessionID: "s", Args: json.RawMessage(`{"items":[{"text":"a","status":"done"}]}`)})
	if err == nil {
		t.Fatal("cancelled call succeeded")
	}
	if b := p.Block(context.Background(), "s"); b != "" {
		t.Errorf("cancelled call saved a plan: %q", b)
	}
}

// countingStore is the store counting its plan reads; during runs
// between a read and its answer (a write landing meanwhile).
type countingStore struct {
	*store.Store
	reads  int
	during func()
}

func (c *countingStore) TodoPlan(ctx context.Context, sessionID string) (string, error) {
	c.reads++
	raw, err := c.Store.TodoPlan(ctx, sessionID)
	if f := c.during; f != nil {
		c.during = nil
		f()
	}
	return raw, err
}

// plansWithStored is Plans over a counting store whose session s1 already
// has a plan of one pending item.
func plansWithStored(t *testing.T, item string, cache bool) (*todo.Plans, *countingStore) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.SetTodoPlan(context.Background(), "s1", `[{"text":"`+item+`","status":"pending"}]`, time.Now()); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: st}
	return todo.New(cs, todo.Options{Cache: cache}), cs
}

// TestCachedPlansAreReadOnceAndWrittenThrough: with Cache, a session's plan
// is read from the table once and the tool's writes keep the cached copy
// current, so every turn's block shows the latest plan; without it every
// block reads the table.
func TestCachedPlansAreReadOnceAndWrittenThrough(t *testing.T) {
	ctx := context.Background()
	for _, cache := range []bool{true, false} {
		p, cs := plansWithStored(t, "stored before", cache)
		for range 3 {
			if b := p.Block(ctx, "s1"); !strings.Contains(b, "stored before") {
				t.Fatalf("cache %v: block = %q, want the stored plan", cache, b)
			}
		}
		if res := call(t, p.Tool(), "s1", `{"items":[{"text":"written by the tool","status":"doing"}]}`); res.IsError {
			t.Fatalf("cache %v: %+v", cache, res)
		}
		if b := p.Block(ctx, "s1"); !strings.Contains(b, "written by the tool") || strings.Contains(b, "stored before") {
			t.Fatalf("cache %v: block after the write = %q, want only the new plan", cache, b)
		}
		if res := call(t, p.Tool(), "s1", `{"items":[]}`); res.IsError {
			t.Fatalf("cache %v: %+v", cache, res)
		}
		if b := p.Block(ctx, "s1"); b != "" {
			t.Fatalf("cache %v: block after clearing = %q, want none", cache, b)
		}
		want := 5 // every block
		if cache {
			want = 1 // the first block; the writes keep the copy
		}
		if cs.reads != want {
			t.Errorf("cache %v: %d reads of the table, want %d", cache, cs.reads, want)
		}
	}
}

// TestCachedPlanNotKeptFromAReadAWriteOverlapped: a read that a write
// overlapped answers what it read, but is not cached: the next block shows
// the plan written.
func TestCachedPlanNotKeptFromAReadAWriteOverlapped(t *testing.T) {
	ctx := context.Background()
	p, cs := plansWithStored(t, "old plan", true)
	cs.during = func() {
		if err := p.Set(ctx, "s1", []todo.Item{{Text: "new plan", Status: todo.Pending}}); err != nil {
			t.Error(err)
		}
	}
	if b := p.Block(ctx, "s1"); !strings.Contains(b, "old plan") {
		t.Fatalf("the overlapped read's block = %q, want what it read", b)
	}
	if b := p.Block(ctx, "s1"); !strings.Contains(b, "new plan") {
		t.Fatalf("the next block = %q, want the plan written", b)
	}
}
