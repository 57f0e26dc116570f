package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

func claimedIDs(runs []store.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// TestClaimRunsOnePerSessionInOrder: a claim hands out each free
// session's earliest live run, running ones first, and a session leased
// to one worker is not handed to another until its lease expires; then
// the other worker takes it over and the first one's heartbeat no longer
// covers it.
func TestClaimRunsOnePerSessionInOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	newRun(t, s, store.NewRun{ID: "a1", SessionID: "sa"})
	newRun(t, s, store.NewRun{ID: "b1", SessionID: "sb"})
	newRun(t, s, store.NewRun{ID: "a2", PreviousID: "a1"})
	newRun(t, s, store.NewRun{ID: "c1", SessionID: "sc"})
	if _, _, err := s.Start(ctx, "c1", nil); err != nil { // left running, as by a dead worker
		t.Fatal(err)
	}
	t0 := time.UnixMilli(1_800_000_000_000)
	const ttl = 10 * time.Second

	got, err := s.ClaimRuns(ctx, "w1", ttl, t0, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := claimedIDs(got); !slices.Equal(ids, []string{"c1", "a1", "b1"}) {
		t.Fatalf("w1 claimed %v, want [c1 a1 b1]: running first, one run per session, a2 after a1", ids)
	}
	if got, _ := s.ClaimRuns(ctx, "w2", ttl, t0.Add(ttl/2), 10, nil); len(got) != 0 {
		t.Fatalf("w2 claimed %v while w1's leases are live", claimedIDs(got))
	}
	if got, _ := s.ClaimRuns(ctx, "w1", ttl, t0.Add(ttl/2), 1, nil); !slices.Equal(claimedIDs(got), []string{"c1"}) {
		t.Fatalf("w1 claiming again = %v, want its own c1 (a claim renews)", claimedIDs(got))
	}
	// The sessions w1 is executing are passed over: the claim neither
	// returns nor counts them against max.
	if got, err := s.ClaimRuns(ctx, "w1", ttl, t0.Add(ttl/2), 1, []string{"sc"}); err != nil || !slices.Equal(claimedIDs(got), []string{"a1"}) {
		t.Fatalf("w1 claiming with sc skipped = %v, %v; want [a1]", claimedIDs(got), err)
	}
	if got, _ := s.ClaimRuns(ctx, "w1", ttl, t0.Add(ttl/2), 10, []string{"sa", "sc"}); !slices.Equal(claimedIDs(got), []string{"b1"}) {
		t.Fatalf("w1 claiming with sa and sc skipped = %v, want [b1]", claimedIDs(got))
	}

	// w1 finishes a1 and lets sa go: a2 is next, for anyone.
	if _, _, err := s.Start(ctx, "a1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "a1", store.StatusDone, nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseSession(ctx, "sa", "w1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ClaimRuns(ctx, "w2", ttl, t0.Add(ttl/2), 10, nil); !slices.Equal(claimedIDs(got), []string{"a2"}) {
		t.Fatalf("w2 claimed %v, want a2 once sa was released", claimedIDs(got))
	}

	// w1 dies: after the TTL w2 takes c1 and b1 over.
	late := t0.Add(ttl/2 + ttl + time.Millisecond)
	if got, _ := s.ClaimRuns(ctx, "w2", ttl, late, 10, nil); !slices.Equal(claimedIDs(got), []string{"c1", "b1", "a2"}) {
		t.Fatalf("after the TTL w2 claimed %v, want [c1 b1 a2] (its own a2 too)", claimedIDs(got))
	}
	if held, err := s.HoldsSession(ctx, "sc", "w1", late); err != nil || held {
		t.Fatalf("HoldsSession(sc, w1) after the takeover = %v, %v; want false", held, err)
	}
	if held, _ := s.HoldsSession(ctx, "sc", "w2", late); !held {
		t.Fatal("HoldsSession(sc, w2) = false after its claim")
	}
	if n, err := s.RenewSessionLeases(ctx, "w1", ttl, late); err != nil || n != 0 {
		t.Fatalf("w1's heartbeat renewed %d, %v; want 0: its sessions were taken over", n, err)
	}
	if err := s.AcquireSession(ctx, "sc", "w1", ttl, late); !errors.Is(err, store.ErrSessionHeld) {
		t.Fatalf("AcquireSession(sc, w1) = %v, want ErrSessionHeld", err)
	}
	if err := s.ReleaseSession(ctx, "sc", "w1"); err != nil {
		t.Fatal(err)
	}
	leases, err := s.SessionLeases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if l.Holder != "w2" || !l.AcquiredAt.Equal(late) && l.SessionID != "sa" {
			t.Fatalf("lease %+v: want every session with w2, taken at the takeover (sa earlier)", l)
		}
	}
	if n, _ := s.RenewSessionLeases(ctx, "w2", ttl, late.Add(time.Second)); n != 3 {
		t.Fatalf("w2's heartbeat renewed %d leases, want 3", n)
	}
}

// TestClaimRunsWorkersNeverShareASession: four workers on two stores of one
// database claim, start and finish 60 runs of 12 sessions at once. Every
// run starts exactly once (never as a resume), and each session's runs
// start in their queue order.
func TestClaimRunsWorkersNeverShareASession(t *testing.T) {
	ctx := context.Background()
	s1, dsn := open(t)
	s2 := openAgain(t, dsn)
	const sessions, perSession = 12, 5
	for j := range perSession {
		for i := range sessions {
			id := fmt.Sprintf("r%d_%d", i, j)
			nr := store.NewRun{ID: id, SessionID: fmt.Sprintf("s%d", i)}
			if j > 0 {
				nr.PreviousID = fmt.Sprintf("r%d_%d", i, j-1)
			}
			newRun(t, s1, nr)
		}
	}
	var mu sync.Mutex
	started := map[string][]string{} // session → run ids in start order
	total := 0
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, holder := []*store.Store{s1, s2}[w%2], fmt.Sprintf("w%d", w)
			for {
				mu.Lock()
				done := total == sessions*perSession
				mu.Unlock()
				if done || t.Failed() {
					return
				}
				runs, err := s.ClaimRuns(ctx, holder, time.Minute, time.Now(), 3, nil)
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range runs {
					_, ev, err := s.Start(ctx, r.ID, nil)
					if err != nil {
						t.Errorf("%s: start %s: %v", holder, r.ID, err)
						return
					}
					if ev.Name != event.RunStarted {
						t.Errorf("%s: %s started as %s: another worker ran it before", holder, r.ID, ev.Name)
					}
					mu.Lock()
					started[r.SessionID] = append(started[r.SessionID], r.ID)
					total++
					mu.Unlock()
					if _, err := s.Finish(ctx, r.ID, store.StatusDone, nil, ""); err != nil {
						t.Errorf("%s: finish %s: %v", holder, r.ID, err)
						return
					}
					if err := s.ReleaseSession(ctx, r.SessionID, holder); err != nil {
						t.Error(err)
						return
					}
				}
				if len(runs) == 0 {
					time.Sleep(time.Millisecond) // the other workers hold every live session
				}
			}
		}()
	}
	wg.Wait()
	for i := range sessions {
		var want []string
		for j := range perSession {
			want = append(want, fmt.Sprintf("r%d_%d", i, j))
		}
		if got := started[fmt.Sprintf("s%d", i)]; !slices.Equal(got, want) {
			t.Errorf("session s%d started %v, want %v", i, got, want)
		}
	}
}

// TestCancelRequestedRuns: the heartbeat's backstop lists the running runs
// with a cancel request among the sessions the holder leases, and no other.
func TestCancelRequestedRuns(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	now := time.Now()
	for _, r := range []struct{ run, sess, holder string }{{"a", "sa", "w1"}, {"b", "sb", "w1"}, {"c", "sc", "w2"}} {
		newRun(t, s, store.NewRun{ID: r.run, SessionID: r.sess})
		if err := s.AcquireSession(ctx, r.sess, r.holder, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Start(ctx, r.run, nil); err != nil {
			t.Fatal(err)
		}
	}
	newRun(t, s, store.NewRun{ID: "q", SessionID: "sq", PreviousID: "a"}) // queued behind a
	for _, id := range []string{"a", "c", "q"} {
		if err := s.RequestCancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for holder, want := range map[string]string{"w1": "[a]", "w2": "[c]", "w3": "[]"} {
		ids, err := s.CancelRequestedRuns(ctx, holder)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(append([]string{}, ids...)); got != want {
			t.Fatalf("cancel requests under %s: %s, want %s", holder, got, want)
		}
	}
}

// twoSessions is a store holding session sa's runs a1 and a2 (in that
// order) and session sb's run b1, all queued.
func twoSessions(t *testing.T) *store.Store {
	t.Helper()
	s, _ := open(t)
	newRun(t, s, store.NewRun{ID: "a1", SessionID: "sa"})
	newRun(t, s, store.NewRun{ID: "a2", PreviousID: "a1"})
	newRun(t, s, store.NewRun{ID: "b1", SessionID: "sb"})
	return s
}

// TestFirstRun: a session's opening run is returned as its first, a later
// run of the session and an unknown id are not.
func TestFirstRun(t *testing.T) {
	ctx := context.Background()
	s := twoSessions(t)
	for _, tt := range []struct {
		id    string
		first bool
	}{{"a1", true}, {"a2", false}, {"b1", true}, {"nope", false}} {
		r, ok, err := s.FirstRun(ctx, tt.id)
		if err != nil || ok != tt.first || (ok && (r.ID != tt.id || r.SessionID == "")) {
			t.Errorf("FirstRun(%s) = %q in %q, %v, %v; want first %v", tt.id, r.ID, r.SessionID, ok, err, tt.first)
		}
	}
}

// TestRunMessagesAreTheRunsOwn: a run's messages are those it appended, in
// order, not its session's other runs'; on SQLite the read goes through the
// session's index rather than scanning every message of the database (the
// Reflector reads them after each run).
func TestRunMessagesAreTheRunsOwn(t *testing.T) {
	ctx := context.Background()
	s := twoSessions(t)
	for _, id := range []string{"a1", "b1", "a2"} {
		in := []model.Message{{Role: model.RoleUser, Content: id + " first"}, {Role: model.RoleUser, Content: id + " second"}}
		if _, _, err := s.Start(ctx, id, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a1", "a2", "b1"} {
		msgs, err := s.RunMessages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, m.Content)
		}
		if want := []string{id + " first", id + " second"}; !slices.Equal(got, want) {
			t.Errorf("RunMessages(%s) = %q, want %q", id, got, want)
		}
	}
	if msgs, err := s.RunMessages(ctx, "nope"); err != nil || len(msgs) != 0 {
		t.Errorf("RunMessages(nope) = %d messages, %v; want none", len(msgs), err)
	}
	if store.TestingBackend() != "postgres" {
		if plan := store.RunMessagesPlan(t, s); !strings.Contains(plan, "USING INDEX messages_session") {
			t.Errorf("reading a run's messages does not use the session's index:\n%s", plan)
		}
	}
}
