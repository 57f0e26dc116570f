package queue_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
)

// recorder is an Executor that records start order and the largest number
// of runs of one session, and of all sessions, executing at once.
type recorder struct {
	st       *store.Store
	mu       sync.Mutex
	order    []string
	active   map[string]int // session → executing runs
	running  int
	maxSess  int
	maxTotal int
	hold     time.Duration
}

func (r *recorder) exec(ctx context.Context, id string, _ func() bool) {
	run, _ := r.st.Run(ctx, id)
	r.mu.Lock()
	r.order = append(r.order, id)
	r.active[run.SessionID]++
	r.running++
	r.maxSess = max(r.maxSess, r.active[run.SessionID])
	r.maxTotal = max(r.maxTotal, r.running)
	r.mu.Unlock()
	time.Sleep(r.hold)
	if _, _, err := r.st.Start(ctx, id, nil); err == nil {
		r.st.Finish(ctx, id, store.StatusDone, json.RawMessage(`{}`), "")
	}
	r.mu.Lock()
	r.active[run.SessionID]--
	r.running--
	r.mu.Unlock()
}

func openStore(t *testing.T) *store.Store {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func create(t *testing.T, st *store.Store, id, session, prev string) {
	t.Helper()
	if _, _, _, err := st.CreateRun(context.Background(), store.NewRun{ID: id, SessionID: session, PreviousID: prev, Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

func waitDone(t *testing.T, st *store.Store, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		for {
			r, err := st.Run(context.Background(), id)
			if err == nil && store.Terminal(r.Status) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s never finished", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestSessionsSerialAndConcurrencyBounded(t *testing.T) {
	st := openStore(t)
	// Three sessions: A has three runs chained, B and C one each.
	create(t, st, "a1", "A", "")
	create(t, st, "a2", "", "a1")
	create(t, st, "a3", "", "a2")
	create(t, st, "b1", "B", "")
	create(t, st, "c1", "C", "")
	rec := &recorder{st: st, active: map[string]int{}, hold: 30 * time.Millisecond}
	q := queue.New(st, rec.exec, 2, nil)
	q.Poll = 10 * time.Millisecond
	q.Open()
	defer q.Close(context.Background())
	waitDone(t, st, "a1", "a2", "a3", "b1", "c1")
	if rec.maxSess != 1 {
		t.Fatalf("a session ran %d runs at once, want 1", rec.maxSess)
	}
	if rec.maxTotal != 2 {
		t.Fatalf("max concurrent runs = %d, want exactly the limit 2", rec.maxTotal)
	}
	pos := map[string]int{}
	for i, id := range rec.order {
		pos[id] = i
	}
	if !(pos["a1"] < pos["a2"] && pos["a2"] < pos["a3"]) {
		t.Fatalf("session order broken: %v", rec.order)
	}
}

func TestRunningRowsResumeBeforeQueued(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	create(t, st, "q1", "Q1", "")
	create(t, st, "q2", "Q2", "")
	create(t, st, "r1", "R1", "")
	// r1 was executing when the daemon died.
	if _, _, err := st.Start(ctx, "r1", nil); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{st: st, active: map[string]int{}}
	q := queue.New(st, rec.exec, 1, nil)
	q.Poll = 10 * time.Millisecond
	q.Open()
	defer q.Close(ctx)
	waitDone(t, st, "r1", "q1", "q2")
	if len(rec.order) != 3 || rec.order[0] != "r1" || rec.order[1] != "q1" {
		t.Fatalf("start order %v, want r1 (resumed) first, then q1, q2", rec.order)
	}
}

func TestClampConcurrency(t *testing.T) {
	for _, tt := range []struct{ in, want int }{{0, 1}, {-5, 1}, {8, 8}, {1000, 256}} {
		st := openStore(t)
		for i := 0; i < 3; i++ {
			create(t, st, string(rune('a'+i)), string(rune('A'+i)), "")
		}
		rec := &recorder{st: st, active: map[string]int{}, hold: 20 * time.Millisecond}
		q := queue.New(st, rec.exec, tt.in, nil)
		q.Poll = 10 * time.Millisecond
		q.Open()
		waitDone(t, st, "a", "b", "c")
		q.Close(context.Background())
		if tt.want == 1 && rec.maxTotal != 1 {
			t.Fatalf("limit %d ran %d at once", tt.in, rec.maxTotal)
		}
	}
}
