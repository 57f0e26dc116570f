package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deltaharness/delta/internal/model"
)

// Func adapts a typed function into a Tool. The parameters' JSON Schema is
// inferred from P, which must be a struct: the json tag names a field, the
// jsonschema tag is its description, and a field without omitempty (or
// omitzero) is required. The schema is marshalled once, here, so Spec returns
// the same bytes for the life of the process; they are part of the
// prompt-cached prefix.
//
// Before fn runs, the model's arguments are checked strictly: invalid JSON,
// a non-object, an unknown field, a missing required field, a null where a
// value is required, or a value of the wrong type each become an error Result
// that names the field and says what is expected, so the model can repair
// the call. A null given for an optional field counts as absent (some models
// send every field). fn only ever sees arguments that passed.
//
// Func panics if P has no valid object schema: that is a programming error,
// found when the tool is built at boot.
func Func[P any](name, description string, readOnly bool, fn func(ctx context.Context, c Call, p P) (Result, error)) Tool {
	if name == "" {
		panic("tool.Func: empty name")
	}
	if fn == nil {
		panic("tool.Func(" + name + "): nil function")
	}
	schema, err := jsonschema.For[P](nil)
	if err != nil {
		panic(fmt.Sprintf("tool.Func(%s): infer schema: %v", name, err))
	}
	if schema.Type != "object" {
		panic(fmt.Sprintf("tool.Func(%s): parameters must be a struct, got schema type %q", name, schema.Type))
	}
	if schema.Properties == nil {
		// A model API expects "properties" on every object schema, even an empty one.
		schema.Properties = map[string]*jsonschema.Schema{}
	}
	params, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tool.Func(%s): marshal schema: %v", name, err))
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool.Func(%s): resolve schema: %v", name, err))
	}
	t := &funcTool[P]{
		spec:     model.ToolSpec{Name: name, Description: description, Parameters: params},
		readOnly: readOnly,
		fn:       fn,
		resolved: resolved,
		fields:   make(map[string]*field, len(schema.Properties)),
	}
	required := make(map[string]bool, len(schema.Required))
	for _, r := range schema.Required {
		required[r] = true
	}
	for _, n := range schema.PropertyOrder {
		ps := schema.Properties[n]
		pr, err := ps.Resolve(nil)
		if err != nil {
			panic(fmt.Sprintf("tool.Func(%s): resolve schema of %s: %v", name, n, err))
		}
		t.fields[n] = &field{name: n, schema: ps, resolved: pr, required: required[n]}
		t.order = append(t.order, n)
	}
	t.summary = t.describeFields()
	return t
}

// field is one top-level parameter.
type field struct {
	name     string
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	required bool
}

type funcTool[P any] struct {
	spec     model.ToolSpec
	readOnly bool
	fn       func(ctx context.Context, c Call, p P) (Result, error)
	resolved *jsonschema.Resolved
	fields   map[string]*field
	order    []string
	summary  string // the accepted fields, for error messages
}

func (t *funcTool[P]) Spec() model.ToolSpec {
	s := t.spec
	s.Parameters = slices.Clone(s.Parameters) // callers may not scribble on the cached bytes
	return s
}

func (t *funcTool[P]) ReadOnly() bool { return t.readOnly }

func (t *funcTool[P]) Run(ctx context.Context, c Call) (Result, error) {
	p, problem := t.decode(c.Args)
	if problem != "" {
		return Errorf("invalid arguments for %s: %s", t.spec.Name, problem), nil
	}
	return t.fn(ctx, c, p)
}

// decode checks raw against the schema and decodes it into P, or returns a
// message for the model saying what is wrong.
func (t *funcTool[P]) decode(raw json.RawMessage) (P, string) {
	var p P
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		b = []byte("{}")
	}
	if b[0] == '"' {
		// Some models send the arguments object encoded as a JSON string.
		var s string
		if json.Unmarshal(b, &s) == nil {
			if inner := bytes.TrimSpace([]byte(s)); len(inner) > 0 && inner[0] == '{' {
				b = inner
			}
		}
	}
	var any0 any
	if err := json.Unmarshal(b, &any0); err != nil {
		return p, fmt.Sprintf("not valid JSON (%v); send one JSON object. %s", err, t.summary)
	}
	obj, ok := any0.(map[string]any)
	if !ok {
		return p, fmt.Sprintf("must be a JSON object, got %s. %s", kindOf(any0), t.summary)
	}

	var problems []string
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f, known := t.fields[k]
		if !known {
			problems = append(problems, t.unknown(k))
			continue
		}
		v := obj[k]
		if v == nil {
			if !f.required {
				delete(obj, k) // null for an optional field means "not given"
				continue
			}
			problems = append(problems, fmt.Sprintf("field %q is null; expected %s", k, describe(f.schema)))
			continue
		}
		if err := f.resolved.Validate(v); err != nil {
			problems = append(problems, fieldProblem(f, v, err))
		}
	}
	for _, n := range t.order {
		if t.fields[n].required && !slices.Contains(keys, n) {
			problems = append(problems, fmt.Sprintf("missing required field %q (%s)", n, t.fieldHint(t.fields[n])))
		}
	}
	if len(problems) > 0 {
		return p, strings.Join(problems, "; ") + ". " + t.summary
	}
	// The per-field checks cover the top level; the whole-schema pass is the
	// backstop for anything they do not model.
	if err := t.resolved.Validate(obj); err != nil {
		return p, fmt.Sprintf("%s. %s", innermost(err), t.summary)
	}

	clean, err := json.Marshal(obj)
	if err != nil {
		return p, fmt.Sprintf("cannot re-encode arguments: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			want := te.Type.String()
			if f, ok := t.fields[te.Field]; ok {
				want = describe(f.schema)
			}
			return p, fmt.Sprintf("field %q: cannot use %s here, expected %s in range. %s", te.Field, te.Value, want, t.summary)
		}
		return p, fmt.Sprintf("%v. %s", err, t.summary)
	}
	return p, ""
}

// unknown describes an unexpected field, pointing at a near miss in case.
func (t *funcTool[P]) unknown(k string) string {
	for _, n := range t.order {
		if strings.EqualFold(n, k) {
			return fmt.Sprintf("unknown field %q (did you mean %q?)", k, n)
		}
	}
	return fmt.Sprintf("unknown field %q", k)
}

func (t *funcTool[P]) fieldHint(f *field) string {
	if f.schema.Description != "" {
		return describe(f.schema) + ": " + f.schema.Description
	}
	return describe(f.schema)
}

// describeFields renders the accepted fields once, for every error message.
func (t *funcTool[P]) describeFields() string {
	if len(t.order) == 0 {
		return "This tool takes no arguments: send {}."
	}
	parts := make([]string, 0, len(t.order))
	for _, n := range t.order {
		f := t.fields[n]
		req := "optional"
		if f.required {
			req = "required"
		}
		parts = append(parts, fmt.Sprintf("%s (%s, %s)", n, describe(f.schema), req))
	}
	return "Fields: " + strings.Join(parts, ", ") + "."
}

// fieldProblem explains why value v failed the field's schema.
func fieldProblem(f *field, v any, err error) string {
	if !typeMatches(f.schema, v) {
		return fmt.Sprintf("field %q: expected %s, got %s %s", f.name, describe(f.schema), kindOf(v), preview(v))
	}
	return fmt.Sprintf("field %q: %s", f.name, innermost(err))
}

// describe names the JSON type a schema accepts, as a model would read it.
func describe(s *jsonschema.Schema) string {
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = preview(e)
		}
		return "one of " + strings.Join(vals, ", ")
	}
	var names []string
	for _, ty := range schemaTypes(s) {
		if ty == "array" && s.Items != nil {
			ty = "array of " + describe(s.Items)
		}
		names = append(names, ty)
	}
	if len(names) == 0 {
		return "any JSON value"
	}
	return strings.Join(names, " or ")
}

// schemaTypes lists the types a schema allows, leaving out "null": a null is
// treated as absence, not as a value to describe.
func schemaTypes(s *jsonschema.Schema) []string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	var out []string
	for _, ty := range types {
		if ty != "null" {
			out = append(out, ty)
		}
	}
	return out
}

func typeMatches(s *jsonschema.Schema, v any) bool {
	types := schemaTypes(s)
	if len(types) == 0 {
		return true
	}
	k := kindOf(v)
	for _, ty := range types {
		if ty == k || ty == "number" && k == "integer" {
			return true
		}
	}
	return false
}

// kindOf is the JSON Schema type of a decoded JSON value.
func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, frac := math.Modf(x); frac == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// preview renders a value briefly for an error message.
func preview(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const max = 60
	if r := []rune(string(b)); len(r) > max {
		return string(r[:max]) + "…"
	}
	return string(b)
}

// innermost drops the validator's "validating …:" wrappers, keeping the cause.
func innermost(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}
