package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The published schemas are built with these helpers and validated by
// validate (validate.go), not by the SDK: the SDK reports the submitted
// value in its messages, and bobby's contract is that a rejection names the
// argument's location (pointer) and the schema keyword (constraint) only.

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
