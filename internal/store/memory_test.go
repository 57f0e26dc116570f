package store_test

import (
	"context"
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
