package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
)

// Service is what the API drives: accept runs durably, read them, cancel
// them, wait for them, follow their events. Every read that takes an owner
// is scoped to it: a run of another owner is reported exactly like an
// unknown one (store.ErrNotFound). The fields are unexported so a caller
// cannot reach the store around that check; the Inspect* methods are the
// only unscoped reads, for routes behind the inspection gate.
type Service struct {
	store  *store.Store
	queue  *queue.Queue
	engine *Engine
}

// NewService returns the Service over st, dispatching through q to eng.
func NewService(st *store.Store, q *queue.Queue, eng *Engine) *Service {
	return &Service{store: st, queue: q, engine: eng}
}

func (s *Service) broker() *event.Broker { return s.engine.o.Broker }

// Submission is an accepted request.
type Submission struct {
	Owner               string
	AuthToken           string // metadata.authToken: held in memory for the run's tool calls, never stored
	PreviousID          string
	IdempotencyKey      string
	IdempotencyTerminal bool
	Request             Request
}

// NewID returns prefix + 32 random hex digits.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Submit queues a run durably and returns it (an existing run when the
// idempotency key re-attaches).
func (s *Service) Submit(ctx context.Context, sub Submission) (store.Run, error) {
	return s.submit(ctx, sub, NewID("resp_"))
}

func (s *Service) submit(ctx context.Context, sub Submission, id string) (store.Run, error) {
	sub.Request.PerRunAuth = sub.AuthToken != ""
	body, err := json.Marshal(sub.Request)
	if err != nil {
		return store.Run{}, fmt.Errorf("submit: %w", err)
	}
	run, created, ev, err := s.store.CreateRun(ctx, store.NewRun{
		ID: id, SessionID: NewID("sess_"), Owner: sub.Owner, Request: body,
		PreviousID: sub.PreviousID, IdempotencyKey: sub.IdempotencyKey, IdempotencyTerminal: sub.IdempotencyTerminal,
	})
	if err != nil {
		return store.Run{}, err
	}
	if created {
		s.engine.SetRunToken(run.ID, sub.AuthToken)
		s.broker().Publish(ev)
		s.queue.Notify()
	}
	return run, nil
}

// Live is a subscription to live events. Read C until it closes; it closes
// on Close or when the broker drops the subscriber for falling behind (then
// durable events are re-read by id, deltas are lost).
type Live struct {
	C   <-chan event.Event
	sub *event.Sub
	b   *event.Broker
}

// Close ends the subscription. Safe to call twice.
func (l *Live) Close() { l.b.Unsubscribe(l.sub) }

func (s *Service) subscribe(buf int, filter func(event.Event) bool) *Live {
	sub := s.broker().Subscribe(buf, filter)
	return &Live{C: sub.C, sub: sub, b: s.broker()}
}

// subscribeRun is subscribe for the events of one run.
func (s *Service) subscribeRun(buf int, runID string, filter func(event.Event) bool) *Live {
	sub := s.broker().SubscribeRun(buf, runID, filter)
	return &Live{C: sub.C, sub: sub, b: s.broker()}
}

// SubmitFollow submits like Submit and follows the run's live events
// (those accepted by filter, nil = all) from before its first one, so no
// delta of a new run is missed. C carries events of that run only. The
// returned run is read after the subscription covers it: when it is not
// terminal, its run.finished arrives on C (unless the subscriber is
// dropped).
func (s *Service) SubmitFollow(ctx context.Context, sub Submission, buf int, filter func(event.Event) bool) (store.Run, *Live, error) {
	id := NewID("resp_")
	// An idempotency key may re-attach to an existing run whose id is known
	// only after the write; until then the subscription carries the new id
	// only, and the re-read below covers whatever that run did meanwhile.
	var attached atomic.Value
	attached.Store("")
	live := s.subscribe(buf, func(e event.Event) bool {
		if e.RunID != id && e.RunID != attached.Load().(string) {
			return false
		}
		return filter == nil || filter(e)
	})
	run, err := s.submit(ctx, sub, id)
	if err != nil {
		live.Close()
		return store.Run{}, nil, err
	}
	if run.ID != id {
		attached.Store(run.ID)
	}
	if run, err = s.store.Run(ctx, run.ID); err != nil {
		live.Close()
		return store.Run{}, nil, err
	}
	return run, live, nil
}

// Get returns the owner's run.
func (s *Service) Get(ctx context.Context, owner, id string) (store.Run, error) {
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	if r.Owner != owner {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// Follow subscribes to the owner's run's live events accepted by filter
// (nil = all). The run is read after subscribing: when it is not terminal,
// its run.finished arrives on C (unless the subscriber is dropped). A run
// of another owner is ErrNotFound and subscribes nothing.
func (s *Service) Follow(ctx context.Context, owner, id string, buf int, filter func(event.Event) bool) (store.Run, *Live, error) {
	live := s.subscribeRun(buf, id, filter)
	r, err := s.Get(ctx, owner, id)
	if err != nil {
		live.Close()
		return store.Run{}, nil, err
	}
	return r, live, nil
}

// EventsPage is one page of a run's stored events.
type EventsPage struct {
	Events []event.Event // in id order, never nil
	Cursor int64         // the last id on the page, or the since asked for
	Done   bool          // the run is terminal and nothing follows this page
}

// Events reads up to limit of the owner's run's stored events after since.
func (s *Service) Events(ctx context.Context, owner, id string, since int64, limit int) (EventsPage, error) {
	if _, err := s.Get(ctx, owner, id); err != nil {
		return EventsPage{}, err
	}
	evs, err := s.store.Events(ctx, store.EventFilter{RunID: id, Since: since, Limit: limit})
	if err != nil {
		return EventsPage{}, err
	}
	p := EventsPage{Events: evs, Cursor: since}
	if p.Events == nil {
		p.Events = []event.Event{}
	}
	if len(evs) > 0 {
		p.Cursor = evs[len(evs)-1].ID
	}
	// The status is read after the events: done only when nothing can follow.
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return EventsPage{}, err
	}
	p.Done = store.Terminal(r.Status) && len(evs) < limit
	return p, nil
}

// Cancel asks a queued or running run to stop and returns its state.
// Cancelling a terminal run changes nothing. A run executing here has its
// context cancelled at once. With workers sharing the database, a run
// running elsewhere is left to the worker executing it: the request's own
// statement notifies every worker, and that one cancels the run's context
// exactly as a cancel asked of it would (its heartbeat re-reads the
// request if the notification is lost); a run left running by a dead
// worker is finished cancelled by the worker that takes it over, which
// sees the request before it starts anything.
func (s *Service) Cancel(ctx context.Context, owner, id string) (store.Run, error) {
	r, err := s.Get(ctx, owner, id)
	if err != nil || store.Terminal(r.Status) {
		return r, err
	}
	if err := s.store.RequestCancel(ctx, id); err != nil {
		return store.Run{}, err
	}
	if s.queue.Cancel(id) {
		return s.store.Run(context.WithoutCancel(ctx), id)
	}
	if s.queue.Holder() != "" {
		// Read after the request committed: a run that starts after this
		// read sees the request at its start and finishes itself.
		if r, err = s.store.Run(context.WithoutCancel(ctx), id); err != nil || r.Status != store.StatusQueued {
			return r, err
		}
	}
	// Not executing: finish it here. If the dispatcher starts it in the
	// meantime, the engine sees cancel_requested, and the store lets only
	// one of the two write the terminal state. The write outlives the
	// request: a client that hangs up right after asking must not leave
	// the run cancel-requested but never finished.
	s.engine.finish(context.WithoutCancel(ctx), nil, id, store.StatusCancelled, "", "cancelled by request")
	return s.store.Run(context.WithoutCancel(ctx), id)
}

// waitBackstop is about how often Wait re-reads a run it has heard nothing
// of.
const waitBackstop = 2 * time.Second

// backstopPeriod is one Wait's re-read period: waitBackstop give or take a
// quarter, drawn per Wait. Waiters that begin together (a burst of
// synchronous requests) would otherwise re-read the run table together
// every period, for as long as their runs last.
func backstopPeriod() time.Duration {
	return waitBackstop*3/4 + mrand.N(waitBackstop/2)
}

// Wait blocks until the owner's run is terminal or ctx ends.
func (s *Service) Wait(ctx context.Context, owner, id string) (store.Run, error) {
	terminal := func(e event.Event) bool { return e.Terminal() }
	// One slot: the filter lets through only the run's one run.finished.
	live := s.subscribeRun(1, id, terminal)
	defer func() { live.Close() }()
	// The live event is the fast path; the slow re-read is the backstop, so
	// a run finished where this broker cannot see it (another dispatcher on
	// the same database) still ends the wait.
	backstop := time.NewTicker(backstopPeriod())
	defer backstop.Stop()
	for {
		r, err := s.Get(ctx, owner, id)
		if err != nil || store.Terminal(r.Status) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-backstop.C:
		case _, ok := <-live.C:
			if !ok { // dropped as a slow consumer: resubscribe and re-check
				live = s.subscribeRun(1, id, terminal)
			}
		}
	}
}

// QueueEntry is one live run as a caller sees the queue. ID and SessionID
// are set only on the caller's own rows.
type QueueEntry struct {
	ID        string
	SessionID string
	Status    string
	Position  int // 1-based, running rows first
	CreatedAt time.Time
	Mine      bool
}

// Queue lists running then queued runs, each in queue order, as owner may
// see them: its own rows with their ids, everyone else's with only status,
// position and age. With strict tenancy an unowned run is nobody's, and
// only the owner's own rows are listed and numbered.
func (s *Service) Queue(ctx context.Context, owner string, strict bool) ([]QueueEntry, error) {
	runs, err := s.store.LiveRuns(ctx)
	if err != nil {
		return nil, err
	}
	out := []QueueEntry{}
	for _, r := range runs {
		mine := owner != "" && r.Owner == owner || owner == "" && r.Owner == "" && !strict
		if strict && !mine {
			continue
		}
		e := QueueEntry{Status: r.Status, Position: len(out) + 1, CreatedAt: r.CreatedAt, Mine: mine}
		if mine {
			e.ID, e.SessionID = r.ID, r.SessionID
		}
		out = append(out, e)
	}
	return out, nil
}

// Busy reports running and queued counts from the run table.
func (s *Service) Busy(ctx context.Context) (running, queued int, err error) {
	return s.store.Counts(ctx)
}

// InspectRun returns any run, whoever owns it. Only for routes behind the
// inspection
// gate. Its request, result and error are redacted like every inspection
// read.
func (s *Service) InspectRun(ctx context.Context, id string) (store.Run, error) {
	r, err := s.store.Run(ctx, id)
	r.Request, r.Result, r.Error = s.redactRaw(r.Request), s.redactRaw(r.Result), s.engine.redactRead(r.Error)
	return r, err
}

// InspectCancel is Cancel for the operator behind the inspection gate,
// who may stop any owner's run: the run is cancelled as its owner's own
// request would cancel it.
func (s *Service) InspectCancel(ctx context.Context, id string) (store.Run, error) {
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	if r, err = s.Cancel(ctx, r.Owner, id); err != nil {
		return store.Run{}, err
	}
	r.Request, r.Result, r.Error = s.redactRaw(r.Request), s.redactRaw(r.Result), s.engine.redactRead(r.Error)
	return r, nil
}

// IsNotFound reports whether err means an unknown (or foreign) id.
func IsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
