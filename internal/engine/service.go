package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
)

// Service is what the API drives: accept runs durably, read them, cancel
// them, wait for them. Every read is scoped to an owner: a run of another
// owner is reported exactly like an unknown one.
type Service struct {
	Store  *store.Store
	Queue  *queue.Queue
	Engine *Engine
}

// Broker is the live event broker the engine publishes on.
func (s *Service) Broker() *event.Broker { return s.Engine.o.Broker }

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
	sub.Request.PerRunAuth = sub.AuthToken != ""
	body, err := json.Marshal(sub.Request)
	if err != nil {
		return store.Run{}, fmt.Errorf("submit: %w", err)
	}
	run, created, ev, err := s.Store.CreateRun(ctx, store.NewRun{
		ID: NewID("resp_"), SessionID: NewID("sess_"), Owner: sub.Owner, Request: body,
		PreviousID: sub.PreviousID, IdempotencyKey: sub.IdempotencyKey, IdempotencyTerminal: sub.IdempotencyTerminal,
	})
	if err != nil {
		return store.Run{}, err
	}
	if created {
		s.Engine.SetRunToken(run.ID, sub.AuthToken)
		s.Broker().Publish(ev)
		s.Queue.Notify()
	}
	return run, nil
}

// Get returns the owner's run.
func (s *Service) Get(ctx context.Context, owner, id string) (store.Run, error) {
	r, err := s.Store.Run(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	if r.Owner != owner {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// Cancel asks a queued or running run to stop and returns its state.
// Cancelling a terminal run changes nothing.
func (s *Service) Cancel(ctx context.Context, owner, id string) (store.Run, error) {
	r, err := s.Get(ctx, owner, id)
	if err != nil || store.Terminal(r.Status) {
		return r, err
	}
	if err := s.Store.RequestCancel(ctx, id); err != nil {
		return store.Run{}, err
	}
	if !s.Queue.Cancel(id) {
		// Not executing: finish it here. If the dispatcher starts it in the
		// meantime, the engine sees cancel_requested, and the store lets only
		// one of the two write the terminal state.
		s.Engine.finish(ctx, nil, id, store.StatusCancelled, "", "cancelled by request")
	}
	return s.Store.Run(ctx, id)
}

// Wait blocks until the run is terminal or ctx ends.
func (s *Service) Wait(ctx context.Context, id string) (store.Run, error) {
	sub := s.Broker().Subscribe(16, func(e event.Event) bool { return e.RunID == id && e.Terminal() })
	defer func() { s.Broker().Unsubscribe(sub) }()
	for {
		r, err := s.Store.Run(ctx, id)
		if err != nil || store.Terminal(r.Status) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case _, ok := <-sub.C:
			if !ok { // dropped as a slow consumer: resubscribe and re-check
				sub = s.Broker().Subscribe(16, func(e event.Event) bool { return e.RunID == id && e.Terminal() })
			}
		}
	}
}

// Busy reports running and queued counts from the run table.
func (s *Service) Busy(ctx context.Context) (running, queued int, err error) {
	return s.Store.Counts(ctx)
}

// IsNotFound reports whether err means an unknown (or foreign) id.
func IsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
