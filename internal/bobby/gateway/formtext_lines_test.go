package gateway

import (
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// TestFormEvidenceLines: each kind of form fact has its one line, and no
// line carries a secret: passwords show a length, file inputs a count.
func TestFormEvidenceLines(t *testing.T) {
	str := func(s string) *string { return &s }
	n := func(i int) *int { return &i }
	yes, no := true, false
	tgt := func(role, name, ref string) *snapshot.Target {
		return &snapshot.Target{Role: role, Name: name, Ref: ref}
	}
	tests := []struct {
		name string
		raw  map[string]any
		want []string
	}{
		{
			name: "filled fields, a refused file input, an unapplied check, a revealed control left empty",
			raw: map[string]any{
				"fields": []form.FieldOutcome{
					{Field: "Password", Status: form.StatusFilled, Target: tgt("textbox", "Password", "e5"), Evidence: &form.Evidence{Applied: true, Length: n(11), HasValue: true}},
					{Field: "Photo", Status: form.StatusRefused, Error: "file inputs take files through control_action setFiles"},
					{Field: "News", Status: form.StatusFilled, Target: tgt("checkbox", "News", "e6"), Evidence: &form.Evidence{Applied: false, Checked: &no}},
					{Field: "Colours", Status: form.StatusFilled, Target: tgt("listbox", "Colours", "e7"), Evidence: &form.Evidence{Applied: true, Selected: []form.Option{{Label: "Red"}, {Label: "Blue"}}}},
					{Field: "Nickname", Status: form.StatusNotFound, Error: `no control is labelled "Nickname"; take a form_snapshot`},
				},
				"revealedControls": []form.Field{{Target: snapshot.Target{Role: "textbox", Name: "Gift message", Ref: "e9"}, Type: "text", Visible: true}},
				"invalidControls":  []form.Field{},
			},
			want: []string{
				"Password = (11 chars)",
				"Photo: refused — file inputs take files through control_action setFiles",
				"News = unchecked (not applied: the page changed it back)",
				"Colours = Red, Blue",
				`Nickname: notFound — no control is labelled "Nickname"; take a form_snapshot`,
				`revealed textbox "Gift message" [ref=e9] text`,
			},
		},
		{
			name: "an unverified submit names what was seen",
			raw: map[string]any{
				"submission":   &form.Submission{Status: form.SubmitUnverified, URL: "http://x/order", Requests: 1, Responses: []form.Response{{Method: "POST", Type: "Fetch", Status: 500}}, Reason: "the submit's request was answered HTTP 500"},
				"submitTarget": snapshot.Target{Role: "button", Name: "Order", Ref: "e3"},
			},
			want: []string{`unverified by button "Order" [ref=e3]: no navigation, at http://x/order (POST 500 Fetch); the submit's request was answered HTTP 500`},
		},
		{
			name: "a control action re-read, and a form snapshot with a password and a file",
			raw: map[string]any{
				"control": &form.Evidence{Action: "setFiles", Target: snapshot.Target{Role: "button", Name: "Photo", Ref: "e4"}, Applied: true, Connected: true, Files: n(2), FileNames: []string{"a.png", "b.png"}},
				"formSnapshot": &form.FormSnapshot{
					Forms: []form.Form{{Key: "f", Target: snapshot.Target{Role: "form", Ref: "e1"}}},
					Controls: []form.Field{
						{Target: snapshot.Target{Role: "textbox", Name: "Password", Ref: "e2"}, Type: "password", HasValue: true, Visible: true},
						{Target: snapshot.Target{Role: "button", Name: "Photo", Ref: "e4"}, Type: "file", Files: 2, Visible: true},
						{Target: snapshot.Target{Role: "checkbox", Name: "News", Ref: "e5"}, Type: "checkbox", Checked: &yes, Visible: true},
						{Target: snapshot.Target{Role: "textbox", Name: "City", Ref: "e6"}, Type: "text", Value: str("Lyon"), Visible: true},
					},
					Truncated: true, ShownControls: 4, TotalControls: 9, Repair: "raise maxControls",
				},
			},
			want: []string{
				`setFiles button "Photo" [ref=e4] → (2 files)`,
				`form "f" [ref=e1]`,
				`  textbox "Password" [ref=e2] password = (set)`,
				`  button "Photo" [ref=e4] file = (2 files)`,
				`  checkbox "News" [ref=e5] checkbox = checked`,
				`  textbox "City" [ref=e6] text = "Lyon"`,
				"# form controls truncated: showing 4 of 9; raise maxControls",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := map[string]any{}
			for k := range tt.raw {
				ev[k] = true
			}
			got := formEvidenceText(ev, tt.raw)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if len(ev) != 0 {
				t.Errorf("keys left for the JSON lines: %v", ev)
			}
			for _, l := range got {
				if strings.Contains(l, "a.png") {
					t.Errorf("a file name reached the text: %s", l)
				}
			}
		})
	}
}
