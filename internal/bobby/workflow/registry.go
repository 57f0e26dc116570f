// Package workflow holds bobby's workflow bookkeeping, free of any browser
// or transport: the handle registry (opaque wf_ handles bound to a
// session/page/workflow), the scope rules for tools that accept a handle,
// the retained-context store and the idempotency cache.
//
// Registry is bounded: at most MaxCommitted published bindings, evicted in
// least-recently-used order, plus at most MaxReservations starts in flight.
// A start reserves first and commits only after its setup succeeded, so a
// failed start never evicts a live handle. Every binding belongs to a
// generation; NewGeneration (an accepted MCP initialize) invalidates all of
// them, and a reservation taken in an older generation can no longer commit.
//
// All types are safe for concurrent use.
package workflow

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
)

// Registry bounds.
const (
	DefaultMaxCommitted    = 64
	DefaultMaxReservations = 64
	HandlePrefix           = "wf_"
	handleHexLen           = 32
)

// Errors.
var (
	// ErrUnknownHandle: the handle is malformed, expired, unknown or evicted.
	ErrUnknownHandle = errors.New("unknown workflow handle")
	// ErrReservationsExhausted: MaxReservations starts are already in flight.
	ErrReservationsExhausted = errors.New("too many workflow starts in flight")
	// ErrGenerationChanged: an initialize happened while the start was in flight.
	ErrGenerationChanged = errors.New("workflow generation changed")
	// ErrReservationDone: Commit or Release after the reservation ended.
	ErrReservationDone = errors.New("workflow reservation already ended")
)

// Binding is what a handle stands for.
type Binding struct {
	Handle     string
	SessionID  string
	PageID     string
	WorkflowID string
	// Principal owns the binding; a handle is convenience, never authority,
	// so callers still check ownership of the session it names.
	Principal  string
	Generation uint64
}

// Registry maps handles to bindings.
type Registry struct {
	maxCommitted    int
	maxReservations int

	mu         sync.Mutex
	generation uint64
	lru        *list.List // of *Binding; front is most recently used
	byHandle   map[string]*list.Element
	reserved   int
}

// New returns a registry with the default bounds (64 + 64).
func New() *Registry { return NewSized(DefaultMaxCommitted, DefaultMaxReservations) }

// NewSized returns a registry with explicit bounds (each at least 1).
func NewSized(maxCommitted, maxReservations int) *Registry {
	return &Registry{
		maxCommitted:    max(1, maxCommitted),
		maxReservations: max(1, maxReservations),
		generation:      1,
		lru:             list.New(),
		byHandle:        make(map[string]*list.Element),
	}
}

// ValidHandle reports whether s has the handle shape: "wf_" + 32 lowercase hex.
func ValidHandle(s string) bool {
	if len(s) != len(HandlePrefix)+handleHexLen || s[:len(HandlePrefix)] != HandlePrefix {
		return false
	}
	for _, c := range s[len(HandlePrefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func newHandle() string {
	var b [handleHexLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return HandlePrefix + hex.EncodeToString(b[:])
}

// Generation returns the current generation.
func (r *Registry) Generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.generation
}

// NewGeneration starts a new generation and drops every binding. In-flight
// reservations stay counted but can no longer commit.
func (r *Registry) NewGeneration() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.generation++
	r.lru.Init()
	clear(r.byHandle)
	return r.generation
}

// Len returns the number of committed bindings and live reservations.
func (r *Registry) Len() (committed, reserved int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Len(), r.reserved
}

// Reservation is a start in flight.
type Reservation struct {
	r          *Registry
	generation uint64

	mu   sync.Mutex
	done bool
}

// Reserve takes one of the reservation slots. It fails when all are taken;
// it never evicts anything.
func (r *Registry) Reserve() (*Reservation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reserved >= r.maxReservations {
		return nil, ErrReservationsExhausted
	}
	r.reserved++
	return &Reservation{r: r, generation: r.generation}, nil
}

// Generation is the generation the reservation was taken in.
func (res *Reservation) Generation() uint64 { return res.generation }

// Current reports whether the reservation's generation is still current.
func (res *Reservation) Current() bool { return res.r.Generation() == res.generation }

// end marks the reservation finished exactly once; r.mu must be held.
func (res *Reservation) end() error {
	res.mu.Lock()
	defer res.mu.Unlock()
	if res.done {
		return ErrReservationDone
	}
	res.done = true
	res.r.reserved--
	return nil
}

// Release gives the slot back without publishing anything (a failed
// start). Releasing twice is harmless.
func (res *Reservation) Release() {
	res.r.mu.Lock()
	defer res.r.mu.Unlock()
	_ = res.end()
}

// Commit publishes b under a new handle and releases the slot. When the
// registry is full the least recently used binding is evicted and returned.
// If the generation changed since Reserve, nothing is published and the
// error is ErrGenerationChanged (the slot is released either way).
func (res *Reservation) Commit(b Binding) (committed Binding, evicted *Binding, err error) {
	r := res.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := res.end(); err != nil {
		return Binding{}, nil, err
	}
	if r.generation != res.generation {
		return Binding{}, nil, ErrGenerationChanged
	}
	if r.lru.Len() >= r.maxCommitted {
		oldest := r.lru.Back()
		ob := r.lru.Remove(oldest).(*Binding)
		delete(r.byHandle, ob.Handle)
		evicted = ob
	}
	b.Handle = newHandle()
	for r.byHandle[b.Handle] != nil { // astronomically unlikely, but cheap to rule out
		b.Handle = newHandle()
	}
	b.Generation = r.generation
	nb := b
	r.byHandle[b.Handle] = r.lru.PushFront(&nb)
	return b, evicted, nil
}

// Resolve returns the binding of handle and marks it most recently used.
func (r *Registry) Resolve(handle string) (Binding, error) {
	if !ValidHandle(handle) {
		return Binding{}, ErrUnknownHandle
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.byHandle[handle]
	if !ok {
		return Binding{}, ErrUnknownHandle
	}
	r.lru.MoveToFront(el)
	return *el.Value.(*Binding), nil
}

// removeWhere drops every binding matching keep==false; r.mu must be held.
func (r *Registry) removeWhere(drop func(*Binding) bool) int {
	n := 0
	for el := r.lru.Front(); el != nil; {
		next := el.Next()
		if b := el.Value.(*Binding); drop(b) {
			r.lru.Remove(el)
			delete(r.byHandle, b.Handle)
			n++
		}
		el = next
	}
	return n
}

// EvictSession drops every binding of the session (session_close).
func (r *Registry) EvictSession(sessionID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeWhere(func(b *Binding) bool { return b.SessionID == sessionID })
}

// EvictPage drops every binding of the page (page_close).
func (r *Registry) EvictPage(pageID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeWhere(func(b *Binding) bool { return b.PageID == pageID })
}

// Purge drops the bindings whose session is no longer alive (closed through
// another interface). It runs before each start. alive is called without
// the registry lock held, once per distinct session.
func (r *Registry) Purge(alive func(sessionID string) bool) int {
	r.mu.Lock()
	seen := map[string]bool{}
	for el := r.lru.Front(); el != nil; el = el.Next() {
		seen[el.Value.(*Binding).SessionID] = true
	}
	r.mu.Unlock()
	dead := map[string]bool{}
	for id := range seen {
		if !alive(id) {
			dead[id] = true
		}
	}
	if len(dead) == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeWhere(func(b *Binding) bool { return dead[b.SessionID] })
}

// Handles returns the committed handles, most recently used first.
func (r *Registry) Handles() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, r.lru.Len())
	for el := r.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*Binding).Handle)
	}
	return out
}
