package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
)

// fleet records the executions of several workers on one database.
type fleet struct {
	mu      sync.Mutex
	ran     map[string]int    // run id → executions
	by      map[string]string // run id → worker
	order   map[string][]string
	active  map[string]int       // session → executing runs, across workers
	began   map[string]time.Time // run id → when its last execution began
	errs    []string             // store writes that failed, which leave a run to run again
	maxSess int
}

func (f *fleet) exec(worker string, st *store.Store) queue.Executor {
	return func(ctx context.Context, h store.RunHead, _ func() bool) {
		id := h.ID
		run, err := st.Run(ctx, id)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.ran[id]++
		f.by[id] = worker
		f.began[id] = time.Now()
		f.order[run.SessionID] = append(f.order[run.SessionID], id)
		f.active[run.SessionID]++
		f.maxSess = max(f.maxSess, f.active[run.SessionID])
		f.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		_, _, err = st.Start(ctx, id, nil)
		if err == nil {
			_, err = st.Finish(ctx, id, store.StatusDone, json.RawMessage(`{}`), "")
		}
		f.mu.Lock()
		if err != nil && ctx.Err() == nil {
			f.errs = append(f.errs, fmt.Sprintf("%s on %s: %v", id, worker, err))
		}
		f.active[run.SessionID]--
		f.mu.Unlock()
	}
}

func newFleet() *fleet {
	return &fleet{ran: map[string]int{}, by: map[string]string{}, order: map[string][]string{}, active: map[string]int{}, began: map[string]time.Time{}}
}

// sharedWorker opens its own store on path and a shared queue on it.
func sharedWorker(t *testing.T, path, holder string, ttl time.Duration, f *fleet, max int) (*store.Store, *queue.Queue) {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	q := queue.New(st, f.exec(holder, st), max, nil)
	q.Poll = 10 * time.Millisecond
	q.Share(st, holder, ttl)
	return st, q
}

// TestSharedWorkersRunEachRunOnceInSessionOrder: two workers on one
// database run every run exactly once, a session's runs one at a time and
// in acceptance order whichever worker takes them, and give every session
// lease up once its session has nothing left to run.
func TestSharedWorkersRunEachRunOnceInSessionOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	f := newFleet()
	st1, q1 := sharedWorker(t, path, "w1", time.Minute, f, 3)
	_, q2 := sharedWorker(t, path, "w2", time.Minute, f, 3)
	var ids []string
	want := map[string][]string{}
	for s := range 8 {
		prev := ""
		for k := range 4 {
			id := fmt.Sprintf("r%d_%d", s, k)
			sess := ""
			if prev == "" {
				sess = fmt.Sprintf("S%d", s)
			}
			create(t, st1, id, sess, prev)
			want[fmt.Sprintf("S%d", s)] = append(want[fmt.Sprintf("S%d", s)], id)
			ids = append(ids, id)
			prev = id
		}
	}
	for _, q := range []*queue.Queue{q1, q2} {
		if err := q.Open(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close(context.Background()) })
	}
	waitDone(t, st1, ids...)
	f.mu.Lock()
	for _, id := range ids {
		if f.ran[id] != 1 {
			t.Fatalf("run %s executed %d times, want once (failed store writes: %v)", id, f.ran[id], f.errs)
		}
	}
	if f.maxSess != 1 {
		t.Fatalf("a session ran %d runs at once across workers, want 1", f.maxSess)
	}
	for s, order := range want {
		if fmt.Sprint(f.order[s]) != fmt.Sprint(order) {
			t.Fatalf("session %s ran %v, want %v", s, f.order[s], order)
		}
	}
	f.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		leases, err := st1.SessionLeases(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(leases) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session leases still held with nothing to run: %+v", leases)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSharedWorkerTakesOverAfterTheTTL: a session a dead worker left
// leased, its run running, is taken by a live worker only after the lease
// expired, and the run resumes as after a restart (a counted attempt and a
// run.resumed event).
func TestSharedWorkerTakesOverAfterTheTTL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	f := newFleet()
	const ttl = 300 * time.Millisecond
	st, q := sharedWorker(t, path, "alive", ttl, f, 2)
	create(t, st, "d1", "D", "")
	claimedAt := time.Now()
	claimed, err := st.ClaimRuns(ctx, "dead", ttl, claimedAt, 1, nil)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("dead worker's claim: %v, %v", claimed, err)
	}
	if _, _, err := st.Start(ctx, "d1", nil); err != nil { // executing when the worker died
		t.Fatal(err)
	}
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	waitDone(t, st, "d1")
	f.mu.Lock()
	ran, by := f.ran["d1"], f.by["d1"]
	f.mu.Unlock()
	if ran != 1 || by != "alive" {
		t.Fatalf("d1 executed %d times by %q, want once by the live worker", ran, by)
	}
	r, err := st.Run(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 2 {
		t.Fatalf("d1 attempts %d, want 2 (resumed)", r.Attempts)
	}
	resumed, err := st.Events(ctx, store.EventFilter{RunID: "d1"})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, e := range resumed {
		if e.Name == "run.resumed" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d run.resumed events, want 1", n)
	}
	f.mu.Lock()
	began := f.began["d1"]
	f.mu.Unlock()
	if expiry := claimedAt.Add(ttl); began.Before(expiry) {
		t.Fatalf("the live worker began d1 at %s, before the dead worker's lease expired at %s", began, expiry)
	}
}

// TestSharedWorkerCancelsAtTheHeartbeat: a cancel requested through
// another handle on the database, with no notification reaching this
// worker (SQLite sends none), interrupts the run executing here at the
// next lease heartbeat, as a cancel request (userCancel true), not as a
// shutdown.
func TestSharedWorkerCancelsAtTheHeartbeat(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	other, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	started := make(chan struct{})
	ended := make(chan bool, 1)
	exec := func(ctx context.Context, h store.RunHead, userCancel func() bool) {
		id := h.ID
		if _, _, err := st.Start(ctx, id, nil); err != nil {
			t.Errorf("start %s: %v", id, err)
			return
		}
		close(started)
		<-ctx.Done() // a tool call that runs until it is interrupted
		ended <- userCancel()
		_, _ = st.Finish(context.WithoutCancel(ctx), id, store.StatusCancelled, json.RawMessage(`{}`), "cancelled by request")
	}
	q := queue.New(st, exec, 2, nil)
	q.Share(st, "w1", 300*time.Millisecond)
	create(t, st, "c1", "C", "")
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the run never started")
	}
	if err := other.RequestCancel(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	select {
	case user := <-ended:
		if !user {
			t.Fatal("the run was interrupted as a shutdown, want a cancel request")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a cancel requested elsewhere never interrupted the run executing here")
	}
	waitDone(t, st, "c1")
}

// failingRelease is a store whose first session release fails, as on a
// dropped connection.
type failingRelease struct {
	*store.Store
	failed atomic.Bool
}

func (f *failingRelease) ReleaseSessions(ctx context.Context, sessionIDs []string, holder string) error {
	if len(sessionIDs) > 0 && f.failed.CompareAndSwap(false, true) {
		return errors.New("connection reset")
	}
	return f.Store.ReleaseSessions(ctx, sessionIDs, holder)
}

// TestSharedWorkerRetriesAFailedRelease: a session whose release failed
// once is given up at a later dispatch, not left to the other workers
// only after the TTL.
func TestSharedWorkerRetriesAFailedRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	f := newFleet()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fr := &failingRelease{Store: st}
	q := queue.New(st, f.exec("w1", st), 2, nil)
	q.Poll = 10 * time.Millisecond
	q.Share(fr, "w1", time.Hour)
	create(t, st, "a1", "A", "")
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
	defer q.Close(context.Background())
	waitDone(t, st, "a1")
	deadline := time.Now().Add(10 * time.Second) // a hang guard: the TTL is an hour
	for {
		leases, err := st.SessionLeases(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(leases) == 0 && fr.failed.Load() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leases %+v still held (a release failed: %v)", leases, fr.failed.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
