package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// fakeDaemon is the part of a daemon's task API the scheduler uses: POST
// /v1/tasks answers 202 with a new task, or 503 while down; GET
// /v1/tasks/{id} answers the status the test gives that task.
type fakeDaemon struct {
	mu     sync.Mutex
	down   bool
	posted []taskRequest     // the firings the daemon accepted, in order
	status map[string]string // task id → status; new tasks are queued
	owners map[string]string // task id → X-Delta-User it was posted as
	srv    *httptest.Server
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{status: map[string]string{}, owners: map[string]string{}}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		switch {
		case d.down:
			http.Error(w, `{"error":{"message":"down"}}`, http.StatusServiceUnavailable)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/tasks":
			var tr taskRequest
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
				http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
				return
			}
			id := fmt.Sprintf("resp_%d", len(d.posted)+1)
			d.posted = append(d.posted, tr)
			d.status[id], d.owners[id] = "queued", r.Header.Get(schedule.HeaderUser)
			w.WriteHeader(http.StatusAccepted)
			_, _ = fmt.Fprintf(w, `{"id":%q,"object":"task","status":"queued"}`, id)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/tasks/"):
			id := strings.TrimPrefix(r.URL.Path, "/v1/tasks/")
			st, ok := d.status[id]
			if !ok || d.owners[id] != r.Header.Get(schedule.HeaderUser) {
				http.Error(w, `{"error":{"message":"no such task"}}`, http.StatusNotFound)
				return
			}
			_, _ = fmt.Fprintf(w, `{"id":%q,"object":"task","status":%q}`, id, st)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *fakeDaemon) setDown(down bool) { d.mu.Lock(); d.down = down; d.mu.Unlock() }

// finishAll marks every task the daemon holds done.
func (d *fakeDaemon) finishAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range d.status {
		d.status[id] = "done"
	}
}

func (d *fakeDaemon) setAll(status string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range d.status {
		d.status[id] = status
	}
}

func (d *fakeDaemon) slots() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, p := range d.posted {
		out = append(out, p.Metadata["scheduled_for"].(string))
	}
	return out
}

// clock is a test clock the scheduler reads.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// firingRig is a scheduler over its own store and a test clock, firing
// into a fake daemon.
type firingRig struct {
	s     *Scheduler
	st    *store.Schedules
	d     *fakeDaemon
	clock *clock
}

func newFiringRig(t *testing.T, t0 time.Time) *firingRig {
	t.Helper()
	_, st := newServer(t, t0)
	r := &firingRig{st: st, d: newFakeDaemon(t), clock: &clock{t: t0}}
	r.s = New(st, Options{DaemonURL: r.d.srv.URL, Now: r.clock.Now})
	return r
}

func (r *firingRig) interval(t *testing.T, id, owner string, created time.Time) {
	t.Helper()
	if err := r.st.CreateSchedule(context.Background(), store.ScheduleRow{ID: id, Owner: owner, Kind: "interval", EverySeconds: 60,
		Input: "ping", Status: schedule.StatusActive, CreatedAt: created, NextFireAt: created.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
}

func (r *firingRig) tick(t *testing.T, at time.Time) {
	t.Helper()
	r.clock.set(at)
	if err := r.s.Tick(context.Background()); err != nil {
		t.Fatalf("tick at %s: %v", at.Format(time.TimeOnly), err)
	}
}

func (r *firingRig) firings(t *testing.T, id string) []store.FiringRow {
	t.Helper()
	fs, err := r.st.Firings(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestDaemonDownForManySlotsGetsOneFiringNotABurst: a schedule every
// minute whose daemon is down for ten minutes owes the one firing it
// recorded when the daemon went away, not one per missed slot; when the
// daemon is back it gets that firing, and once its run is over one more,
// for the latest slot, which counts the slots it skipped.
func TestDaemonDownForManySlotsGetsOneFiringNotABurst(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newFiringRig(t, t0)
	r.interval(t, "sch_iv", "alice", t0)
	r.d.setDown(true)
	for m := 1; m <= 10; m++ {
		r.tick(t, t0.Add(time.Duration(m)*time.Minute))
		r.tick(t, t0.Add(time.Duration(m)*time.Minute+30*time.Second))
	}
	if fs := r.firings(t, "sch_iv"); len(fs) != 1 || fs[0].State != store.FiringIntended || !fs[0].Slot.Equal(t0.Add(time.Minute)) {
		t.Fatalf("with the daemon down for ten slots: %+v, want one owed firing, for 10:01", fs)
	}
	r.d.setDown(false)
	r.tick(t, t0.Add(10*time.Minute+45*time.Second))
	r.tick(t, t0.Add(20*time.Minute)) // past every backoff: anything still owed goes now
	if got := r.d.slots(); len(got) != 1 || got[0] != "2026-12-01T10:01:00Z" {
		t.Fatalf("the daemon received %v, want only the owed 10:01 firing while its run is queued", got)
	}
	r.d.finishAll()
	r.tick(t, t0.Add(20*time.Minute+5*time.Second))
	got := r.d.slots()
	if len(got) != 2 || got[1] != "2026-12-01T10:20:00Z" {
		t.Fatalf("after the owed run ended the daemon received %v, want one more, for 10:20", got)
	}
	fs := r.firings(t, "sch_iv")
	if len(fs) != 2 || fs[1].Skipped != 18 || fs[1].State != store.FiringDone {
		t.Fatalf("firings %+v, want the catch-up done, counting 18 skipped slots (10:02 to 10:19)", fs)
	}
}

// TestScheduleNeverOverlapsItself: a schedule every minute whose run takes
// longer than a minute is not fired again while that run is queued or
// running; when it ends, the schedule fires once, for the latest slot, and
// stays on its grid.
func TestScheduleNeverOverlapsItself(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newFiringRig(t, t0)
	r.interval(t, "sch_iv", "alice", t0)
	r.tick(t, t0.Add(time.Minute))
	if got := r.d.slots(); len(got) != 1 {
		t.Fatalf("first slot: the daemon received %v", got)
	}
	r.d.setAll("running")
	for _, at := range []time.Duration{2 * time.Minute, 3 * time.Minute, 3*time.Minute + 59*time.Second} {
		r.tick(t, t0.Add(at))
	}
	if got := r.d.slots(); len(got) != 1 {
		t.Fatalf("while the 10:01 run was running the daemon received %v, want nothing more", got)
	}
	r.d.finishAll()
	r.tick(t, t0.Add(4*time.Minute+10*time.Second))
	got := r.d.slots()
	if len(got) != 2 || got[1] != "2026-12-01T10:04:00Z" {
		t.Fatalf("after the run ended the daemon received %v, want one more, for 10:04", got)
	}
	fs := r.firings(t, "sch_iv")
	if len(fs) != 2 || fs[1].Skipped != 2 {
		t.Fatalf("firings %+v, want the second counting 2 skipped slots (10:02, 10:03)", fs)
	}
	row, err := r.st.ScheduleByID(context.Background(), "sch_iv")
	if err != nil || !row.NextFireAt.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("schedule %+v, %v: want the next slot 10:05, on its grid", row, err)
	}
	// A task the daemon does not know (another owner's, a new database)
	// does not hold the schedule.
	r.d.mu.Lock()
	for id := range r.d.owners {
		r.d.owners[id] = "someone else"
	}
	r.d.mu.Unlock()
	r.d.setAll("running")
	r.tick(t, t0.Add(5*time.Minute))
	if got := r.d.slots(); len(got) != 3 {
		t.Fatalf("with the previous task unknown to the daemon it received %v, want the 10:05 firing", got)
	}
}

// TestHeldSchedulesDoNotHideOthers: schedules held by an owed firing stay
// due; a tick still reaches a due schedule behind more than a page of them.
func TestHeldSchedulesDoNotHideOthers(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newFiringRig(t, t0)
	n := dueBatch + 20
	for i := range n {
		r.interval(t, fmt.Sprintf("sch_%03d", i), "", t0)
	}
	r.d.setDown(true)
	r.tick(t, t0.Add(time.Minute)) // each records its firing, which the daemon does not take; each is due again at 10:02
	late := t0.Add(150 * time.Second)
	r.interval(t, "sch_zzz", "", late.Add(-time.Minute)) // due at 10:02:30, after every held one
	r.tick(t, t0.Add(3*time.Minute))
	if fs := r.firings(t, "sch_zzz"); len(fs) != 1 || !fs[0].Slot.Equal(late) {
		t.Fatalf("the schedule behind %d held ones: firings %+v, want one for %s", n, fs, late)
	}
}
