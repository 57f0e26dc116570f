package memory_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/memory"
	"github.com/deltaharness/delta/internal/store"
)

// TestRankKeepsTheBestInOrder: Rank keeps only the best few rows, so it
// must pick the same rows in the same order as ranking all of them would:
// rows sharing the task's words first, and among equal scores the older ID.
func TestRankKeepsTheBestInOrder(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	words := []string{"billing", "engineer", "scope", "draft", "review", "salary", "bullet"}
	r := rand.New(rand.NewPCG(1, 2))
	var rows []store.Memory
	for i := range 300 {
		// Many exact ties: confidence and age take few values.
		rows = append(rows, store.Memory{
			ID:         int64(i + 1),
			Content:    fmt.Sprintf("%s %s", words[r.IntN(len(words))], words[r.IntN(len(words))]),
			Confidence: 0.6 + float64(r.IntN(3))/10,
			Confirmed:  now.Add(-time.Duration(r.IntN(3)) * 24 * time.Hour),
		})
	}
	task := "Draft the billing engineer job"
	all := memory.Rank(rows, task, now, len(rows))
	if len(all) != len(rows) {
		t.Fatalf("ranking all: %d rows of %d", len(all), len(rows))
	}
	for _, limit := range []int{1, 5, 17} {
		got := memory.Rank(rows, task, now, limit)
		if len(got) != limit {
			t.Fatalf("limit %d: %d rows", limit, len(got))
		}
		for i := range got {
			if got[i].ID != all[i].ID {
				t.Fatalf("limit %d: row %d is %d, ranking all puts %d there", limit, i, got[i].ID, all[i].ID)
			}
		}
	}
	// The full ranking is ordered: relevant rows first, ties by ID.
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.Content == b.Content && a.Confidence == b.Confidence && a.Confirmed.Equal(b.Confirmed) && a.ID > b.ID {
			t.Fatalf("equal rows %d and %d out of ID order", a.ID, b.ID)
		}
	}
	if top := all[0].Content; top != "billing engineer" && top != "engineer billing" && top != "draft billing" && top != "billing draft" && top != "draft engineer" && top != "engineer draft" {
		t.Fatalf("best row %q shares fewer than two words with the task", top)
	}
	if got := memory.Rank(rows, task, now, 0); len(got) != 0 {
		t.Fatalf("limit 0: %d rows", len(got))
	}
}
