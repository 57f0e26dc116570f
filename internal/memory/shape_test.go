package memory_test

import (
	"encoding/json"
	"testing"

	"github.com/deltaharness/delta/internal/memory"
)

// TestRenderShapeTable: a whole-leaf placeholder keeps its value's type and
// is removed (key or array item) when the value is unavailable; embedded
// placeholders become text, unavailable ones ""; resolution reaches every
// depth; a root that is not an object is refused.
func TestRenderShapeTable(t *testing.T) {
	vals := map[string]any{"summary": "Reflection (pitfall) from run resp_1", "confidence": 0.85, "runs": 2,
		"content": "Lead with scope.", "run_id": "resp_1", "run_ref_key": "run_ref", "kind": "pitfall", "target_kind": "note"}
	cases := []struct {
		name, shape, want string
	}{
		{"typed number", `{"c":"{{confidence}}"}`, `{"c":0.85}`},
		{"typed int", `{"n":"{{runs}}"}`, `{"n":2}`},
		{"string leaf", `{"s":"{{summary}}"}`, `{"s":"Reflection (pitfall) from run resp_1"}`},
		{"spaces inside braces", `{"s":"{{ content }}"}`, `{"s":"Lead with scope."}`},
		{"missing leaf removes the key", `{"a":"{{brief}}","b":"x"}`, `{"b":"x"}`},
		{"missing leaf removes the array item", `{"xs":["{{brief}}","{{kind}}"]}`, `{"xs":["pitfall"]}`},
		{"embedded becomes text", `{"s":"conf={{confidence}} runs={{runs}}"}`, `{"s":"conf=0.85 runs=2"}`},
		{"embedded missing is empty", `{"s":"[{{brief}}]"}`, `{"s":"[]"}`},
		{"nested objects and arrays", `{"p":{"key":"{{run_ref_key}}","value":"{{run_id}}"},"items":[{"kind":"{{target_kind}}","source_kind":"{{kind}}","confidence":"{{confidence}}","gone":"{{nope}}"}]}`,
			`{"items":[{"confidence":0.85,"kind":"note","source_kind":"pitfall"}],"p":{"key":"run_ref","value":"resp_1"}}`},
		{"keys are literal", `{"{{kind}}":"{{kind}}"}`, `{"{{kind}}":"pitfall"}`},
		{"non-string leaves kept", `{"n":3,"b":true,"z":null,"f":1.5}`, `{"b":true,"f":1.5,"n":3,"z":null}`},
		{"two placeholders are text", `{"s":"{{kind}}{{runs}}"}`, `{"s":"pitfall2"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := memory.RenderShape([]byte(tc.shape), vals)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Fatalf("rendered %s\nwant     %s", b, tc.want)
			}
		})
	}
	for _, bad := range []string{`[]`, `"x"`, `3`, `{`, ``, `{} {}`} {
		if _, err := memory.RenderShape([]byte(bad), vals); err == nil {
			t.Fatalf("shape %q rendered, want an error", bad)
		}
	}
}

// FuzzRenderShape: any input either renders to a JSON object or is refused
// with an error, never a panic; a rendered shape marshals back to JSON.
func FuzzRenderShape(f *testing.F) {
	for _, s := range []string{`{"a":"{{summary}}"}`, `{"a":["{{x}}",{"b":"{{confidence}} {{y}}"}]}`, `[1]`, `{"a":"{{"}`, `{"a":"}}{{kind}}"}`} {
		f.Add(s)
	}
	vals := map[string]any{"summary": "s", "confidence": 0.9, "kind": "fact", "runs": 2}
	f.Fuzz(func(t *testing.T, shape string) {
		got, err := memory.RenderShape([]byte(shape), vals)
		if err != nil {
			return
		}
		if got == nil {
			t.Fatal("nil object without an error")
		}
		if _, err := json.Marshal(got); err != nil {
			t.Fatalf("rendered shape does not marshal: %v", err)
		}
	})
}
