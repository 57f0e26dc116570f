package snapshot

import (
	"sync"
	"time"
)

// DefaultRetainedPages bounds how many pages a Retained remembers.
const DefaultRetainedPages = 256

// Retained holds the last snapshot of each page for context questions. A
// snapshot stays valid until Invalidate: the caller invalidates on every
// command that may have changed the page (navigate, emulate, any mutating
// command, any failed non-read-only command). Safe for concurrent use.
type Retained struct {
	// MaxPages bounds the pages held; the least recently stored goes first.
	// New sets DefaultRetainedPages.
	MaxPages int

	mu    sync.Mutex
	pages map[string]*retainedEntry
}

type retainedEntry struct {
	snap   *Snapshot
	valid  bool
	stored time.Time
}

// NewRetained returns an empty Retained with the default bound.
func NewRetained() *Retained {
	return &Retained{MaxPages: DefaultRetainedPages, pages: map[string]*retainedEntry{}}
}

// Put records s as the page's current context. A scoped snapshot is stored
// too: context questions then see only that scope.
func (r *Retained) Put(pageID string, s *Snapshot) {
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pages == nil {
		r.pages = map[string]*retainedEntry{}
	}
	r.pages[pageID] = &retainedEntry{snap: s, valid: true, stored: time.Now()}
	r.evictLocked()
}

func (r *Retained) evictLocked() {
	limit := r.MaxPages
	if limit <= 0 {
		limit = DefaultRetainedPages
	}
	for len(r.pages) > limit {
		var oldest string
		var at time.Time
		for id, e := range r.pages {
			if oldest == "" || e.stored.Before(at) {
				oldest, at = id, e.stored
			}
		}
		delete(r.pages, oldest)
	}
}

// Get returns the page's snapshot while it is valid.
func (r *Retained) Get(pageID string) (*Snapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.pages[pageID]
	if !ok || !e.valid {
		return nil, false
	}
	return e.snap, true
}

// Invalidate marks the page's snapshot stale; Ask answers nothing for the
// page until the next Put.
func (r *Retained) Invalidate(pageID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.pages[pageID]; ok {
		e.valid = false
	}
}

// Forget drops the page, for a closed page.
func (r *Retained) Forget(pageID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pages, pageID)
}

// Ask answers a context question from the page's valid snapshot; see the
// package-level [Ask]. No valid snapshot means no answer.
func (r *Retained) Ask(pageID, question string) (Answer, bool) {
	s, ok := r.Get(pageID)
	if !ok {
		return Answer{}, false
	}
	return Ask(s, question)
}
