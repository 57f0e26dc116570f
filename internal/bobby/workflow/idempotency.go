package workflow

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// ErrIdempotencyKeyReused: the key was first used for a different request.
var ErrIdempotencyKeyReused = errors.New("idempotencyKey reused for a different request")

// Idempotency remembers the outcome of keyed commands so that a retry with
// the same key in the same scope (a browser session) returns the first
// outcome without executing again. A retry that arrives while the first call
// is still running waits for it. The cache is bounded, least recently used
// first out.
type Idempotency[T any] struct {
	max int

	mu      sync.Mutex
	lru     *list.List // of *idemEntry[T]
	entries map[idemKey]*list.Element
}

type idemKey struct{ scope, key string }

type idemEntry[T any] struct {
	k           idemKey
	fingerprint string
	done        chan struct{}
	value       T
}

// NewIdempotency returns a cache of at most maxEntries outcomes.
func NewIdempotency[T any](maxEntries int) *Idempotency[T] {
	return &Idempotency[T]{max: max(1, maxEntries), lru: list.New(), entries: make(map[idemKey]*list.Element)}
}

// Do runs fn once per (scope, key). fingerprint identifies the request
// (e.g. its canonical arguments); the same key with another fingerprint is
// ErrIdempotencyKeyReused. replayed is true when the value came from an
// earlier call. If ctx ends while waiting for an in-flight first call, Do
// returns ctx.Err().
func (c *Idempotency[T]) Do(ctx context.Context, scope, key, fingerprint string, fn func() T) (value T, replayed bool, err error) {
	k := idemKey{scope, key}
	c.mu.Lock()
	if el, ok := c.entries[k]; ok {
		e := el.Value.(*idemEntry[T])
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		if e.fingerprint != fingerprint {
			var zero T
			return zero, false, ErrIdempotencyKeyReused
		}
		select {
		case <-e.done:
			return e.value, true, nil
		case <-ctx.Done():
			var zero T
			return zero, false, ctx.Err()
		}
	}
	e := &idemEntry[T]{k: k, fingerprint: fingerprint, done: make(chan struct{})}
	c.entries[k] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		// Evict the oldest finished entry; an in-flight one has waiters.
		evicted := false
		for el := c.lru.Back(); el != nil; el = el.Prev() {
			old := el.Value.(*idemEntry[T])
			select {
			case <-old.done:
				c.lru.Remove(el)
				delete(c.entries, old.k)
				evicted = true
			default:
				continue
			}
			break
		}
		if !evicted {
			break
		}
	}
	c.mu.Unlock()

	defer close(e.done)
	e.value = fn()
	return e.value, false, nil
}

// ForgetScope drops every entry of scope (the session closed).
func (c *Idempotency[T]) ForgetScope(scope string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*idemEntry[T]); e.k.scope == scope {
			c.lru.Remove(el)
			delete(c.entries, e.k)
		}
		el = next
	}
}

// Len is the number of remembered keys.
func (c *Idempotency[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
