package form_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// field returns the snapshot control with the label.
func field(t testing.TB, fs *form.FormSnapshot, label string) form.Field {
	t.Helper()
	for _, f := range fs.Controls {
		if f.Label == label {
			return f
		}
	}
	t.Fatalf("no control labelled %q", label)
	return form.Field{}
}

// formsOf is the form snapshot of the page with the default options.
func formsOf(t testing.TB, p *page) *form.FormSnapshot {
	t.Helper()
	fs, err := p.tab.Snapshot(p.ctx, form.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func takeForm(t testing.TB, engine, path string) (*form.FormSnapshot, func(string) form.Field) {
	t.Helper()
	p := openPage(t, engine, path)
	fs := formsOf(t, p)
	return fs, func(label string) form.Field { return field(t, fs, label) }
}

func TestSnapshotListsEveryControl(t *testing.T) { forEngines(t, testSnapshotListsEveryControl) }

func testSnapshotListsEveryControl(t *testing.T, engine string) {
	fs, get := takeForm(t, engine, "/form.html")
	types := map[string]string{
		"Full name": "text", "Email": "email", "Password": "password", "Age": "number",
		"Phone": "tel", "Birthday": "date", "Comments": "textarea", "Country": "select-one",
		"Interests": "select-multiple", "Send me the newsletter": "checkbox", "Express": "radio",
		"Attachment": "file", "Notes": "contenteditable", "Street": "text",
		"Referral code": "text", // in an open shadow root
		"Gift message":  "text", // in a same-origin iframe
	}
	for label, typ := range types {
		f := get(label)
		if f.Type != typ {
			t.Errorf("%s: type %q, want %q", label, f.Type, typ)
		}
		if f.Target.Ref == "" || f.Target.Role == "" || f.Target.Name == "" {
			t.Errorf("%s: incomplete target %+v", label, f.Target)
		}
	}
	if email := get("Email"); !email.Required || email.Valid || email.Validation == nil || email.Validation.Constraint != "valueMissing" || email.Form != "checkout" {
		t.Errorf("email = %+v", email)
	}
	if pw := get("Password"); pw.Value != nil || !pw.HasValue {
		t.Errorf("password = %+v, want hasValue and no value", pw)
	}
	if c := get("Comments"); c.Value == nil || *c.Value != "Leave at door" {
		t.Errorf("textarea value = %v", c.Value)
	}
	country := get("Country")
	if len(country.Options) != 4 || country.Options[2] != (form.Option{Value: "fr", Label: "France"}) || !country.Options[0].Selected {
		t.Errorf("country options = %+v", country.Options)
	}
	if in := get("Interests"); !in.Options[0].Selected || in.Options[1].Selected {
		t.Errorf("interests options = %+v", in.Options)
	}
	if r := get("Express"); r.Group != "speed" || r.GroupLabel != "Shipping speed" || r.Checked == nil || *r.Checked {
		t.Errorf("radio = %+v", r)
	}
	if s := get("Standard"); s.Checked == nil || !*s.Checked {
		t.Errorf("checked radio = %+v", s)
	}
	if st := get("Street"); st.Visible || st.Target.Ref == "" {
		t.Errorf("hidden street = %+v, want invisible with a ref", st)
	}
	if g := get("Gift message"); g.FrameID == "" || g.Value == nil || *g.Value != "Happy birthday" {
		t.Errorf("iframe field = %+v", g)
	}
	if len(fs.Forms) != 2 || fs.Forms[0].Key != "checkout" || len(fs.Forms[0].Submit) != 1 || fs.Forms[0].Submit[0].Name != "Place order" {
		t.Errorf("forms = %+v", fs.Forms)
	}
	if !fs.Forms[1].NoValidate {
		t.Errorf("subscribe form not marked noValidate")
	}
	if fs.Truncated || fs.ShownControls != fs.TotalControls || fs.TotalControls != len(fs.Controls) {
		t.Errorf("counts: shown %d total %d len %d", fs.ShownControls, fs.TotalControls, len(fs.Controls))
	}
	raw, _ := json.Marshal(fs)
	if strings.Contains(string(raw), "preset-secret-1") {
		t.Error("form snapshot leaks the password")
	}
}

func TestSnapshotBoundsAndScope(t *testing.T) { forEngines(t, testSnapshotBoundsAndScope) }

func testSnapshotBoundsAndScope(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	fs, err := p.tab.Snapshot(p.ctx, form.Options{MaxControls: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !fs.Truncated || fs.ShownControls != 3 || len(fs.Controls) != 3 || fs.TotalControls <= 3 || !strings.Contains(fs.Repair, "maxControls") {
		t.Errorf("bounded: truncated=%v shown=%d total=%d repair=%q", fs.Truncated, fs.ShownControls, fs.TotalControls, fs.Repair)
	}
	scoped, err := p.tab.Snapshot(p.ctx, form.Options{Target: &snapshot.Target{Selector: "#subscribe"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(scoped.Controls) != 1 || scoped.Controls[0].Label != "Newsletter email" {
		t.Errorf("scoped to #subscribe: %+v", scoped.Controls)
	}
	for _, o := range []form.Options{{MaxControls: -1}, {MaxControls: form.MaxMaxControls + 1}, {Target: &snapshot.Target{}}} {
		if _, err := p.tab.Snapshot(p.ctx, o); err == nil {
			t.Errorf("Snapshot(%+v) succeeded", o)
		}
	}
	if _, err := p.tab.Snapshot(p.ctx, form.Options{Target: &snapshot.Target{Selector: "#nope"}}); !errors.Is(err, snapshot.ErrTargetNotFound) {
		t.Errorf("scope to a missing node: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestControlActions(t *testing.T) { forEngines(t, testControlActions) }

func testControlActions(t *testing.T, engine string) {
	dir := t.TempDir()
	upload := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(upload, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := openPage(t, engine, "/form.html")
	fs := formsOf(t, p)
	target := func(label string) snapshot.Target { return field(t, fs, label).Target }

	for _, tt := range []struct {
		name   string
		label  string
		action form.Action
		check  func(t *testing.T, ev *form.Evidence)
		events string // an event the page must have seen, e.g. "change:name"
	}{
		{"type text", "Full name", form.Action{Kind: form.SetText, Text: "Ada Lovelace"}, func(t *testing.T, ev *form.Evidence) {
			wantValue(t, ev, "Ada Lovelace")
		}, "change:name"},
		{"type email", "Email", form.Action{Kind: form.SetText, Text: "ada@example.com"}, func(t *testing.T, ev *form.Evidence) {
			wantValue(t, ev, "ada@example.com")
			if !ev.Valid || ev.Validation != nil {
				t.Errorf("valid email reported invalid: %+v", ev.Validation)
			}
		}, "input:email"},
		{"type bad email", "Email", form.Action{Kind: form.SetText, Text: "ada"}, func(t *testing.T, ev *form.Evidence) {
			if ev.Valid || ev.Validation == nil || ev.Validation.Constraint != "typeMismatch" || strings.Contains(ev.Validation.Message, "ada") {
				t.Errorf("validation = %+v", ev.Validation)
			}
		}, ""},
		{"type number", "Age", form.Action{Kind: form.SetText, Text: "42"}, func(t *testing.T, ev *form.Evidence) { wantValue(t, ev, "42") }, "change:age"},
		{"set date", "Birthday", form.Action{Kind: form.SetText, Text: "2000-01-31"}, func(t *testing.T, ev *form.Evidence) { wantValue(t, ev, "2000-01-31") }, "change:birthday"},
		{"replace textarea", "Comments", form.Action{Kind: form.SetText, Text: "Ring twice"}, func(t *testing.T, ev *form.Evidence) { wantValue(t, ev, "Ring twice") }, "change:comments"},
		{"type contenteditable", "Notes", form.Action{Kind: form.SetText, Text: "Fragile"}, func(t *testing.T, ev *form.Evidence) { wantValue(t, ev, "Fragile") }, "input:notes"},
		{"type in shadow root", "Referral code", form.Action{Kind: form.SetText, Text: "FRIEND10"}, func(t *testing.T, ev *form.Evidence) { wantValue(t, ev, "FRIEND10") }, ""},
		{"type in iframe", "Gift message", form.Action{Kind: form.SetText, Text: "Congrats"}, func(t *testing.T, ev *form.Evidence) { wantValue(t, ev, "Congrats") }, ""},
		{"check", "Send me the newsletter", form.Action{Kind: form.SetChecked, Checked: ptr(true)}, func(t *testing.T, ev *form.Evidence) {
			wantChecked(t, ev, true)
		}, "change:newsletter"},
		{"check again is a no-op", "Send me the newsletter", form.Action{Kind: form.SetChecked, Checked: ptr(true)}, func(t *testing.T, ev *form.Evidence) {
			wantChecked(t, ev, true)
			if ev.Changed {
				t.Error("re-checking reported a change")
			}
		}, ""},
		{"uncheck", "Send me the newsletter", form.Action{Kind: form.SetChecked, Checked: ptr(false)}, func(t *testing.T, ev *form.Evidence) { wantChecked(t, ev, false) }, ""},
		{"pick radio", "Express", form.Action{Kind: form.SetChecked, Checked: ptr(true)}, func(t *testing.T, ev *form.Evidence) {
			wantChecked(t, ev, true)
			if evalJS[bool](t, p, `document.querySelector('input[value=standard]').checked`) {
				t.Error("the other radio stayed checked")
			}
		}, ""},
		{"select by label", "Country", form.Action{Kind: form.SelectOne, Option: "France"}, func(t *testing.T, ev *form.Evidence) { wantSelected(t, ev, "fr") }, "change:country"},
		{"select by value", "Country", form.Action{Kind: form.SelectOne, Option: "de"}, func(t *testing.T, ev *form.Evidence) { wantSelected(t, ev, "de") }, ""},
		{"select by folded label", "Country", form.Action{Kind: form.SelectOne, Option: "  united STATES "}, func(t *testing.T, ev *form.Evidence) { wantSelected(t, ev, "us") }, ""},
		{"select many", "Interests", form.Action{Kind: form.SelectMany, Options: []string{"music", "Sports"}}, func(t *testing.T, ev *form.Evidence) {
			wantSelected(t, ev, "music", "sports")
		}, "change:interests"},
		{"set files", "Attachment", form.Action{Kind: form.SetFiles, Paths: []string{upload}}, func(t *testing.T, ev *form.Evidence) {
			if ev.Files == nil || *ev.Files != 1 || !slices.Equal(ev.FileNames, []string{"notes.txt"}) || !ev.Applied {
				t.Errorf("files = %v %v applied=%v", ev.Files, ev.FileNames, ev.Applied)
			}
			raw, _ := json.Marshal(ev)
			if strings.Contains(string(raw), dir) {
				t.Errorf("evidence echoes the file path: %s", raw)
			}
		}, "change:attachment"},
		{"clear textarea", "Comments", form.Action{Kind: form.Clear}, func(t *testing.T, ev *form.Evidence) { wantValue(t, ev, "") }, ""},
		{"clear select many", "Interests", form.Action{Kind: form.Clear}, func(t *testing.T, ev *form.Evidence) { wantSelected(t, ev) }, ""},
		{"clear select one", "Country", form.Action{Kind: form.Clear}, func(t *testing.T, ev *form.Evidence) { wantSelected(t, ev, "") }, ""},
		{"clear files", "Attachment", form.Action{Kind: form.Clear}, func(t *testing.T, ev *form.Evidence) {
			if ev.Files == nil || *ev.Files != 0 || !ev.Applied {
				t.Errorf("files after clear = %v", ev.Files)
			}
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := p.tab.Control(p.ctx, target(tt.label), tt.action)
			if err != nil {
				t.Fatal(err)
			}
			if !ev.Applied || !ev.Connected || ev.Action != tt.action.Kind || ev.Target != target(tt.label) {
				t.Errorf("evidence = %+v", ev)
			}
			tt.check(t, ev)
			if tt.events != "" && !evalJS[bool](t, p, `window.seen.includes(`+jsString(tt.events)+`)`) {
				t.Errorf("the page never saw %s; saw %v", tt.events, evalJS[[]string](t, p, `window.seen`))
			}
		})
	}

	// Native clicks reach into shadow roots and iframes.
	for _, tt := range []struct {
		name    string
		target  snapshot.Target
		counter string
	}{
		{"activate in shadow root", snapshot.Target{Role: "button", Name: "Apply referral"}, "window.shadowClicks"},
		{"activate in iframe", snapshot.Target{Role: "button", Name: "Wrap it"}, "window.giftClicks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := p.tab.Control(p.ctx, tt.target, form.Action{Kind: form.Activate})
			if err != nil {
				t.Fatal(err)
			}
			if !ev.Applied {
				t.Errorf("evidence = %+v", ev)
			}
			if n := evalJS[int](t, p, tt.counter+` || 0`); n != 1 {
				t.Errorf("%s = %d after one activate", tt.counter, n)
			}
		})
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func wantValue(t *testing.T, ev *form.Evidence, want string) {
	t.Helper()
	if ev.Value == nil || *ev.Value != want {
		t.Errorf("value = %v, want %q", ev.Value, want)
	}
}

func wantChecked(t *testing.T, ev *form.Evidence, want bool) {
	t.Helper()
	if ev.Checked == nil || *ev.Checked != want {
		t.Errorf("checked = %v, want %v", ev.Checked, want)
	}
}

func wantSelected(t *testing.T, ev *form.Evidence, values ...string) {
	t.Helper()
	var got []string
	for _, o := range ev.Selected {
		got = append(got, o.Value)
	}
	if !slices.Equal(got, values) {
		t.Errorf("selected = %v, want %v", got, values)
	}
}

func TestPasswordNeverEchoed(t *testing.T) { forEngines(t, testPasswordNeverEchoed) }

func testPasswordNeverEchoed(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	fs := formsOf(t, p)
	pw := field(t, fs, "Password")
	const secret = "correct horse battery"
	ev, err := p.tab.Control(p.ctx, pw.Target, form.Action{Kind: form.SetText, Text: secret})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Value != nil || !ev.HasValue || ev.Length == nil || *ev.Length != len(secret) || !ev.Applied || !ev.Changed {
		t.Errorf("password evidence = %+v", ev)
	}
	after := formsOf(t, p)
	for _, v := range []any{ev, after} {
		raw, _ := json.Marshal(v)
		for _, leak := range []string{"correct horse", "preset-secret-1"} {
			if strings.Contains(string(raw), leak) {
				t.Errorf("%T echoes a password: %s", v, raw)
			}
		}
	}
	if got := evalJS[string](t, p, `document.getElementById('password').value`); got != secret {
		t.Errorf("the page holds %q", got)
	}
}

func TestControlErrors(t *testing.T) { forEngines(t, testControlErrors) }

func testControlErrors(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	fs := formsOf(t, p)
	get := func(label string) snapshot.Target { return field(t, fs, label).Target }
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name   string
		target snapshot.Target
		action form.Action
		want   error
		says   string
	}{
		{"no kind", get("Email"), form.Action{}, form.ErrInvalidAction, "kind is required"},
		{"unknown kind", get("Email"), form.Action{Kind: "type"}, form.ErrInvalidAction, "unknown kind"},
		{"setChecked without checked", get("Express"), form.Action{Kind: form.SetChecked}, form.ErrInvalidAction, "needs checked"},
		{"text on a checkbox", get("Send me the newsletter"), form.Action{Kind: form.SetText, Text: "x"}, form.ErrInvalidAction, "use setChecked"},
		{"uncheck a radio", get("Standard"), form.Action{Kind: form.SetChecked, Checked: ptr(false)}, form.ErrInvalidAction, "check another radio"},
		{"no such option", get("Country"), form.Action{Kind: form.SelectOne, Option: "Spain"}, form.ErrInvalidAction, `"France" (fr)`},
		{"many on a single select", get("Country"), form.Action{Kind: form.SelectMany, Options: []string{"fr"}}, form.ErrInvalidAction, "use selectOne"},
		{"missing file", get("Attachment"), form.Action{Kind: form.SetFiles, Paths: []string{filepath.Join(dir, "nope.pdf")}}, form.ErrInvalidAction, `"nope.pdf"`},
		{"two files on a single input", get("Attachment"), form.Action{Kind: form.SetFiles, Paths: []string{a, b}}, form.ErrInvalidAction, "takes one file"},
		{"type into a hidden field", get("Street"), form.Action{Kind: form.SetText, Text: "x"}, form.ErrInvalidAction, "cannot take focus"},
		{"not a form control", snapshot.Target{Role: "button", Name: "Place order"}, form.Action{Kind: form.SetText, Text: "x"}, form.ErrInvalidAction, "not a form control"},
		{"stale ref", snapshot.Target{Ref: "e999999"}, form.Action{Kind: form.Clear}, snapshot.ErrTargetNotFound, "take a new a11y_snapshot"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.tab.Control(p.ctx, tt.target, tt.action)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Control = %v, want %v saying %q", err, tt.want, tt.says)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("error echoes a local path: %v", err)
			}
		})
	}

	// Something drawn over the button: a native click would hit the overlay.
	evalJS[bool](t, p, `(() => { const d = document.createElement('div'); d.id = 'overlay';
		d.style.cssText = 'position:fixed;inset:0;z-index:9;background:rgba(0,0,0,.3)'; document.body.appendChild(d); return true; })()`)
	_, err := p.tab.Control(p.ctx, snapshot.Target{Role: "button", Name: "Place order"}, form.Action{Kind: form.Activate})
	if !errors.Is(err, form.ErrNotClickable) || !strings.Contains(err.Error(), "div#overlay") {
		t.Errorf("activate under an overlay = %v, want form.ErrNotClickable naming it", err)
	}
}
