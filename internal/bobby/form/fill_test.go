package form

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

func outcome(t testing.TB, outs []FieldOutcome, field string) FieldOutcome {
	t.Helper()
	for _, o := range outs {
		if o.Field == field {
			return o
		}
	}
	t.Fatalf("no outcome for %q in %+v", field, outs)
	return FieldOutcome{}
}

func TestCompleteFormRevealsConditionalControls(t *testing.T) {
	ctx := openPage(t, "/form.html")
	c, err := CompleteForm(ctx, FieldsFromMap(map[string]any{
		"Full name":                   "Ada Lovelace",
		"email":                       "ada@example.com", // by name attribute
		"Ship to a different address": true,
		"Street":                      "1 Analytical Way", // hidden until the box is checked
		"City":                        "London",
		"Country":                     "France",
		"Shipping speed":              "Express", // the radio group, by legend and label
		"Interests":                   []any{"music", "books"},
		"Age":                         36.0, // numbers arrive as float64 from JSON
	}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range c.Fields {
		if o.Status != StatusFilled || o.Evidence == nil || !o.Evidence.Applied || o.Target == nil {
			t.Errorf("%s: %+v", o.Field, o)
		}
	}
	if o := outcome(t, c.Fields, "Shipping speed"); o.Target.Name != "Express" {
		t.Errorf("radio group filled through %+v, want the Express radio", o.Target)
	}
	if o := outcome(t, c.Fields, "Age"); *o.Evidence.Value != "36" {
		t.Errorf("age = %q", *o.Evidence.Value)
	}
	var revealed []string
	for _, f := range c.RevealedControls {
		revealed = append(revealed, f.Label)
		if !f.Visible || f.Target.Ref == "" {
			t.Errorf("revealed control %+v", f)
		}
	}
	if strings.Join(revealed, ",") != "Street,City" {
		t.Errorf("revealed = %v, want Street,City", revealed)
	}
	// The revealed targets work at once, with no new snapshot.
	ev, err := Control(ctx, c.RevealedControls[1].Target, Action{Kind: SetText, Text: "Paris"})
	if err != nil || *ev.Value != "Paris" {
		t.Fatalf("revealed target: %+v, %v", ev, err)
	}
	if len(c.InvalidControls) != 0 {
		t.Errorf("invalid after a complete fill: %+v", c.InvalidControls)
	}
}

func TestCompleteFormReportsWhatIsLeft(t *testing.T) {
	ctx := openPage(t, "/form.html")
	c, err := CompleteForm(ctx, []FieldValue{
		{Field: "Ship to a different address", Value: "yes"},
		{Field: "Email", Value: "not-an-email"},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.RevealedControls) != 2 {
		t.Errorf("revealed = %+v", c.RevealedControls)
	}
	invalid := map[string]string{}
	for _, f := range c.InvalidControls {
		invalid[f.Label] = f.Validation.Constraint
	}
	if invalid["Full name"] != "valueMissing" || invalid["Email"] != "typeMismatch" || invalid["Country"] != "valueMissing" {
		t.Errorf("invalid = %v", invalid)
	}
	for _, f := range c.InvalidControls {
		raw, _ := json.Marshal(f.Validation)
		if strings.Contains(string(raw), "not-an-email") {
			t.Errorf("validation echoes the value: %s", raw)
		}
	}
}

func TestFillOutcomes(t *testing.T) {
	ctx := openPage(t, "/form.html")
	fs, err := Snapshot(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	comments := field(t, fs, "Comments").Target
	outs, err := Fill(ctx, []FieldValue{
		{Field: "Nickname", Value: "x"},
		{Field: "Attachment", Value: "/etc/passwd"},
		{Field: "Street", Value: "1 Main St"},
		{Field: "Send me the newsletter", Value: "maybe"},
		{Field: "Shipping speed", Value: "Teleport"},
		{Target: &comments, Value: nil},
		{Field: "notes", Value: "Fragile"}, // by id
		{Field: "Referral code", Value: "FRIEND"},
		{Field: "Gift message", Value: "Hi"},
		{Target: &snapshot.Target{Role: "textbox", Name: "Email"}, Value: "a@b.co"},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		field, status, says string
	}{
		{"Nickname", StatusNotFound, "take a form_snapshot"},
		{"Attachment", StatusRefused, "setFiles"},
		{"Street", StatusHidden, "hidden"},
		{"Send me the newsletter", StatusFailed, "true or false"},
		{"Shipping speed", StatusFailed, `"Express" (express)`},
		{comments.String(), StatusFilled, ""},
		{"notes", StatusFilled, ""},
		{"Referral code", StatusFilled, ""},
		{"Gift message", StatusFilled, ""},
		{`role textbox, name "Email"`, StatusFilled, ""},
	} {
		o := outcome(t, outs, tt.field)
		if o.Status != tt.status || !strings.Contains(o.Error, tt.says) {
			t.Errorf("%s: %s %q, want %s saying %q", tt.field, o.Status, o.Error, tt.status, tt.says)
		}
	}
	if v := outcome(t, outs, comments.String()).Evidence.Value; v == nil || *v != "" {
		t.Errorf("nil value did not clear: %v", v)
	}

	if _, err := Fill(ctx, nil, Options{}); !errors.Is(err, ErrInvalidAction) {
		t.Errorf("Fill(nil) = %v", err)
	}
	if _, err := Fill(ctx, []FieldValue{{Value: "x"}}, Options{}); !errors.Is(err, ErrInvalidAction) {
		t.Errorf("Fill without field or target = %v", err)
	}
}

func TestFillAmbiguous(t *testing.T) {
	ctx := openPage(t, "/form.html")
	// "email" is both the checkout email's name and, loosely, the newsletter
	// email's label; a second exact match makes it ambiguous.
	evalJS[bool](t, ctx, `(() => { const i = document.createElement('input'); i.name = 'email';
		document.getElementById('subscribe').appendChild(i); return true; })()`)
	outs, err := Fill(ctx, []FieldValue{{Field: "email", Value: "a@b.co"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Status != StatusAmbiguous || !strings.Contains(outs[0].Error, "pass a target") {
		t.Errorf("outcome = %+v", outs[0])
	}
}

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
