package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The published schemas are built with these helpers and validated by
// validate below, not by the SDK: the SDK's validator reports the submitted
// value in its messages, and bobby's contract is that a rejection names the
// schema location (pointer) and keyword (constraint) only.

func ptr[T any](v T) *T { return &v }

var falseSchema = &jsonschema.Schema{Not: &jsonschema.Schema{}}

// object builds a closed object schema (no additional properties).
func object(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	if props == nil {
		props = map[string]*jsonschema.Schema{}
	}
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: falseSchema}
}

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func strN(desc string, minLen, maxLen int) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc, MinLength: ptr(minLen), MaxLength: ptr(maxLen)}
}

func enum(desc string, vals ...string) *jsonschema.Schema {
	e := make([]any, len(vals))
	for i, v := range vals {
		e[i] = v
	}
	return &jsonschema.Schema{Type: "string", Description: desc, Enum: e}
}

func constStr(v string) *jsonschema.Schema {
	var a any = v
	return &jsonschema.Schema{Type: "string", Const: &a}
}

func integer(desc string, lo, hi float64) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: desc, Minimum: ptr(lo), Maximum: ptr(hi)}
}

func boolean(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc}
}

func array(desc string, items *jsonschema.Schema, maxItems int) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: desc, Items: items, MaxItems: ptr(maxItems)}
}

// outputObject is a permissive output schema: type object with the listed
// properties typed, so clients can validate and render without the shapes
// being frozen.
func outputObject(props map[string]string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for name, typ := range props {
		ps := &jsonschema.Schema{}
		if strings.Contains(typ, "|") {
			ps.Types = strings.Split(typ, "|")
		} else if typ != "" {
			ps.Type = typ
		}
		s.Properties[name] = ps
	}
	return s
}

// violation is one schema failure: where in the schema, which keyword.
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

// decodeArgs parses raw tool arguments into generic JSON values, keeping
// numbers exact. Absent arguments are an empty object.
func decodeArgs(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("arguments hold trailing data after the JSON value")
	}
	return v, nil
}

// validate checks v against s. It supports the keywords bobby's schemas
// use: type(s), properties, required, additionalProperties, enum, const,
// minLength, maxLength, pattern, minimum, maximum, items, minItems,
// maxItems, uniqueItems and oneOf (discriminated by a "kind" const, or plain).
func validate(s *jsonschema.Schema, v any) *violation {
	return validateAt(s, v, "", 0)
}

const maxDepth = 32

func validateAt(s *jsonschema.Schema, v any, ptr string, depth int) *violation {
	if s == nil {
		return nil
	}
	if depth > maxDepth {
		return &violation{ptr, "maxDepth", fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	if s.Ref != "" {
		d, ok := schemaDefs[strings.TrimPrefix(s.Ref, "#/$defs/")]
		if !ok {
			return &violation{ptr, "$ref", "unresolvable schema reference"}
		}
		return validateAt(d, v, ptr, depth+1)
	}
	if isFalse(s) {
		return &violation{ptr, "false", "no value is allowed here"}
	}
	if len(s.OneOf) > 0 {
		return validateOneOf(s, v, ptr, depth)
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) > 0 && !typeMatches(types, v) {
		return &violation{ptr, "type", "must be " + strings.Join(types, " or ")}
	}
	if s.Const != nil && !jsonEqual(*s.Const, v) {
		return &violation{ptr, "const", fmt.Sprintf("must be %v", *s.Const)}
	}
	if len(s.Enum) > 0 {
		ok := false
		for _, e := range s.Enum {
			if jsonEqual(e, v) {
				ok = true
				break
			}
		}
		if !ok {
			return &violation{ptr, "enum", "must be one of " + enumList(s.Enum)}
		}
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			return &violation{ptr, "minLength", fmt.Sprintf("must be at least %d characters", *s.MinLength)}
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return &violation{ptr, "maxLength", fmt.Sprintf("must be at most %d characters", *s.MaxLength)}
		}
		if s.Pattern != "" {
			re, err := compilePattern(s.Pattern)
			if err == nil && !re.MatchString(x) {
				return &violation{ptr, "pattern", "must match " + s.Pattern}
			}
		}
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return &violation{ptr, "type", "must be a finite number"}
		}
		if s.Minimum != nil && f < *s.Minimum {
			return &violation{ptr, "minimum", fmt.Sprintf("must be ≥ %v", *s.Minimum)}
		}
		if s.Maximum != nil && f > *s.Maximum {
			return &violation{ptr, "maximum", fmt.Sprintf("must be ≤ %v", *s.Maximum)}
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			return &violation{ptr, "minItems", fmt.Sprintf("must have at least %d items", *s.MinItems)}
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			return &violation{ptr, "maxItems", fmt.Sprintf("must have at most %d items", *s.MaxItems)}
		}
		if s.UniqueItems {
			for i := range x {
				for j := i + 1; j < len(x); j++ {
					if jsonEqual(x[i], x[j]) {
						return &violation{ptr, "uniqueItems", "items must be unique"}
					}
				}
			}
		}
		if s.Items != nil {
			for i, item := range x {
				if vi := validateAt(s.Items, item, fmt.Sprintf("%s/%d", ptr, i), depth+1); vi != nil {
					return vi
				}
			}
		}
	case map[string]any:
		for _, req := range s.Required {
			if _, ok := x[req]; !ok {
				return &violation{ptr + "/" + escapePointer(req), "required", "is required"}
			}
		}
		// Check known properties in a stable order so the first reported
		// violation does not depend on map iteration.
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			ps, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil {
					if isFalse(s.AdditionalProperties) {
						return &violation{ptr, "additionalProperties", "unknown property; allowed: " + propList(s)}
					}
					if vi := validateAt(s.AdditionalProperties, x[k], ptr+"/"+escapePointer(k), depth+1); vi != nil {
						return vi
					}
				}
				continue
			}
			if vi := validateAt(ps, x[k], ptr+"/"+escapePointer(k), depth+1); vi != nil {
				return vi
			}
		}
	}
	return nil
}

// validateOneOf handles discriminated unions precisely (the branch named by
// the instance's "kind") and falls back to exactly-one-matches otherwise.
func validateOneOf(s *jsonschema.Schema, v any, ptr string, depth int) *violation {
	if kinds := discriminators(s); kinds != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return &violation{ptr, "type", "must be object"}
		}
		k, present := m["kind"]
		if !present {
			return &violation{ptr + "/kind", "required", "is required"}
		}
		ks, _ := k.(string)
		branch, ok := kinds[ks]
		if !ok {
			names := make([]string, 0, len(kinds))
			for n := range kinds {
				names = append(names, n)
			}
			sort.Strings(names)
			return &violation{ptr + "/kind", "enum", "must be one of " + strings.Join(names, ", ")}
		}
		return validateAt(branch, v, ptr, depth+1)
	}
	matched := 0
	var first *violation
	for _, b := range s.OneOf {
		if vi := validateAt(b, v, ptr, depth+1); vi == nil {
			matched++
		} else if first == nil {
			first = vi
		}
	}
	switch {
	case matched == 1:
		return nil
	case matched == 0 && first != nil:
		return first
	default:
		return &violation{ptr, "oneOf", "matches more than one alternative"}
	}
}

func discriminators(s *jsonschema.Schema) map[string]*jsonschema.Schema {
	out := map[string]*jsonschema.Schema{}
	for _, b := range s.OneOf {
		kp, ok := b.Properties["kind"]
		if !ok || kp.Const == nil {
			return nil
		}
		k, ok := (*kp.Const).(string)
		if !ok {
			return nil
		}
		out[k] = b
	}
	return out
}

func isFalse(s *jsonschema.Schema) bool {
	return s.Not != nil && s.Not.Type == "" && len(s.Not.Properties) == 0 && s.Not.Not == nil && s.Type == ""
}

func propList(s *jsonschema.Schema) string {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

func enumList(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func typeMatches(types []string, v any) bool {
	for _, t := range types {
		switch t {
		case "object":
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case "array":
			if _, ok := v.([]any); ok {
				return true
			}
		case "string":
			if _, ok := v.(string); ok {
				return true
			}
		case "boolean":
			if _, ok := v.(bool); ok {
				return true
			}
		case "null":
			if v == nil {
				return true
			}
		case "number":
			if _, ok := v.(json.Number); ok {
				return true
			}
		case "integer":
			if n, ok := v.(json.Number); ok {
				if _, err := n.Int64(); err == nil {
					return true
				}
				if f, err := n.Float64(); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
					return true
				}
			}
		}
	}
	return false
}

// jsonEqual compares a schema constant (plain Go values) with an instance
// (json.Number numbers).
func jsonEqual(a, b any) bool {
	na, aok := toFloat(a)
	nb, bok := toFloat(b)
	if aok || bok {
		return aok && bok && na == nb
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return a == b
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

var patternCache sync.Map // pattern → *regexp.Regexp

func compilePattern(p string) (*regexp.Regexp, error) {
	if re, ok := patternCache.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	patternCache.Store(p, re)
	return re, nil
}
