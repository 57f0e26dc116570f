package tool

import (
	"slices"
	"sync"

	"github.com/deltaharness/delta/internal/model"
)

// Registry is the set of tools the daemon offers, assembled explicitly at
// boot. It keeps insertion order, so the tool list a model sees (part of the
// prompt-cached prefix) is the same bytes from one turn to the next. It is
// safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	byName map[string]Tool
	order  []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: make(map[string]Tool)}
}

// Add registers tools in order. It panics on a nil tool, an empty name or a
// name already registered: those are wiring mistakes, found at boot.
func (r *Registry) Add(ts ...Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range ts {
		if t == nil {
			panic("tool: Add of a nil tool")
		}
		name := t.Spec().Name
		if name == "" {
			panic("tool: Add of a tool with no name")
		}
		if _, dup := r.byName[name]; dup {
			panic("tool: duplicate tool " + name)
		}
		r.byName[name] = t
		r.order = append(r.order, name)
	}
}

// AddMissing registers the tools whose names are not registered yet and
// returns how many it added. It is for sources that can report the same
// tool twice (an MCP server's list at boot and its later list_changed).
func (r *Registry) AddMissing(ts ...Tool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range ts {
		name := t.Spec().Name
		if _, dup := r.byName[name]; dup || name == "" {
			continue
		}
		r.byName[name] = t
		r.order = append(r.order, name)
		n++
	}
	return n
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byName[name]
	return t, ok
}

// Names lists the registered tools in insertion order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.order)
}

// Specs returns the specs of the named tools (all tools if names is nil) in
// insertion order, whatever order names is in, so a caller that builds the
// list from a map still gets stable bytes. Names not registered are skipped.
func (r *Registry) Specs(names []string) []model.ToolSpec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var want map[string]bool
	if names != nil {
		want = make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
	}
	specs := make([]model.ToolSpec, 0, len(r.order))
	for _, n := range r.order {
		if want == nil || want[n] {
			specs = append(specs, r.byName[n].Spec())
		}
	}
	return specs
}
