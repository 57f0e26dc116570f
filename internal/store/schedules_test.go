package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

func openSchedules(t *testing.T, path string) *store.Schedules {
	t.Helper()
	st, err := store.OpenSchedules(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestSchedulesFiringLifecycle: a firing is recorded with its schedule's
// advance in one step, only once per due value, survives a reopen, and is
// owed until done or given up.
func TestSchedulesFiringLifecycle(t *testing.T) {
	store.SQLiteOnly(t, "the scheduler keeps its own SQLite file (OpenSchedules), whatever the daemon's backend")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st := openSchedules(t, path)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	due := t0.Add(time.Hour)
	if err := st.CreateSchedule(ctx, store.ScheduleRow{ID: "sch_a", Owner: "alice", Agent: "ag", Kind: "interval", EverySeconds: 3600,
		Input: "x", Status: "active", CreatedAt: t0, NextFireAt: due}); err != nil {
		t.Fatal(err)
	}
	if rows, _ := st.DueSchedules(ctx, due.Add(-time.Second), store.DueCursor{}, 10); len(rows) != 0 {
		t.Fatalf("due before its time: %+v", rows)
	}
	if rows, _ := st.DueSchedules(ctx, due, store.DueCursor{}, 10); len(rows) != 1 {
		t.Fatalf("not due at its time: %+v", rows)
	}
	f := store.FiringRow{ScheduleID: "sch_a", Slot: due, Key: "k1", IntendedAt: due}
	if err := st.IntendFiring(ctx, f, due, due.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A second tick that read the same due value writes nothing.
	if err := st.IntendFiring(ctx, store.FiringRow{ScheduleID: "sch_a", Slot: due, Key: "k1b", IntendedAt: due}, due, due.Add(time.Hour)); !errors.Is(err, store.ErrStale) {
		t.Fatalf("second intend: %v, want ErrStale", err)
	}
	st.Close()
	st = openSchedules(t, path)
	pending, err := st.PendingFirings(ctx, due)
	if err != nil || len(pending) != 1 || pending[0].Key != "k1" || pending[0].State != store.FiringIntended {
		t.Fatalf("after reopen: %+v, %v", pending, err)
	}
	row, _ := st.ScheduleByID(ctx, "sch_a")
	if row.Firings != 1 || !row.NextFireAt.Equal(due.Add(time.Hour)) || !row.LastFireAt.Equal(due) {
		t.Fatalf("schedule not advanced: %+v", row)
	}
	if err := st.FiringRetry(ctx, "k1", "daemon down", due.Add(time.Minute), due); err != nil {
		t.Fatal(err)
	}
	if p, _ := st.PendingFirings(ctx, due.Add(30*time.Second)); len(p) != 0 {
		t.Fatalf("retried before its time: %+v", p)
	}
	if p, _ := st.PendingFirings(ctx, due.Add(time.Minute)); len(p) != 1 || p[0].Attempts != 1 || p[0].LastError != "daemon down" {
		t.Fatalf("retry: %+v", p)
	}
	if err := st.FiringDone(ctx, "k1", "resp_1", due.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if p, _ := st.PendingFirings(ctx, due.Add(time.Hour)); len(p) != 0 {
		t.Fatalf("done firing still owed: %+v", p)
	}
	// Cancel: owner-scoped, then nothing is due.
	if _, err := st.CancelSchedule(ctx, "sch_a", "bob", "ag", due); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob cancels: %v", err)
	}
	if row, err := st.CancelSchedule(ctx, "sch_a", "alice", "ag", due); err != nil || row.Status != "cancelled" || !row.NextFireAt.IsZero() {
		t.Fatalf("alice cancels: %+v, %v", row, err)
	}
	if rows, _ := st.DueSchedules(ctx, due.Add(48*time.Hour), store.DueCursor{}, 10); len(rows) != 0 {
		t.Fatalf("cancelled schedule due: %+v", rows)
	}
	if err := st.IntendFiring(ctx, store.FiringRow{ScheduleID: "sch_a", Slot: due.Add(time.Hour), Key: "k2", IntendedAt: due}, due.Add(time.Hour), time.Time{}); !errors.Is(err, store.ErrStale) {
		t.Fatalf("firing a cancelled schedule: %v", err)
	}
}

// TestSchedulesRefusesANewerSchema: a scheduler database migrated by a
// newer binary is refused, not guessed at.
func TestSchedulesRefusesANewerSchema(t *testing.T) {
	store.SQLiteOnly(t, "the scheduler keeps its own SQLite file (OpenSchedules), whatever the daemon's backend")
	path := filepath.Join(t.TempDir(), "s.db")
	openSchedules(t, path).Close()
	rewrite(t, path, "PRAGMA user_version = 99")
	if _, err := store.OpenSchedules(context.Background(), path); !errors.Is(err, store.ErrSchemaNewer) {
		t.Fatalf("open: %v, want ErrSchemaNewer", err)
	}
}
