package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

func addEvents(t *testing.T, s *store.Store, n int, at time.Time) []int64 {
	t.Helper()
	evs := make([]event.Event, n)
	for i := range evs {
		evs[i] = event.New("r1", "s1", event.Recall, map[string]int{"i": i})
		evs[i].Time = at
	}
	if err := s.AddEvents(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i := range evs {
		ids[i] = evs[i].ID
	}
	return ids
}

func TestTelemetryOutboxIdentityAndMark(t *testing.T) {
	ctx := context.Background()
	s, path := open(t)
	o, err := s.TelemetryOutbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.DaemonID) != 36 || o.Exported != 0 || o.Backlog != 0 || !o.Oldest.IsZero() {
		t.Fatalf("fresh outbox %+v", o)
	}
	at := time.UnixMilli(1_700_000_000_000).UTC()
	ids := addEvents(t, s, 5, at)
	if err := s.MarkExported(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkExported(ctx, ids[0]); err != nil { // never moves back
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	o2, err := s2.TelemetryOutbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o2.DaemonID != o.DaemonID || o2.Exported != ids[2] || o2.Backlog != 2 || !o2.Oldest.Equal(at) {
		t.Fatalf("after reopen %+v, want id %s, exported %d, backlog 2, oldest %v", o2, o.DaemonID, ids[2], at)
	}
}

func TestTrimOutboxDeletesExportedFirst(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		exported, total, limit int
		wantExported, wantDrop int64
	}{
		{exported: 0, total: 10, limit: 10},                               // at the cap: nothing
		{exported: 6, total: 10, limit: 8, wantExported: 2},               // exported rows cover the excess
		{exported: 2, total: 10, limit: 5, wantExported: 2, wantDrop: 3},  // backlog 8 > 5: oldest 3 unexported dropped
		{exported: 0, total: 10, limit: 4, wantExported: 0, wantDrop: 6},  // nothing exported yet
		{exported: 10, total: 10, limit: 3, wantExported: 7, wantDrop: 0}, // all exported
	} {
		t.Run(fmt.Sprintf("%d/%d/%d", tc.exported, tc.total, tc.limit), func(t *testing.T) {
			s, _ := open(t)
			if _, err := s.TelemetryOutbox(ctx); err != nil {
				t.Fatal(err)
			}
			ids := addEvents(t, s, tc.total, time.Now())
			if tc.exported > 0 {
				if err := s.MarkExported(ctx, ids[tc.exported-1]); err != nil {
					t.Fatal(err)
				}
			}
			tr, err := s.TrimOutbox(ctx, int64(tc.limit))
			if err != nil {
				t.Fatal(err)
			}
			if tr.Exported != tc.wantExported || tr.Dropped != tc.wantDrop {
				t.Fatalf("trim %+v, want exported %d dropped %d", tr, tc.wantExported, tc.wantDrop)
			}
			left, err := s.Events(ctx, store.EventFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != min(tc.total, tc.limit) {
				t.Fatalf("%d events left, want %d", len(left), min(tc.total, tc.limit))
			}
			// What survives is always the newest rows.
			if left[len(left)-1].ID != ids[len(ids)-1] {
				t.Fatalf("the newest event was deleted")
			}
			o, _ := s.TelemetryOutbox(ctx)
			if o.Dropped != tc.wantDrop {
				t.Fatalf("dropped %d, want %d", o.Dropped, tc.wantDrop)
			}
		})
	}
}

func TestSweepKeepsUnexportedEvents(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if _, err := s.TelemetryOutbox(ctx); err != nil {
		t.Fatal(err)
	}
	ids := addEvents(t, s, 4, time.Now().Add(-48*time.Hour))
	if err := s.MarkExported(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	r, err := s.Sweep(ctx, time.Now(), time.Now(), store.Keep{Unexported: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Events != 2 {
		t.Fatalf("sweep removed %d events, want the 2 exported", r.Events)
	}
	left, _ := s.Events(ctx, store.EventFilter{})
	if len(left) != 2 || left[0].ID != ids[2] {
		t.Fatalf("left %v", left)
	}
	if r, _ := s.Sweep(ctx, time.Now(), time.Now(), store.Keep{}); r.Events != 2 {
		t.Fatalf("without telemetry the sweep removed %d, want 2", r.Events)
	}
}

// The OTLP lane's mark is its own: it counts finished runs above it, never
// moves back, and the NDJSON mark does not move it.
func TestTraceOutboxCountsFinishedRunsAboveItsMark(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	evs := []event.Event{
		event.New("r1", "s1", event.RunStarted, nil), event.New("r1", "s1", event.RunFinished, nil),
		event.New("r2", "s1", event.RunStarted, nil), event.New("r2", "s1", event.RunFinished, nil),
	}
	if err := s.AddEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	o, err := s.TraceOutbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.DaemonID) != 36 || o.Traced != 0 || o.Pending != 2 {
		t.Fatalf("fresh trace outbox %+v", o)
	}
	if err := s.MarkExported(ctx, evs[3].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkTraced(ctx, evs[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkTraced(ctx, evs[0].ID); err != nil { // never moves back
		t.Fatal(err)
	}
	if o, err = s.TraceOutbox(ctx); err != nil || o.Traced != evs[1].ID || o.Pending != 1 {
		t.Fatalf("after marking run 1: %+v %v", o, err)
	}
	ends, err := s.Events(ctx, store.EventFilter{Since: o.Traced, Name: event.RunFinished})
	if err != nil || len(ends) != 1 || ends[0].RunID != "r2" {
		t.Fatalf("finished runs above the mark: %+v %v", ends, err)
	}
}

// With the OTLP lane on, an old event above its cursor stays until the
// run's trace left; with both lanes on the lower mark decides.
func TestSweepKeepsUntracedEvents(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if _, err := s.TraceOutbox(ctx); err != nil { // as the lane does at start
		t.Fatal(err)
	}
	ids := addEvents(t, s, 4, time.Now().Add(-48*time.Hour))
	if err := s.MarkTraced(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkExported(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Sweep(ctx, time.Now(), time.Now(), store.Keep{Unexported: true, Untraced: true}); err != nil || r.Events != 1 {
		t.Fatalf("both lanes: sweep removed %d events (%v), want the 1 below both marks", r.Events, err)
	}
	if r, _ := s.Sweep(ctx, time.Now(), time.Now(), store.Keep{Untraced: true}); r.Events != 0 {
		t.Fatalf("the OTLP lane alone: sweep removed %d, want 0 (the rest is above its cursor)", r.Events)
	}
	if r, _ := s.Sweep(ctx, time.Now(), time.Now(), store.Keep{Unexported: true}); r.Events != 2 {
		t.Fatalf("the NDJSON lane alone: sweep removed %d, want the 2 up to its mark", r.Events)
	}
}
