package remember_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/remember"
	"github.com/deltaharness/delta/internal/workspace"
)

type fixture struct {
	dir    string
	st     *store.Store
	file   *remember.File
	tool   tool.Tool
	mu     sync.Mutex
	events []event.Event
}

func newFixture(t *testing.T, initial string) *fixture {
	t.Helper()
	dir := t.TempDir()
	if initial != "" {
		if err := os.WriteFile(filepath.Join(dir, "DELTA.md"), []byte(initial), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fx := &fixture{dir: dir, st: st}
	fx.file = remember.New(remember.Options{Files: ws, Store: st, MaxBytes: 3200, Record: func(_ context.Context, e event.Event) {
		fx.mu.Lock()
		defer fx.mu.Unlock()
		fx.events = append(fx.events, e)
	}})
	fx.tool = fx.file.Tool()
	return fx
}

func (fx *fixture) call(t *testing.T, base, content string) tool.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"base": base, "content": content})
	res, err := fx.tool.Run(context.Background(), tool.Call{RunID: "resp_1", SessionID: "s_1", CallID: "c1", Args: args})
	if err != nil {
		t.Fatalf("remember: %v", err)
	}
	return res
}

func (fx *fixture) onDisk(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fx.dir, "DELTA.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (fx *fixture) revisions(t *testing.T) []store.SelfRevision {
	t.Helper()
	list, err := fx.st.SelfRevisions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func (fx *fixture) lastEvent(t *testing.T) map[string]any {
	t.Helper()
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if len(fx.events) == 0 {
		t.Fatal("no event recorded")
	}
	var m map[string]any
	if err := json.Unmarshal(fx.events[len(fx.events)-1].Data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const v1 = "# Persona\n\nMeridian.\n\n# Learned\n\n- Cite sources.\n"

// The first write makes the file and no revision; a changed write keeps the
// replaced content as a revision; an unchanged write keeps none.
func TestRememberKeepsWhatItReplaced(t *testing.T) {
	fx := newFixture(t, "")
	if res := fx.call(t, "", v1); res.IsError || !strings.Contains(res.Text, bundle.SelfVersion(v1)) {
		t.Fatalf("first write = %+v", res)
	}
	if fx.onDisk(t) != v1 || len(fx.revisions(t)) != 0 {
		t.Fatalf("after the first write: file %q, %d revisions; want v1 and none", fx.onDisk(t), len(fx.revisions(t)))
	}
	v2 := v1 + "- Prefer tables for comparisons.\n"
	if res := fx.call(t, bundle.SelfVersion(v1), v2); res.IsError {
		t.Fatalf("second write = %+v", res)
	}
	revs := fx.revisions(t)
	if fx.onDisk(t) != v2 || len(revs) != 1 || revs[0].Content != v1 || revs[0].Source != remember.SourceRemember ||
		revs[0].RunID != "resp_1" || revs[0].ReplacedBy != bundle.SelfVersion(v2) {
		t.Fatalf("after a change: file %q, revisions %+v; want v2 and one revision of v1", fx.onDisk(t), revs)
	}
	if ev := fx.lastEvent(t); ev["outcome"] != "written" || ev["revision_id"] != float64(revs[0].ID) {
		t.Fatalf("event = %v", ev)
	}
	if res := fx.call(t, bundle.SelfVersion(v2), v2); res.IsError || !strings.Contains(res.Text, "nothing was written") {
		t.Fatalf("unchanged write = %+v", res)
	}
	if n := len(fx.revisions(t)); n != 1 {
		t.Fatalf("an unchanged write added a revision: %d", n)
	}
	if ev := fx.lastEvent(t); ev["outcome"] != "unchanged" {
		t.Fatalf("event = %v", ev)
	}
}

// Over the cap: nothing is written, the answer states the overage and
// carries the current file as the merge base.
func TestRememberOverTheCapStatesTheOverageAndReturnsTheFile(t *testing.T) {
	fx := newFixture(t, v1)
	big := v1 + strings.Repeat("x", 3200-len(v1)+17)
	res := fx.call(t, bundle.SelfVersion(v1), big)
	if !res.IsError || !strings.Contains(res.Text, "17 bytes over the 3200-byte cap") || !strings.Contains(res.Text, v1) ||
		!strings.Contains(res.Text, "base "+bundle.SelfVersion(v1)) {
		t.Fatalf("over-cap write = %+v, want a refusal naming 17 bytes over and holding the current file", res)
	}
	if fx.onDisk(t) != v1 || len(fx.revisions(t)) != 0 {
		t.Fatal("an over-cap write changed the file or added a revision")
	}
	if ev := fx.lastEvent(t); ev["outcome"] != "refused" || ev["reason"] != "too_large" || ev["over"] != float64(17) {
		t.Fatalf("event = %v", ev)
	}
	// Exactly at the cap is accepted.
	if res := fx.call(t, bundle.SelfVersion(v1), big[:3200]); res.IsError {
		t.Fatalf("a write of exactly 3200 bytes = %+v", res)
	}
}

// A write based on a version that is no longer on disk is refused with the
// current file; the retry with the returned version goes through.
func TestRememberRefusesADivergedBase(t *testing.T) {
	fx := newFixture(t, v1)
	// Someone else (an operator, a child process) changes the file.
	other := v1 + "- Written by an operator.\n"
	if err := os.WriteFile(filepath.Join(fx.dir, "DELTA.md"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := v1 + "- My lesson.\n"
	res := fx.call(t, bundle.SelfVersion(v1), mine)
	if !res.IsError || !strings.Contains(res.Text, "changed since the version you edited") || !strings.Contains(res.Text, "Written by an operator") {
		t.Fatalf("diverged write = %+v, want a refusal carrying the current file", res)
	}
	if fx.onDisk(t) != other {
		t.Fatal("a diverged write changed the file")
	}
	if ev := fx.lastEvent(t); ev["reason"] != "diverged" {
		t.Fatalf("event = %v", ev)
	}
	// No base while a file exists is a diverged base too.
	if res := fx.call(t, "", mine); !res.IsError || !strings.Contains(res.Text, "changed since") {
		t.Fatalf("a write with no base over an existing file = %+v", res)
	}
	merged := other + "- My lesson.\n"
	if res := fx.call(t, bundle.SelfVersion(other), merged); res.IsError {
		t.Fatalf("the merged retry = %+v", res)
	}
	if fx.onDisk(t) != merged {
		t.Fatal("the merged retry was not written")
	}
}

// Concurrent writes from one base: exactly one wins, the rest are told to
// merge, and the file is one whole candidate.
func TestRememberConcurrentWritersFromOneBase(t *testing.T) {
	fx := newFixture(t, v1)
	var wg sync.WaitGroup
	results := make([]tool.Result, 8)
	for i := range results {
		wg.Go(func() { results[i] = fx.call(t, bundle.SelfVersion(v1), v1+strings.Repeat("-", i+1)+"\n") })
	}
	wg.Wait()
	won := 0
	for _, r := range results {
		if !r.IsError {
			won++
		}
	}
	got := fx.onDisk(t)
	if won != 1 || !strings.HasPrefix(got, v1) || len(fx.revisions(t)) != 1 {
		t.Fatalf("%d writers won (want 1), file %q, %d revisions", won, got, len(fx.revisions(t)))
	}
}

// Restore writes the revision back and keeps what it replaced, so a
// restore can be undone.
func TestRestoreKeepsWhatItReplaced(t *testing.T) {
	fx := newFixture(t, v1)
	v2 := v1 + "- Poisoned lesson.\n"
	if res := fx.call(t, bundle.SelfVersion(v1), v2); res.IsError {
		t.Fatal(res.Text)
	}
	rev := fx.revisions(t)[0]
	w, got, err := fx.file.Restore(context.Background(), rev.ID)
	if err != nil || got.ID != rev.ID || w.Version != bundle.SelfVersion(v1) {
		t.Fatalf("Restore = %+v %+v %v", w, got, err)
	}
	revs := fx.revisions(t)
	if fx.onDisk(t) != v1 || len(revs) != 2 || revs[0].Content != v2 || revs[0].Source != remember.SourceRestore {
		t.Fatalf("after restore: file %q, revisions %+v", fx.onDisk(t), revs)
	}
	fx.mu.Lock()
	last := fx.events[len(fx.events)-1]
	fx.mu.Unlock()
	if last.Name != event.SelfRestore {
		t.Fatalf("last event = %s, want %s", last.Name, event.SelfRestore)
	}
	if _, _, err := fx.file.Restore(context.Background(), 999); err == nil {
		t.Fatal("restoring an unknown revision succeeded")
	}
}

// A DELTA.md blown past its load ceiling: the agent's write is refused
// (it never saw the file), while an operator can still compare and
// restore, the oversized file kept as a revision.
func TestAnUnloadableFileIsRestoredNotMerged(t *testing.T) {
	fx := newFixture(t, v1)
	if res := fx.call(t, bundle.SelfVersion(v1), v1+"- lesson\n"); res.IsError {
		t.Fatal(res.Text)
	}
	huge := strings.Repeat("poison ", bundle.SelfMaxFileBytes/7+10)
	if err := os.WriteFile(filepath.Join(fx.dir, "DELTA.md"), []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	res := fx.call(t, "", v1)
	if !res.IsError || !strings.Contains(res.Text, "load ceiling") || !strings.Contains(res.Text, "Do not retry") {
		t.Fatalf("a write over an unloadable file = %+v", res)
	}
	if ev := fx.lastEvent(t); ev["reason"] != "unloadable" {
		t.Fatalf("event = %v", ev)
	}
	if cur, err := fx.file.Current(); err != nil || cur != huge {
		t.Fatalf("the operator's Current = %d bytes, %v", len(cur), err)
	}
	rev := fx.revisions(t)[0]
	if _, _, err := fx.file.Restore(context.Background(), rev.ID); err != nil {
		t.Fatal(err)
	}
	if fx.onDisk(t) != v1 || fx.revisions(t)[0].Content != huge {
		t.Fatal("the restore did not put v1 back and keep the oversized file")
	}
}
