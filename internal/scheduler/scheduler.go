// Package scheduler is `delta scheduler`: a control plane for users who
// have none. It serves the schedule REST surface (package schedule) that a
// daemon's schedule tools call, keeps every schedule in its own SQLite file
// (through store.Schedules), and fires each due schedule as POST /v1/tasks
// on the daemon.
//
// A firing is exactly-once by construction: the firing is recorded durably,
// in the transaction that advances its schedule, before the task is posted;
// the post carries the idempotency key schedule.FireKey(id, slot) with
// idempotency_terminal, so the daemon answers a re-sent firing with the task
// it already started; only then is the firing marked done. A crash anywhere
// in between leaves a recorded, unacknowledged firing that the next start
// posts again with the same key.
//
// After downtime a schedule fires once for its most recent missed slot
// (Plan.Catchup): a one-time schedule fires late, an interval or cron
// schedule does not burst through every slot it slept through. The same
// rule keeps a schedule from overlapping itself: while its previous firing
// is still in progress (not yet acknowledged by a daemon that is down, or
// its task still queued or running), the slots that come due are not fired;
// once it is over, the schedule fires once, for the latest of them.
//
// Time comes from Options.Now, so tests move a clock and call Tick instead
// of sleeping.
package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/schedule"
	"github.com/deltaharness/delta/internal/store"
)

// Store keeps schedules and their firings (*store.Schedules).
type Store interface {
	CreateSchedule(ctx context.Context, r store.ScheduleRow) error
	OwnedSchedule(ctx context.Context, id, owner, agent string) (store.ScheduleRow, error)
	ScheduleByID(ctx context.Context, id string) (store.ScheduleRow, error)
	OwnedSchedules(ctx context.Context, owner, agent string) ([]store.ScheduleRow, error)
	CancelSchedule(ctx context.Context, id, owner, agent string, at time.Time) (store.ScheduleRow, error)
	DueSchedules(ctx context.Context, now time.Time, after store.DueCursor, limit int) ([]store.ScheduleRow, error)
	IntendFiring(ctx context.Context, f store.FiringRow, due, next time.Time) error
	PendingFirings(ctx context.Context, now time.Time) ([]store.FiringRow, error)
	LastFiring(ctx context.Context, scheduleID string) (store.FiringRow, error)
	FiringDone(ctx context.Context, key, taskID string, at time.Time) error
	FiringRetry(ctx context.Context, key, reason string, retryAt, at time.Time) error
}

// Defaults.
const (
	DefaultPoll      = time.Second
	DefaultMaxBody   = 64 << 10
	fireTimeout      = 15 * time.Second
	statusTimeout    = 5 * time.Second
	maxRetryDelay    = 5 * time.Minute
	dueBatch         = 100
	maxOwnedPerAgent = 1000
)

// Options configures a Scheduler.
type Options struct {
	// Token is the bearer every REST call must present; empty = open (the
	// command allows that on loopback only).
	Token string
	// DaemonURL is the daemon's base URL; firings go to DaemonURL/v1/tasks.
	DaemonURL string
	// DaemonToken is the daemon's control token, presented when firing.
	DaemonToken string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Poll is how often Open's loop looks for due work; default DefaultPoll.
	Poll time.Duration
	// Client posts firings; default an http.Client with a 15 s timeout.
	Client *http.Client
	Logger *slog.Logger
}

// Scheduler serves the REST surface and fires due schedules.
type Scheduler struct {
	st Store
	o  Options

	tick   sync.Mutex // one Tick at a time: the loop and a caller's Tick never interleave
	cancel context.CancelFunc
	done   chan struct{}
}

// New fills defaults.
func New(st Store, o Options) *Scheduler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: fireTimeout}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{st: st, o: o}
}

// Open starts the firing loop: a Tick at once (owed firings from before a
// restart go first), then one every Poll.
func (s *Scheduler) Open(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.o.Poll)
		defer t.Stop()
		for {
			if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
				s.o.Logger.Warn("scheduler tick failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops the loop and waits for it, or for ctx.
func (s *Scheduler) Close(ctx context.Context) error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "sch_" + hex.EncodeToString(b[:])
}

// plan rebuilds a stored schedule's plan.
func plan(r store.ScheduleRow) (*schedule.Plan, error) {
	return specOf(r).Compile(r.CreatedAt)
}

func specOf(r store.ScheduleRow) schedule.Spec {
	return schedule.Spec{Kind: schedule.Kind(r.Kind), At: r.At, EverySeconds: r.EverySeconds, Cron: r.Cron, Timezone: r.Timezone}
}

// view is a stored schedule as the REST surface reports it.
func view(r store.ScheduleRow) schedule.Schedule {
	v := schedule.Schedule{
		ID: r.ID, Object: "schedule", Spec: specOf(r), Input: r.Input, PreviousResponseID: r.PreviousResponseID,
		SessionID: r.Session, Owner: r.Owner, Agent: r.Agent, Status: r.Status, Firings: r.Firings, CreatedAt: r.CreatedAt,
	}
	if !r.NextFireAt.IsZero() {
		t := r.NextFireAt
		v.NextFireAt = &t
	}
	if !r.LastFireAt.IsZero() {
		t := r.LastFireAt
		v.LastFireAt = &t
	}
	return v
}
