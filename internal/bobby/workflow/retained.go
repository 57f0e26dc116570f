package workflow

import "sync"

// Retained keeps the last accessibility context recorded for each page, so
// context questions and observations can answer without a new snapshot.
//
// Anything that may have changed a page invalidates its entry. Because a
// snapshot taken before an invalidation may finish after it, writers first
// read the page's Epoch and store with PutAt, which refuses a value from an
// older epoch: a stale snapshot can never overwrite an invalidation.
type Retained[T any] struct {
	mu      sync.Mutex
	max     int
	entries map[string]*retainedEntry[T]
	tick    uint64 // for LRU eviction beyond max
	epochs  uint64 // global, so an epoch is never reused, even after eviction
}

type retainedEntry[T any] struct {
	epoch uint64
	value T
	valid bool
	used  uint64
}

// NewRetained returns a store holding at most maxPages entries.
func NewRetained[T any](maxPages int) *Retained[T] {
	return &Retained[T]{max: max(1, maxPages), entries: make(map[string]*retainedEntry[T])}
}

func (r *Retained[T]) entry(page string) *retainedEntry[T] {
	e, ok := r.entries[page]
	if !ok {
		if len(r.entries) >= r.max {
			r.evictOldest()
		}
		r.epochs++
		e = &retainedEntry[T]{epoch: r.epochs}
		r.entries[page] = e
	}
	r.tick++
	e.used = r.tick
	return e
}

func (r *Retained[T]) evictOldest() {
	var oldest string
	var used uint64
	first := true
	for k, e := range r.entries {
		if first || e.used < used {
			oldest, used, first = k, e.used, false
		}
	}
	delete(r.entries, oldest)
}

// Epoch returns the page's current epoch; pass it to PutAt.
func (r *Retained[T]) Epoch(page string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entry(page).epoch
}

// PutAt stores v if no invalidation happened since epoch was read, and
// reports whether it did.
func (r *Retained[T]) PutAt(page string, epoch uint64, v T) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(page)
	if e.epoch != epoch {
		return false
	}
	e.value, e.valid = v, true
	return true
}

// Get returns the retained value of page, if valid.
func (r *Retained[T]) Get(page string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[page]
	if !ok || !e.valid {
		var zero T
		return zero, false
	}
	r.tick++
	e.used = r.tick
	return e.value, true
}

// Invalidate drops the page's value and moves it to a new epoch.
func (r *Retained[T]) Invalidate(page string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(page)
	r.epochs++
	e.epoch = r.epochs
	var zero T
	e.value, e.valid = zero, false
}

// Forget removes the page entirely (the page closed).
func (r *Retained[T]) Forget(page string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, page)
}
