package firefox

import "slices"

// openOrder holds a runtime's sessions or a session's pages by id, in the
// order they were opened. Its owner's mutex guards it.
type openOrder[T any] struct {
	byID map[string]T
	ids  []string
}

func (o *openOrder[T]) add(id string, v T) {
	if o.byID == nil {
		o.byID = map[string]T{}
	}
	o.byID[id] = v
	o.ids = append(o.ids, id)
}

func (o *openOrder[T]) get(id string) (T, bool) {
	v, ok := o.byID[id]
	return v, ok
}

// list is every entry, oldest first.
func (o *openOrder[T]) list() []T {
	out := make([]T, 0, len(o.ids))
	for _, id := range o.ids {
		out = append(out, o.byID[id])
	}
	return out
}

// remove takes the entry of id out; ok is false when there was none.
func (o *openOrder[T]) remove(id string) (v T, ok bool) {
	v, ok = o.byID[id]
	if ok {
		delete(o.byID, id)
		o.ids = slices.DeleteFunc(o.ids, func(x string) bool { return x == id })
	}
	return v, ok
}

// newest is the id of the entry opened last, "" when there is none.
func (o *openOrder[T]) newest() string {
	if n := len(o.ids); n > 0 {
		return o.ids[n-1]
	}
	return ""
}

// clear empties the set and returns what it held, oldest first.
func (o *openOrder[T]) clear() []T {
	all := o.list()
	*o = openOrder[T]{}
	return all
}
