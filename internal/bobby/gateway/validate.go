package gateway

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Arguments are validated by github.com/google/jsonschema-go against
// schemas resolved once (compile). Its errors name the submitted value and
// only the schema locations of the failure, so bobby reports neither its
// wording nor its value: a violation is mapped to {pointer, constraint}
// like this.
//
//   - The error is a chain "validating <schema path>: …: <keyword>: …"
//     through every schema the failing value was checked against. The
//     keyword of the last link is the constraint ("unexpected additional
//     properties" is additionalProperties); nothing after it is read.
//   - The instance pointer follows the chain: a "/properties/<name>" step
//     enters that property; a step that does not extend the previous path
//     is a $ref and enters nothing. An "/items" or "/additionalProperties"
//     step does not say which element failed, so the element is found by
//     validating each one (in order; object keys sorted) against that
//     subschema, resolved on its own, and the violation is the one that
//     element reports, under its index or key.
//   - A failed oneOf says only that no branch matched. A discriminated
//     union (every branch has a const "kind") is checked by the branch the
//     instance's kind names, resolved on its own: kind missing is required
//     at /kind, an unknown kind is enum at /kind, else that branch's
//     violation. Any other oneOf is reported as oneOf at its own location.
//   - A required violation points at the first missing property (schema
//     order sorted), found from the schema and the instance's keys.
//
// The message is written from the schema (bounds, allowed values,
// allowed property names), never from the instance.

// violation is one schema failure: where in the arguments, which keyword.
type violation struct {
	Pointer    string
	Constraint string
	Detail     string // schema-derived explanation, never the value
}

func (v *violation) Error() string {
	return fmt.Sprintf("%s: %s", pointerOrRoot(v.Pointer), v.Detail)
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// checker is one resolved schema, plus resolved copies of the subschemas
// a violation may have to be located in (items, additionalProperties,
// oneOf branches), by their schema path.
type checker struct {
	rs    *jsonschema.Resolved
	nodes map[string]*jsonschema.Schema // schema path → schema, as the library names them
	subs  map[string]*checker
}

// compile resolves s (a deep copy, with the $defs it references) and the
// subschemas located violations need.
func compile(s *jsonschema.Schema) (*checker, error) {
	root := withDefs(s.CloneSchemas())
	defs := root.Defs
	rs, err := root.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve schema: %w", err)
	}
	c := &checker{rs: rs, nodes: map[string]*jsonschema.Schema{}, subs: map[string]*checker{}}
	var walk func(path string, n *jsonschema.Schema) error
	sub := func(path string, n *jsonschema.Schema) error {
		cp := n.CloneSchemas()
		if len(defs) > 0 {
			cp.Defs = defs
		}
		sc, err := compile(cp)
		if err != nil {
			return err
		}
		c.subs[path] = sc
		return nil
	}
	walk = func(path string, n *jsonschema.Schema) error {
		if n == nil {
			return nil
		}
		c.nodes[path] = n
		base := path
		if path == "root" {
			base = ""
		}
		for k, p := range n.Properties {
			if err := walk(base+"/properties/"+escapePointer(k), p); err != nil {
				return err
			}
		}
		for k, d := range n.Defs {
			if err := walk(base+"/$defs/"+escapePointer(k), d); err != nil {
				return err
			}
		}
		if n.Items != nil {
			if err := sub(base+"/items", n.Items); err != nil {
				return err
			}
			if err := walk(base+"/items", n.Items); err != nil {
				return err
			}
		}
		if n.AdditionalProperties != nil && !isFalse(n.AdditionalProperties) {
			if err := sub(base+"/additionalProperties", n.AdditionalProperties); err != nil {
				return err
			}
			if err := walk(base+"/additionalProperties", n.AdditionalProperties); err != nil {
				return err
			}
		}
		for i, b := range n.OneOf {
			p := fmt.Sprintf("%s/oneOf/%d", base, i)
			if err := sub(p, b); err != nil {
				return err
			}
			if err := walk(p, b); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("root", root); err != nil {
		return nil, err
	}
	return c, nil
}

// checkers caches compiled schemas by schema (the table's schemas are
// built once) and by their JSON (per-principal schemas are built per
// call; equal ones share a checker).
var checkers sync.Map // *jsonschema.Schema or string → *checker

// validate checks v (as decodeArgs returns it) against s.
func validate(s *jsonschema.Schema, v any) *violation {
	if s == nil {
		return nil
	}
	c, ok := checkers.Load(s)
	if !ok {
		key, err := json.Marshal(s)
		if err != nil {
			return &violation{"", "schema", "the schema does not encode"}
		}
		if c, ok = checkers.Load(string(key)); !ok {
			cc, err := compile(s)
			if err != nil {
				return &violation{"", "schema", "the schema does not resolve"}
			}
			c, _ = checkers.LoadOrStore(string(key), cc)
		}
		checkers.Store(s, c)
	}
	return c.(*checker).check(plain(v))
}

// plain turns decodeArgs' exact numbers into float64, what the library
// validates numbers as. A number beyond float64 is not a valid argument.
func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nonFinite{}
		}
		return f
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = plain(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = plain(e)
		}
		return a
	}
	return v
}

// nonFinite stands for a number float64 cannot hold; no JSON type matches it.
type nonFinite struct{}

func (c *checker) check(v any) *violation {
	if hasNonFinite(v) {
		return c.locateNonFinite(v, "")
	}
	err := c.rs.Validate(v)
	if err == nil {
		return nil
	}
	return c.locate(v, err.Error())
}

func hasNonFinite(v any) bool {
	switch x := v.(type) {
	case nonFinite:
		return true
	case map[string]any:
		for _, e := range x {
			if hasNonFinite(e) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(x, hasNonFinite)
	}
	return false
}

// locateNonFinite reports the first (sorted) path to a non-finite number.
func (c *checker) locateNonFinite(v any, ptr string) *violation {
	switch x := v.(type) {
	case nonFinite:
		return &violation{ptr, "type", "must be a finite number"}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if hasNonFinite(x[k]) {
				return c.locateNonFinite(x[k], ptr+"/"+escapePointer(k))
			}
		}
	case []any:
		for i, e := range x {
			if hasNonFinite(e) {
				return c.locateNonFinite(e, fmt.Sprintf("%s/%d", ptr, i))
			}
		}
	}
	return &violation{ptr, "type", "must be a finite number"}
}

// chain splits the library's error into the schema paths it went through
// and the last link's text.
func chain(msg string) (paths []string, leaf string) {
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			return paths, msg
		}
		path, after, ok := strings.Cut(rest, ": ")
		if !ok {
			return paths, msg
		}
		paths = append(paths, path)
		msg = after
	}
}

// keywordOf is the schema keyword a leaf message names.
func keywordOf(leaf string) string {
	if strings.HasPrefix(leaf, "unexpected additional properties") {
		return "additionalProperties"
	}
	k, _, ok := strings.Cut(leaf, ":")
	if !ok || strings.ContainsAny(k, " \"") {
		return "schema"
	}
	return k
}

// locate maps a library error about v to a violation (see the comment at
// the top of this file).
func (c *checker) locate(v any, msg string) *violation {
	paths, leaf := chain(msg)
	ptr, cur, prev := "", v, ""
	for _, p := range paths {
		if p == "root" {
			prev = ""
			continue
		}
		rel, ok := strings.CutPrefix(p, prev)
		prev = p
		if !ok || !strings.HasPrefix(rel, "/") {
			continue // a $ref: the same instance, another schema
		}
		segs := strings.Split(rel[1:], "/")
		switch segs[0] {
		case "properties":
			if len(segs) < 2 {
				continue
			}
			name := unescapePointer(segs[1])
			m, _ := cur.(map[string]any)
			ptr, cur = ptr+"/"+escapePointer(name), m[name]
		case "items":
			if sub := c.subs[p]; sub != nil {
				if arr, ok := cur.([]any); ok {
					for i, e := range arr {
						if vi := sub.check(e); vi != nil {
							vi.Pointer = fmt.Sprintf("%s/%d%s", ptr, i, vi.Pointer)
							return vi
						}
					}
				}
			}
		case "additionalProperties":
			if sub := c.subs[p]; sub != nil {
				m, _ := cur.(map[string]any)
				parent := c.nodes[strings.TrimSuffix(p, "/additionalProperties")]
				keys := make([]string, 0, len(m))
				for k := range m {
					if parent == nil || parent.Properties[k] == nil {
						keys = append(keys, k)
					}
				}
				sort.Strings(keys)
				for _, k := range keys {
					if vi := sub.check(m[k]); vi != nil {
						vi.Pointer = ptr + "/" + escapePointer(k) + vi.Pointer
						return vi
					}
				}
			}
		}
	}
	last := "root"
	if len(paths) > 0 {
		last = paths[len(paths)-1]
	}
	node := c.nodes[last]
	kw := keywordOf(leaf)
	if node == nil {
		return &violation{ptr, kw, "violates " + kw}
	}
	switch kw {
	case "oneOf":
		return c.locateOneOf(node, last, cur, ptr)
	case "required":
		m, _ := cur.(map[string]any)
		req := slices.Clone(node.Required)
		sort.Strings(req)
		for _, r := range req {
			if _, ok := m[r]; !ok {
				return &violation{ptr + "/" + escapePointer(r), "required", "is required"}
			}
		}
	}
	return &violation{ptr, kw, detailOf(node, kw)}
}

// locateOneOf names the violation of a oneOf the instance matched no (or
// more than one) branch of.
func (c *checker) locateOneOf(node *jsonschema.Schema, path string, v any, ptr string) *violation {
	base := path
	if path == "root" {
		base = ""
	}
	kinds := discriminators(node)
	if kinds == nil {
		matched := 0
		for i := range node.OneOf {
			if sub := c.subs[fmt.Sprintf("%s/oneOf/%d", base, i)]; sub != nil && sub.check(v) == nil {
				matched++
			}
		}
		if matched > 1 {
			return &violation{ptr, "oneOf", "matches more than one alternative"}
		}
		return &violation{ptr, "oneOf", "matches none of the alternatives"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return &violation{ptr, "type", "must be object"}
	}
	k, present := m["kind"]
	if !present {
		return &violation{ptr + "/kind", "required", "is required"}
	}
	ks, _ := k.(string)
	i, ok := kinds[ks]
	if !ok {
		names := make([]string, 0, len(kinds))
		for n := range kinds {
			names = append(names, n)
		}
		sort.Strings(names)
		return &violation{ptr + "/kind", "enum", "must be one of " + strings.Join(names, ", ")}
	}
	sub := c.subs[fmt.Sprintf("%s/oneOf/%d", base, i)]
	if sub == nil {
		return &violation{ptr, "oneOf", "matches none of the alternatives"}
	}
	vi := sub.check(v)
	if vi == nil {
		return &violation{ptr, "oneOf", "matches more than one alternative"}
	}
	vi.Pointer = ptr + vi.Pointer
	return vi
}

// discriminators maps each branch's const kind to its index, or is nil
// when the oneOf is not discriminated by kind.
func discriminators(s *jsonschema.Schema) map[string]int {
	out := map[string]int{}
	for i, b := range s.OneOf {
		kp, ok := b.Properties["kind"]
		if !ok || kp.Const == nil {
			return nil
		}
		k, ok := (*kp.Const).(string)
		if !ok {
			return nil
		}
		out[k] = i
	}
	return out
}

// detailOf explains keyword kw of schema s, from the schema alone.
func detailOf(s *jsonschema.Schema, kw string) string {
	switch kw {
	case "type":
		types := s.Types
		if s.Type != "" {
			types = []string{s.Type}
		}
		return "must be " + strings.Join(types, " or ")
	case "enum":
		return "must be one of " + enumList(s.Enum)
	case "const":
		if s.Const != nil {
			return fmt.Sprintf("must be %v", *s.Const)
		}
	case "minLength":
		if s.MinLength != nil {
			return fmt.Sprintf("must be at least %d characters", *s.MinLength)
		}
	case "maxLength":
		if s.MaxLength != nil {
			return fmt.Sprintf("must be at most %d characters", *s.MaxLength)
		}
	case "minimum":
		if s.Minimum != nil {
			return fmt.Sprintf("must be ≥ %v", *s.Minimum)
		}
	case "maximum":
		if s.Maximum != nil {
			return fmt.Sprintf("must be ≤ %v", *s.Maximum)
		}
	case "minItems":
		if s.MinItems != nil {
			return fmt.Sprintf("must have at least %d items", *s.MinItems)
		}
	case "maxItems":
		if s.MaxItems != nil {
			return fmt.Sprintf("must have at most %d items", *s.MaxItems)
		}
	case "minProperties":
		if s.MinProperties != nil {
			return fmt.Sprintf("must have at least %d properties", *s.MinProperties)
		}
	case "maxProperties":
		if s.MaxProperties != nil {
			return fmt.Sprintf("must have at most %d properties", *s.MaxProperties)
		}
	case "uniqueItems":
		return "items must be unique"
	case "pattern":
		return "must match " + s.Pattern
	case "additionalProperties":
		return "unknown property; allowed: " + propList(s)
	case "not":
		return "no value is allowed here"
	}
	return "violates " + kw
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
