package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// placeholder is one {{name}} in a writeShape string (spaces inside the
// braces allowed).
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// RenderShape resolves a writeShape template against vals: every string
// leaf, at any depth of objects and arrays, has its {{name}} placeholders
// replaced. A leaf that is exactly one placeholder takes the value with its
// type (a number stays a number), and when vals has no such value the
// object key or array item is removed. Placeholders inside a longer string
// become text, an unavailable one the empty string. Object keys are kept as
// written. The root must be a JSON object.
func RenderShape(shape []byte, vals map[string]any) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(shape))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("writeShape: %w", err)
	}
	if dec.More() {
		return nil, errors.New("writeShape: more than one JSON value")
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, errors.New("writeShape: want a JSON object at its root")
	}
	out, _ := resolve(obj, vals)
	return out.(map[string]any), nil
}

// resolve returns v with its placeholders resolved, and false when v is a
// whole-leaf placeholder with no value (its parent drops it).
func resolve(v any, vals map[string]any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, c := range v {
			if r, ok := resolve(c, vals); ok {
				out[k] = r
			}
		}
		return out, true
	case []any:
		out := make([]any, 0, len(v))
		for _, c := range v {
			if r, ok := resolve(c, vals); ok {
				out = append(out, r)
			}
		}
		return out, true
	case string:
		if m := placeholder.FindStringSubmatchIndex(v); m != nil && m[0] == 0 && m[1] == len(v) {
			val, ok := vals[v[m[2]:m[3]]]
			if !ok || val == nil {
				return nil, false
			}
			return val, true
		}
		return placeholder.ReplaceAllStringFunc(v, func(p string) string {
			name := placeholder.FindStringSubmatch(p)[1]
			return text(vals[name])
		}), true
	}
	return v, true
}

// text is a value as it reads inside a longer string.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case json.Number:
		return v.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.Trim(string(b), `"`)
}
