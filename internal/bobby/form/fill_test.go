package form

import "testing"

func TestActionFor(t *testing.T) {
	text := Field{Type: "text"}
	check := Field{Type: "checkbox"}
	multi := Field{Type: "select-multiple"}
	for _, tt := range []struct {
		name  string
		field Field
		value any
		want  string // action kind, "" for an error
	}{
		{"string", text, "x", SetText},
		{"float", text, 3.5, SetText},
		{"bool into text", text, true, ""},
		{"object into text", text, map[string]any{}, ""},
		{"nil clears", text, nil, Clear},
		{"bool", check, false, SetChecked},
		{"on", check, "on", SetChecked},
		{"bad bool", check, "sometimes", ""},
		{"list", multi, []any{"a", 1.0}, SelectMany},
		{"one", multi, "a", SelectMany},
		{"bad list", multi, []any{map[string]any{}}, ""},
		{"file", Field{Type: "file"}, "/x", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, a, err := actionFor(matched{field: tt.field}, tt.value)
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("actionFor(%v) = %+v, want an error", tt.value, a)
			case tt.want != "" && (err != nil || a.Kind != tt.want):
				t.Errorf("actionFor(%v) = %+v, %v, want %s", tt.value, a, err, tt.want)
			}
		})
	}
}

func FuzzNormKey(f *testing.F) {
	for _, s := range []string{"Email *", "  Full   name: ", "", "*:*", "ÉMAIL"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := normKey(s)
		if normKey(k) != k {
			t.Fatalf("normKey not idempotent: %q -> %q -> %q", s, k, normKey(k))
		}
	})
}

func FuzzDecodeElsData(f *testing.F) {
	f.Add([]byte(`[["els",{"type":"array","value":[{"type":"node","value":{"backendNodeId":4}},{"type":"null"}]}],["data",{"type":"string","value":"{}"}]]`))
	f.Add([]byte(`[["data",{"type":"number","value":1}]]`))
	f.Add([]byte(`[[1,2]]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		nodes, _, err := decodeElsData(raw)
		if err == nil {
			for _, n := range nodes {
				if n.id < 0 {
					t.Fatalf("negative id %d", n.id)
				}
			}
		}
	})
}

func TestDecodeElsData(t *testing.T) {
	nodes, data, err := decodeElsData([]byte(`[["els",{"type":"array","value":[{"type":"node","value":{"backendNodeId":4}},{"type":"string","value":"x"},{"type":"node","value":{"backendNodeId":7,"localName":"iframe"}}]}],["data",{"type":"string","value":"{\"a\":1}"}]]`))
	if err != nil || len(nodes) != 3 || nodes[0] != (elsNode{id: 4}) || nodes[1] != (elsNode{}) || nodes[2] != (elsNode{id: 7, frame: true}) || data != `{"a":1}` {
		t.Fatalf("decode = %v %q %v", nodes, data, err)
	}
	if _, _, err := decodeElsData([]byte(`{}`)); err == nil {
		t.Error("decoding an object succeeded")
	}
}
