package queue_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
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

func (r *recorder) exec(ctx context.Context, h store.RunHead, _ func() bool) {
	id := h.ID
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
		_, _ = r.st.Finish(ctx, id, store.StatusDone, json.RawMessage(`{}`), "") // a run left unfinished fails the test's wait
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
				leases, _ := st.SessionLeases(context.Background())
				t.Fatalf("run %s never finished: status %q (%v); session leases %+v", id, r.Status, err, leases)
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
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
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
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
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
		if err := q.Open(); err != nil {
			t.Fatal(err)
		}
		waitDone(t, st, "a", "b", "c")
		q.Close(context.Background())
		if tt.want == 1 && rec.maxTotal != 1 {
			t.Fatalf("limit %d ran %d at once", tt.in, rec.maxTotal)
		}
	}
}

func TestRunningRowsBeyondLimitResumeBeforeQueued(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	// Three runs were executing when the daemon died; the new one runs a
	// single session at a time.
	for _, id := range []string{"r1", "r2", "r3"} {
		create(t, st, id, "S"+id, "")
		if _, _, err := st.Start(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	create(t, st, "q1", "Q1", "")
	rec := &recorder{st: st, active: map[string]int{}}
	q := queue.New(st, rec.exec, 1, nil)
	q.Poll = time.Hour // no rescue by the safety-net poll: slots freeing must do it
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	waitDone(t, st, "r1", "r2", "r3", "q1")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := []string{"r1", "r2", "r3", "q1"}
	if len(rec.order) != len(want) {
		t.Fatalf("start order %v, want %v", rec.order, want)
	}
	for i := range want {
		if rec.order[i] != want[i] {
			t.Fatalf("start order %v, want %v: leftovers past the limit first, each once", rec.order, want)
		}
	}
}

func TestResumesDurableBeforeAnyRunExecutes(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	ids := []string{"r1", "r2", "r3", "r4"}
	for _, id := range ids {
		create(t, st, id, "S"+id, "")
		if _, _, err := st.Start(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	countResumed := func() int {
		evs, err := st.Events(ctx, store.EventFilter{})
		if err != nil {
			t.Error(err)
		}
		n := 0
		for _, e := range evs {
			if e.Name == event.RunResumed {
				n++
			}
		}
		return n
	}
	var mu sync.Mutex
	var seen []int // run.resumed rows committed when each run began executing
	rec := &recorder{st: st, active: map[string]int{}}
	q := queue.New(st, func(ctx context.Context, h store.RunHead, uc func() bool) {
		n := countResumed()
		mu.Lock()
		seen = append(seen, n)
		mu.Unlock()
		rec.exec(ctx, h, uc)
	}, len(ids), nil)
	q.Poll = 10 * time.Millisecond
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	waitDone(t, st, ids...)
	mu.Lock()
	defer mu.Unlock()
	for i, n := range seen {
		if n != len(ids) {
			t.Fatalf("execution %d began with %d run.resumed rows committed, want all %d", i, n, len(ids))
		}
	}
	// The batch wrote each resume; the runs' own Start wrote none.
	if n := countResumed(); n != len(ids) {
		t.Fatalf("%d run.resumed events, want exactly one per run (%d)", n, len(ids))
	}
	for _, id := range ids {
		r, _ := st.Run(ctx, id)
		if r.Attempts != 2 {
			t.Fatalf("run %s attempts = %d, want 2", id, r.Attempts)
		}
	}
}

// hookedStore runs a hook inside ResumeRuns, before the batch is written.
type hookedStore struct {
	*store.Store
	beforeResume func(ids []string)
}

func (h hookedStore) ResumeRuns(ctx context.Context, ids []string) ([]event.Event, error) {
	h.beforeResume(ids)
	return h.Store.ResumeRuns(ctx, ids)
}

func TestCancelWhileResumesAreWritten(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	create(t, st, "r1", "S1", "")
	if _, _, err := st.Start(ctx, "r1", nil); err != nil {
		t.Fatal(err)
	}
	var q *queue.Queue
	cancelled := make(chan bool, 1)
	hs := hookedStore{Store: st, beforeResume: func([]string) {
		// What engine.Service.Cancel does: the queue first, and when the
		// run is not executing, the terminal state directly.
		executing := q.Cancel("r1")
		if !executing {
			if _, err := st.Finish(ctx, "r1", store.StatusCancelled, json.RawMessage(`{}`), "cancelled by request"); err != nil {
				t.Error(err)
			}
		}
		cancelled <- executing
	}}
	rec := &recorder{st: st, active: map[string]int{}}
	q = queue.New(hs, rec.exec, 2, nil)
	q.Poll = 10 * time.Millisecond
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	if <-cancelled {
		t.Fatal("the run held a slot while its resume was being written: the cancel would rely on an execution not yet started")
	}
	waitDone(t, st, "r1")
	r, _ := st.Run(ctx, "r1")
	evs, _ := st.Events(ctx, store.EventFilter{RunID: "r1"})
	finished := 0
	for _, e := range evs {
		if e.Name == event.RunFinished {
			finished++
		}
	}
	if r.Status != store.StatusCancelled || finished != 1 {
		t.Fatalf("run %s with %d run.finished, want cancelled with exactly one", r.Status, finished)
	}
}
