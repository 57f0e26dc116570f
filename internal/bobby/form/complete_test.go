package form_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

func outcome(t testing.TB, outs []form.FieldOutcome, field string) form.FieldOutcome {
	t.Helper()
	for _, o := range outs {
		if o.Field == field {
			return o
		}
	}
	t.Fatalf("no outcome for %q in %+v", field, outs)
	return form.FieldOutcome{}
}

func TestCompleteFormRevealsConditionalControls(t *testing.T) {
	forEngines(t, testCompleteFormRevealsConditionalControls)
}

func testCompleteFormRevealsConditionalControls(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	c, err := p.tab.CompleteForm(p.ctx, form.FieldsFromMap(map[string]any{
		"Full name":                   "Ada Lovelace",
		"email":                       "ada@example.com", // by name attribute
		"Ship to a different address": true,
		"Street":                      "1 Analytical Way", // hidden until the box is checked
		"City":                        "London",
		"Country":                     "France",
		"Shipping speed":              "Express", // the radio group, by legend and label
		"Interests":                   []any{"music", "books"},
		"Age":                         36.0, // numbers arrive as float64 from JSON
	}), form.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range c.Fields {
		if o.Status != form.StatusFilled || o.Evidence == nil || !o.Evidence.Applied || o.Target == nil {
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
	ev, err := p.tab.Control(p.ctx, c.RevealedControls[1].Target, form.Action{Kind: form.SetText, Text: "Paris"})
	if err != nil || *ev.Value != "Paris" {
		t.Fatalf("revealed target: %+v, %v", ev, err)
	}
	if len(c.InvalidControls) != 0 {
		t.Errorf("invalid after a complete fill: %+v", c.InvalidControls)
	}
}

func TestCompleteFormReportsWhatIsLeft(t *testing.T) {
	forEngines(t, testCompleteFormReportsWhatIsLeft)
}

func testCompleteFormReportsWhatIsLeft(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	c, err := p.tab.CompleteForm(p.ctx, []form.FieldValue{
		{Field: "Ship to a different address", Value: "yes"},
		{Field: "Email", Value: "not-an-email"},
	}, form.Options{})
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

func TestFillOutcomes(t *testing.T) { forEngines(t, testFillOutcomes) }

func testFillOutcomes(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	fs := formsOf(t, p)
	comments := field(t, fs, "Comments").Target
	outs, err := p.tab.Fill(p.ctx, []form.FieldValue{
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
	}, form.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		field, status, says string
	}{
		{"Nickname", form.StatusNotFound, "take a form_snapshot"},
		{"Attachment", form.StatusRefused, "setFiles"},
		{"Street", form.StatusHidden, "hidden"},
		{"Send me the newsletter", form.StatusFailed, "true or false"},
		{"Shipping speed", form.StatusFailed, `"Express" (express)`},
		{comments.String(), form.StatusFilled, ""},
		{"notes", form.StatusFilled, ""},
		{"Referral code", form.StatusFilled, ""},
		{"Gift message", form.StatusFilled, ""},
		{`role textbox, name "Email"`, form.StatusFilled, ""},
	} {
		o := outcome(t, outs, tt.field)
		if o.Status != tt.status || !strings.Contains(o.Error, tt.says) {
			t.Errorf("%s: %s %q, want %s saying %q", tt.field, o.Status, o.Error, tt.status, tt.says)
		}
	}
	if v := outcome(t, outs, comments.String()).Evidence.Value; v == nil || *v != "" {
		t.Errorf("nil value did not clear: %v", v)
	}

	if _, err := p.tab.Fill(p.ctx, nil, form.Options{}); !errors.Is(err, form.ErrInvalidAction) {
		t.Errorf("Fill(nil) = %v", err)
	}
	if _, err := p.tab.Fill(p.ctx, []form.FieldValue{{Value: "x"}}, form.Options{}); !errors.Is(err, form.ErrInvalidAction) {
		t.Errorf("Fill without field or target = %v", err)
	}
}

func TestFillAmbiguous(t *testing.T) { forEngines(t, testFillAmbiguous) }

func testFillAmbiguous(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	// "email" is both the checkout email's name and, loosely, the newsletter
	// email's label; a second exact match makes it ambiguous.
	evalJS[bool](t, p, `(() => { const i = document.createElement('input'); i.name = 'email';
		document.getElementById('subscribe').appendChild(i); return true; })()`)
	outs, err := p.tab.Fill(p.ctx, []form.FieldValue{{Field: "email", Value: "a@b.co"}}, form.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Status != form.StatusAmbiguous || !strings.Contains(outs[0].Error, "pass a target") {
		t.Errorf("outcome = %+v", outs[0])
	}
}
