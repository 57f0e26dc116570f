package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// TestTaskTypeMemoryStaysWithItsAgent: two agents in one namespace serving
// one task type each recall their own task-type lessons (and legacy rows
// written before rows carried an agent), never the other agent's, with or
// without a user in the view.
func TestTaskTypeMemoryStaysWithItsAgent(t *testing.T) {
	s, _ := open(t)
	ctx, now := context.Background(), time.Now()
	put := func(agent, content string) {
		t.Helper()
		_, err := s.PutMemory(ctx, store.MemoryWrite{
			Key:  store.MemoryKey{Namespace: "ns", AgentID: agent, Scope: store.MemoryScopeTaskType, TaskType: "jd-generation"},
			Kind: "fact", Content: content, Norm: content, Confidence: 0.9, Rubric: "task", RunID: "run_" + content, At: now,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("agent-a", "a-lesson")
	put("agent-b", "b-lesson")
	put("", "legacy-lesson")
	for _, tt := range []struct {
		agent, user string
		want        []string
	}{
		{"agent-a", "", []string{"a-lesson", "legacy-lesson"}},
		{"agent-b", "", []string{"b-lesson", "legacy-lesson"}},
		{"agent-a", "alice", []string{"a-lesson", "legacy-lesson"}},
		{"agent-b", "alice", []string{"b-lesson", "legacy-lesson"}},
		{"agent-c", "", []string{"legacy-lesson"}},
	} {
		rows, err := s.VisibleMemories(ctx, store.MemoryView{Namespace: "ns", AgentID: tt.agent, UserID: tt.user,
			TaskType: "jd-generation", Since: now.Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range rows {
			got = append(got, m.Content)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s (user %q) recalls %v, want %v", tt.agent, tt.user, got, tt.want)
		}
	}
}

// TestConfirmingKeepsACorrectionRubric: a lesson a human-review correction
// produced keeps the correction rubric when a plain run confirms it later
// (what the row says produced it, and what a promotion's brief reports),
// and a plain lesson a correction confirms becomes one; each run's own
// rubric stays in the provenance.
func TestConfirmingKeepsACorrectionRubric(t *testing.T) {
	for _, tt := range []struct {
		name    string
		rubrics []string
		want    string
	}{
		{"task then correction", []string{"task", "correction"}, "correction"},
		{"correction then task", []string{"correction", "task"}, "correction"},
		{"correction, task, task", []string{"correction", "task", "task"}, "correction"},
		{"task then task", []string{"task", "task"}, "task"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := open(t)
			ctx, now := context.Background(), time.Now()
			var put store.MemoryPut
			for i, r := range tt.rubrics {
				var err error
				put, err = s.PutMemory(ctx, store.MemoryWrite{
					Key:  store.MemoryKey{Namespace: "ns", AgentID: "ag", Scope: store.MemoryScopeTaskType, TaskType: "jd-generation"},
					Kind: "pitfall", Content: "Lead with scope.", Norm: "lead with scope.", Confidence: 0.8, Rubric: r,
					RunID: fmt.Sprint("run_", i), At: now.Add(time.Duration(i) * time.Second),
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if put.Memory.Runs != len(tt.rubrics) || put.Memory.Rubric != tt.want {
				t.Fatalf("row after %v: %d runs, rubric %q; want %d runs, rubric %q", tt.rubrics, put.Memory.Runs, put.Memory.Rubric, len(tt.rubrics), tt.want)
			}
			prov, err := s.MemoryProvenance(ctx, put.Memory.ID)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range prov {
				if p.Rubric != tt.rubrics[i] {
					t.Errorf("provenance %d: rubric %q, want %q", i, p.Rubric, tt.rubrics[i])
				}
			}
		})
	}
}
