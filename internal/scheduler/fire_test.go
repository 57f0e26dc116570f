package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/schedule"
	"github.com/deltaharness/delta/internal/store"
)

// TestUncompilableScheduleIsCancelledNotRetriedForever: a stored schedule
// this binary cannot read is cancelled on the first tick that finds it due,
// and nothing is fired for it.
func TestUncompilableScheduleIsCancelledNotRetriedForever(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	_, st := newServer(t, now)
	ctx := context.Background()
	if err := st.CreateSchedule(ctx, store.ScheduleRow{ID: "sch_bad", Owner: "o", Kind: "cron", Cron: "0 8 * * *", Timezone: "Mars/Olympus",
		Input: "x", Status: schedule.StatusActive, CreatedAt: now.Add(-time.Hour), NextFireAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	s := New(st, Options{DaemonURL: "http://127.0.0.1:1", Now: func() time.Time { return now }})
	if err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	row, err := st.ScheduleByID(ctx, "sch_bad")
	if err != nil || row.Status != schedule.StatusCancelled {
		t.Fatalf("after a tick: %+v, %v", row, err)
	}
	if fs, _ := st.Firings(ctx, "sch_bad"); len(fs) != 0 {
		t.Fatalf("fired: %+v", fs)
	}
}
