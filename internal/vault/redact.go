package vault

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// MinRedactLen is the shortest value the Redactor registers: replacing a
// two-letter value everywhere would shred every text and protect nothing.
const MinRedactLen = 4

// Redactor replaces registered secret values with [vault:NAME]. It is safe
// for concurrent use; Redact is cheap when nothing is registered.
type Redactor struct {
	mu       sync.RWMutex
	forms    map[string]string // encoded form → name
	replacer *strings.Replacer // rebuilt on Register
}

// NewRedactor returns an empty redactor.
func NewRedactor() *Redactor { return &Redactor{forms: map[string]string{}} }

// Register adds value under name, in its raw, percent-encoded (query and
// path forms) and JSON-escaped (with and without HTML escaping) forms.
// Values shorter than MinRedactLen are ignored.
func (r *Redactor) Register(name, value string) {
	if r == nil || len(value) < MinRedactLen {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	added := false
	for _, f := range encodings(value) {
		if _, ok := r.forms[f]; !ok {
			r.forms[f] = name
			added = true
		}
	}
	if added {
		r.rebuild()
	}
}

// rebuild orders forms longest first, so a value that contains another is
// replaced whole.
func (r *Redactor) rebuild() {
	keys := make([]string, 0, len(r.forms))
	for k := range r.forms {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, "[vault:"+r.forms[k]+"]")
	}
	r.replacer = strings.NewReplacer(pairs...)
}

// Redact returns s with every registered form replaced.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	rep := r.replacer
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// Len is the number of registered forms.
func (r *Redactor) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.forms)
}

func encodings(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v), jsonEscape(v, true), jsonEscape(v, false)}
	slices.Sort(out)
	return slices.Compact(out)
}

// jsonEscape is v as it appears inside a JSON string, without the quotes.
func jsonEscape(v string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v) // a string always encodes
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}
