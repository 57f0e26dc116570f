package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/memory"
	"github.com/deltaharness/delta/internal/store"
)

// BenchmarkRecallAtSessionOpen: recall for one run (its user's rows, its
// task type's and the agent's, ranked and marked used) with 200 rows for
// each of 10,000 users in the table, plus 200 task-type and 200 agent rows.
// It reports the 95th percentile of single recalls as p95-ms (ns/op
// includes recording the use, which the daemon does in the background).
func BenchmarkRecallAtSessionOpen(b *testing.B) {
	store.SQLiteOnly(b, "fills the SQLite file through its own connection")
	const users, perIdentity = 10_000, store.MemoryCap
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "delta.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO memories (namespace, agent_id, scope, user_id, task_type, kind, content, norm, aliases,
		confidence, rubric, untrusted, runs, uses, created_at, confirmed_at, used_at) VALUES ('ns', 'ag', ?, ?, ?, 'fact', ?, ?, '', ?, 'task', 0, 1, 0, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	words := []string{"scope", "billing", "engineer", "adjectives", "bullet", "revenue", "citations", "draft", "review", "salary"}
	now := time.Now().UnixMilli()
	add := func(scope, user, task string, i int) {
		c := fmt.Sprintf("lesson %d: %s %s %s", i, words[i%10], words[(i/10)%10], words[(i/100)%10])
		if _, err := ins.Exec(scope, user, task, c, c, 0.6+float64(i%40)/100, now, now, now); err != nil {
			b.Fatal(err)
		}
	}
	for u := range users {
		for i := range perIdentity {
			add(store.MemoryScopeUser, fmt.Sprintf("u%d", u), "jd-generation", i)
		}
	}
	for i := range perIdentity {
		add(store.MemoryScopeTaskType, "", "jd-generation", i)
		add(store.MemoryScopeAgent, "", "", i)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	db.Close()
	s, err = store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	task := "Draft the job description for a billing engineer; lead with scope."
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		v := store.MemoryView{Namespace: "ns", AgentID: "ag", UserID: fmt.Sprintf("u%d", rand.IntN(users)), TaskType: "jd-generation"}
		t0 := time.Now()
		rows, n, err := memory.Recall(ctx, s, v, task, time.Now())
		lat = append(lat, time.Since(t0))
		if err != nil || len(rows) != memory.RecallLimit || n != 3*perIdentity {
			b.Fatalf("recall: %d rows of %d, %v", len(rows), n, err)
		}
		// The use is recorded off the session-open path, as the daemon
		// does, but inside the loop, so the table sees its writes.
		if err := memory.Use(ctx, s, rows, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var vis []time.Duration
	for range 500 {
		v := store.MemoryView{Namespace: "ns", AgentID: "ag", UserID: fmt.Sprintf("u%d", rand.IntN(users)), TaskType: "jd-generation", Since: time.Now().Add(-time.Hour)}
		t0 := time.Now()
		_, _ = s.VisibleMemories(ctx, v)
		vis = append(vis, time.Since(t0))
	}
	slices.Sort(vis)
	b.ReportMetric(float64(vis[len(vis)/2].Microseconds())/1000, "visible-p50-ms")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}
