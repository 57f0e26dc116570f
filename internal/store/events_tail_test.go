package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// collector gathers what a tail hands on.
type collector struct {
	mu  sync.Mutex
	evs []event.Event
	got chan struct{}
}

func newCollector() *collector { return &collector{got: make(chan struct{}, 1)} }

func (c *collector) deliver(e event.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, e)
	c.mu.Unlock()
	select {
	case c.got <- struct{}{}:
	default:
	}
}

func (c *collector) snapshot() []event.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event.Event(nil), c.evs...)
}

// waitFor waits until ok holds on what was collected.
func (c *collector) waitFor(t *testing.T, what string, ok func([]event.Event) bool) []event.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if evs := c.snapshot(); ok(evs) {
			return evs
		}
		select {
		case <-c.got:
		case <-deadline:
			t.Fatalf("tail: %s not seen; have %d events", what, len(c.snapshot()))
		}
	}
}

func openTail(t *testing.T, s *store.Store, dsn, holder string, c *collector) *store.EventTail {
	t.Helper()
	tail := store.NewEventTail(s, dsn, store.TailOptions{Holder: holder, Deliver: c.deliver})
	if err := tail.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tail.Close(context.Background()) })
	return tail
}

// TestEventTailFollowsTwoWritersInIDOrder: events committed concurrently
// by two store handles (two workers) reach a third handle's tail in id
// order, each once, with none missing against the table; events committed
// before the tail opened are not handed on.
func TestEventTailFollowsTwoWritersInIDOrder(t *testing.T) {
	store.PostgresOnly(t, "the event tail follows a shared PostgreSQL database; one SQLite process publishes its own events")
	ctx := context.Background()
	a, dsn := open(t)
	b := openAgain(t, dsn)
	reader := openAgain(t, dsn)
	newRun(t, a, store.NewRun{ID: "before", SessionID: "s0"})

	c := newCollector()
	openTail(t, reader, dsn, "reader", c)

	const perWriter, batch = 40, 3
	var wg sync.WaitGroup
	for w, s := range []*store.Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := fmt.Sprintf("r%d", w)
			newRun(t, s, store.NewRun{ID: run, SessionID: fmt.Sprintf("s%d", w+1)})
			for i := range perWriter {
				evs := make([]event.Event, batch)
				for k := range evs {
					evs[k] = event.New(run, "", event.Recall, map[string]int{"i": i, "k": k})
				}
				if err := s.AddEvents(ctx, evs); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	want, err := reader.Events(ctx, store.EventFilter{Name: event.Recall, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 2*perWriter*batch {
		t.Fatalf("table has %d recall events, want %d", len(want), 2*perWriter*batch)
	}
	last := want[len(want)-1].ID
	got := c.waitFor(t, "the last event", func(evs []event.Event) bool { return len(evs) > 0 && evs[len(evs)-1].ID >= last })
	// Everything the table holds after the run "before" was queued: the
	// two runs' run.queued and the recall events, in id order.
	all, err := reader.Events(ctx, store.EventFilter{Since: 0, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var table []int64
	for _, e := range all {
		if e.RunID != "before" {
			table = append(table, e.ID)
		}
	}
	var ids []int64
	for _, e := range got {
		if e.RunID == "before" {
			t.Fatalf("event %d of a run queued before the tail opened was handed on", e.ID)
		}
		ids = append(ids, e.ID)
	}
	if fmt.Sprint(ids) != fmt.Sprint(table) {
		t.Fatalf("tail handed on ids\n%v\nthe table holds\n%v", ids, table)
	}
	for i, e := range got {
		if e.Name == "" || e.RunID == "" || e.Time.IsZero() {
			t.Fatalf("event %d handed on incomplete: %+v", i, e)
		}
	}
}

// TestEventTailRelaysDeltasToOtherWorkers: a delta sent through one
// worker's tail reaches the other worker's, not its own; a burst is split
// into notifications under PostgreSQL's payload limit and arrives whole
// and in order; a delta too large for any notification is dropped.
func TestEventTailRelaysDeltasToOtherWorkers(t *testing.T) {
	store.PostgresOnly(t, "deltas cross workers through PostgreSQL notifications")
	s, dsn := open(t)
	newRun(t, s, store.NewRun{ID: "r1", SessionID: "s1"})
	ca, cb := newCollector(), newCollector()
	ta := openTail(t, s, dsn, "worker-a", ca)
	openTail(t, s, dsn, "worker-b", cb)

	huge := event.New("r1", "s1", event.TextDelta, map[string]string{event.KeyDelta: strings.Repeat("x", 9000)})
	ta.SendDelta(huge)
	const n = 300
	for i := range n {
		// About 100 bytes each: the burst needs several notifications.
		ta.SendDelta(event.New("r1", "s1", event.TextDelta, map[string]string{event.KeyDelta: fmt.Sprintf("%03d %s", i, strings.Repeat("y", 60))}))
	}
	ta.SendDelta(event.New("r1", "s1", event.ReasonDelta, map[string]string{event.KeyDelta: "end"}))
	got := cb.waitFor(t, "the last delta", func(evs []event.Event) bool {
		return len(evs) > 0 && evs[len(evs)-1].Name == event.ReasonDelta
	})
	if len(got) != n+1 {
		t.Fatalf("worker b got %d deltas, want %d (the oversize one dropped)", len(got), n+1)
	}
	for i, e := range got[:n] {
		if !strings.Contains(string(e.Data), fmt.Sprintf(`"%03d `, i)) || e.RunID != "r1" || e.Name != event.TextDelta {
			t.Fatalf("delta %d out of order or changed: %s %s", i, e.Name, e.Data)
		}
	}
	// Worker a's own deltas never come back to it: a durable event, handed
	// on after every notification sent before it, shows it has none.
	if err := s.AddEvents(context.Background(), []event.Event{event.New("r1", "s1", event.Recall, nil)}); err != nil {
		t.Fatal(err)
	}
	evs := ca.waitFor(t, "the recall event", func(evs []event.Event) bool { return len(evs) > 0 })
	for _, e := range evs {
		if e.Ephemeral() {
			t.Fatalf("worker a got its own delta back: %s", e.Data)
		}
	}
}

// BenchmarkEventTailRemoteLatency measures one event crossing workers: a
// commit through one store handle (worker B) until a tail on another
// handle (worker A) hands it on. commit-µs is the AddEvents call alone,
// delivered-µs from its return to the tail's delivery.
//
//	go test -run '^$' -bench EventTailRemoteLatency ./internal/store/
func BenchmarkEventTailRemoteLatency(b *testing.B) {
	store.PostgresOnly(b, "the event tail follows a shared PostgreSQL database")
	ctx := context.Background()
	dsn := store.TestingDSN(b)
	handles := make([]*store.Store, 2)
	for i := range handles {
		handles[i] = openAgain(b, dsn)
	}
	writer, reader := handles[0], handles[1]
	got := make(chan int64, 16)
	tail := store.NewEventTail(reader, dsn, store.TailOptions{Holder: "a", Deliver: func(e event.Event) { got <- e.ID }})
	if err := tail.Open(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tail.Close(ctx) })
	var commit, deliver time.Duration
	b.ResetTimer()
	for i := range b.N {
		evs := []event.Event{event.New("resp_bench", "sess_bench", event.Recall, map[string]int{"i": i})}
		t0 := time.Now()
		if err := writer.AddEvents(ctx, evs); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for id := range got {
			if id == evs[0].ID {
				break
			}
		}
		commit += t1.Sub(t0)
		deliver += time.Since(t1)
	}
	b.ReportMetric(float64(commit.Microseconds())/float64(b.N), "commit-µs")
	b.ReportMetric(float64(deliver.Microseconds())/float64(b.N), "delivered-µs")
}

// TestEventTailSkipsWhileNoOneFollows: with no follower the tail moves past
// new rows without handing them on; once someone follows, what commits
// after is handed on from there.
func TestEventTailSkipsWhileNoOneFollows(t *testing.T) {
	store.PostgresOnly(t, "the event tail follows a shared PostgreSQL database")
	ctx := context.Background()
	s, dsn := open(t)
	newRun(t, s, store.NewRun{ID: "r1", SessionID: "s1"})
	var mu sync.Mutex
	following, asked := false, 0
	c := newCollector()
	tail := store.NewEventTail(s, dsn, store.TailOptions{Holder: "a", Deliver: c.deliver, Wanted: func() bool {
		mu.Lock()
		defer mu.Unlock()
		asked++
		return following
	}})
	if err := tail.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tail.Close(ctx) })
	skipped := []event.Event{event.New("r1", "s1", event.Recall, nil)}
	if err := s.AddEvents(ctx, skipped); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	from := asked
	mu.Unlock()
	// A whole round asked after the commit: its newest id covers the row.
	for deadline := time.Now().Add(30 * time.Second); ; {
		mu.Lock()
		n := asked
		mu.Unlock()
		if n >= from+3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tail never looked at the table")
		}
		tail.Nudge()
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	following = true
	mu.Unlock()
	wanted := []event.Event{event.New("r1", "s1", event.Remember, nil)}
	if err := s.AddEvents(ctx, wanted); err != nil {
		t.Fatal(err)
	}
	got := c.waitFor(t, "the event committed while followed", func(evs []event.Event) bool {
		return len(evs) > 0 && evs[len(evs)-1].ID >= wanted[0].ID
	})
	if len(got) != 1 || got[0].ID != wanted[0].ID {
		t.Fatalf("tail handed on %v, want only event %d (event %d committed while no one followed)", got, wanted[0].ID, skipped[0].ID)
	}
}

// TestEventTailSurvivesALostConnection: the tail's LISTEN connection is
// terminated by the server; events committed while it was gone, and after,
// are handed on once each, in id order.
func TestEventTailSurvivesALostConnection(t *testing.T) {
	store.PostgresOnly(t, "the event tail follows a shared PostgreSQL database")
	ctx := context.Background()
	s, dsn := open(t)
	newRun(t, s, store.NewRun{ID: "r1", SessionID: "s1"})
	c := newCollector()
	openTail(t, s, dsn, "a", c)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	var killed int
	err = admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %'`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d LISTEN connections (%v), want the tail's one", killed, err)
	}
	var ids []int64
	for i := range 3 {
		evs := []event.Event{event.New("r1", "s1", event.Recall, map[string]int{"i": i})}
		if err := s.AddEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, evs[0].ID)
	}
	got := c.waitFor(t, "the events committed after the loss", func(evs []event.Event) bool {
		return len(evs) > 0 && evs[len(evs)-1].ID >= ids[len(ids)-1]
	})
	var gotIDs []int64
	for _, e := range got {
		if e.Name == event.Recall {
			gotIDs = append(gotIDs, e.ID)
		}
	}
	if fmt.Sprint(gotIDs) != fmt.Sprint(ids) {
		t.Fatalf("after the lost connection the tail handed on %v, want %v", gotIDs, ids)
	}
}

// TestDeltaRelayNeverDeadlocksACommit: on a pool smaller than the run
// writers, the commits of events (which send the queued deltas ahead of
// them) and the tail's own sender share the connections, and every commit
// ends; a sender that took the relay before its connection would wait
// forever on commits that hold the connections and wait for the relay.
func TestDeltaRelayNeverDeadlocksACommit(t *testing.T) {
	store.PostgresOnly(t, "the delta relay runs between PostgreSQL workers")
	ctx := context.Background()
	_, dsn := open(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	small := openAgain(t, dsn+sep+"pool_max_conns=2")
	tail := openTail(t, small, dsn, "small", newCollector())
	const writers, commits = 6, 30
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run := fmt.Sprintf("d%d", w)
				newRun(t, small, store.NewRun{ID: run, SessionID: "ds" + run})
				for i := range commits {
					for k := range 3 {
						tail.SendDelta(event.New(run, "", event.TextDelta, map[string]any{"delta": fmt.Sprint(i, k)}))
					}
					if err := small.AddEvents(ctx, []event.Event{event.New(run, "", event.Recall, map[string]int{"i": i})}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("commits of events did not end in 60 s with the delta relay on a pool of 2: deadlocked")
	}
}
