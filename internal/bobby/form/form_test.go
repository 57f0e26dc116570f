package form

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// field returns the snapshot control with the label.
func field(t testing.TB, fs *FormSnapshot, label string) Field {
	t.Helper()
	for _, f := range fs.Controls {
		if f.Label == label {
			return f
		}
	}
	t.Fatalf("no control labelled %q", label)
	return Field{}
}

func takeForm(t testing.TB, path string) (*FormSnapshot, func(string) Field) {
	t.Helper()
	ctx := openPage(t, path)
	fs, err := Snapshot(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fs, func(label string) Field { return field(t, fs, label) }
}

func TestSnapshotListsEveryControl(t *testing.T) {
	fs, get := takeForm(t, "/form.html")
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
	if len(country.Options) != 4 || country.Options[2] != (Option{Value: "fr", Label: "France"}) || !country.Options[0].Selected {
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

func TestSnapshotBoundsAndScope(t *testing.T) {
	ctx := openPage(t, "/form.html")
	fs, err := Snapshot(ctx, Options{MaxControls: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !fs.Truncated || fs.ShownControls != 3 || len(fs.Controls) != 3 || fs.TotalControls <= 3 || !strings.Contains(fs.Repair, "maxControls") {
		t.Errorf("bounded: truncated=%v shown=%d total=%d repair=%q", fs.Truncated, fs.ShownControls, fs.TotalControls, fs.Repair)
	}
	scoped, err := Snapshot(ctx, Options{Target: &snapshot.Target{Selector: "#subscribe"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(scoped.Controls) != 1 || scoped.Controls[0].Label != "Newsletter email" {
		t.Errorf("scoped to #subscribe: %+v", scoped.Controls)
	}
	for _, o := range []Options{{MaxControls: -1}, {MaxControls: MaxMaxControls + 1}, {Target: &snapshot.Target{}}} {
		if _, err := Snapshot(ctx, o); err == nil {
			t.Errorf("Snapshot(%+v) succeeded", o)
		}
	}
	if _, err := Snapshot(ctx, Options{Target: &snapshot.Target{Selector: "#nope"}}); !errors.Is(err, snapshot.ErrTargetNotFound) {
		t.Errorf("scope to a missing node: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestControlActions(t *testing.T) {
	dir := t.TempDir()
	upload := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(upload, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := openPage(t, "/form.html")
	fs, err := Snapshot(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	target := func(label string) snapshot.Target { return field(t, fs, label).Target }

	for _, tt := range []struct {
		name   string
		label  string
		action Action
		check  func(t *testing.T, ev *Evidence)
		events string // an event the page must have seen, e.g. "change:name"
	}{
		{"type text", "Full name", Action{Kind: SetText, Text: "Ada Lovelace"}, func(t *testing.T, ev *Evidence) {
			wantValue(t, ev, "Ada Lovelace")
		}, "change:name"},
		{"type email", "Email", Action{Kind: SetText, Text: "ada@example.com"}, func(t *testing.T, ev *Evidence) {
			wantValue(t, ev, "ada@example.com")
			if !ev.Valid || ev.Validation != nil {
				t.Errorf("valid email reported invalid: %+v", ev.Validation)
			}
		}, "input:email"},
		{"type bad email", "Email", Action{Kind: SetText, Text: "ada"}, func(t *testing.T, ev *Evidence) {
			if ev.Valid || ev.Validation == nil || ev.Validation.Constraint != "typeMismatch" || strings.Contains(ev.Validation.Message, "ada") {
				t.Errorf("validation = %+v", ev.Validation)
			}
		}, ""},
		{"type number", "Age", Action{Kind: SetText, Text: "42"}, func(t *testing.T, ev *Evidence) { wantValue(t, ev, "42") }, "change:age"},
		{"set date", "Birthday", Action{Kind: SetText, Text: "2000-01-31"}, func(t *testing.T, ev *Evidence) { wantValue(t, ev, "2000-01-31") }, "change:birthday"},
		{"replace textarea", "Comments", Action{Kind: SetText, Text: "Ring twice"}, func(t *testing.T, ev *Evidence) { wantValue(t, ev, "Ring twice") }, "change:comments"},
		{"type contenteditable", "Notes", Action{Kind: SetText, Text: "Fragile"}, func(t *testing.T, ev *Evidence) { wantValue(t, ev, "Fragile") }, "input:notes"},
		{"type in shadow root", "Referral code", Action{Kind: SetText, Text: "FRIEND10"}, func(t *testing.T, ev *Evidence) { wantValue(t, ev, "FRIEND10") }, ""},
		{"type in iframe", "Gift message", Action{Kind: SetText, Text: "Congrats"}, func(t *testing.T, ev *Evidence) { wantValue(t, ev, "Congrats") }, ""},
		{"check", "Send me the newsletter", Action{Kind: SetChecked, Checked: ptr(true)}, func(t *testing.T, ev *Evidence) {
			wantChecked(t, ev, true)
		}, "change:newsletter"},
		{"check again is a no-op", "Send me the newsletter", Action{Kind: SetChecked, Checked: ptr(true)}, func(t *testing.T, ev *Evidence) {
			wantChecked(t, ev, true)
			if ev.Changed {
				t.Error("re-checking reported a change")
			}
		}, ""},
		{"uncheck", "Send me the newsletter", Action{Kind: SetChecked, Checked: ptr(false)}, func(t *testing.T, ev *Evidence) { wantChecked(t, ev, false) }, ""},
		{"pick radio", "Express", Action{Kind: SetChecked, Checked: ptr(true)}, func(t *testing.T, ev *Evidence) {
			wantChecked(t, ev, true)
			if evalJS[bool](t, ctx, `document.querySelector('input[value=standard]').checked`) {
				t.Error("the other radio stayed checked")
			}
		}, ""},
		{"select by label", "Country", Action{Kind: SelectOne, Option: "France"}, func(t *testing.T, ev *Evidence) { wantSelected(t, ev, "fr") }, "change:country"},
		{"select by value", "Country", Action{Kind: SelectOne, Option: "de"}, func(t *testing.T, ev *Evidence) { wantSelected(t, ev, "de") }, ""},
		{"select by folded label", "Country", Action{Kind: SelectOne, Option: "  united STATES "}, func(t *testing.T, ev *Evidence) { wantSelected(t, ev, "us") }, ""},
		{"select many", "Interests", Action{Kind: SelectMany, Options: []string{"music", "Sports"}}, func(t *testing.T, ev *Evidence) {
			wantSelected(t, ev, "music", "sports")
		}, "change:interests"},
		{"set files", "Attachment", Action{Kind: SetFiles, Paths: []string{upload}}, func(t *testing.T, ev *Evidence) {
			if ev.Files == nil || *ev.Files != 1 || !slices.Equal(ev.FileNames, []string{"notes.txt"}) || !ev.Applied {
				t.Errorf("files = %v %v applied=%v", ev.Files, ev.FileNames, ev.Applied)
			}
			raw, _ := json.Marshal(ev)
			if strings.Contains(string(raw), dir) {
				t.Errorf("evidence echoes the file path: %s", raw)
			}
		}, "change:attachment"},
		{"clear textarea", "Comments", Action{Kind: Clear}, func(t *testing.T, ev *Evidence) { wantValue(t, ev, "") }, ""},
		{"clear select many", "Interests", Action{Kind: Clear}, func(t *testing.T, ev *Evidence) { wantSelected(t, ev) }, ""},
		{"clear select one", "Country", Action{Kind: Clear}, func(t *testing.T, ev *Evidence) { wantSelected(t, ev, "") }, ""},
		{"clear files", "Attachment", Action{Kind: Clear}, func(t *testing.T, ev *Evidence) {
			if ev.Files == nil || *ev.Files != 0 || !ev.Applied {
				t.Errorf("files after clear = %v", ev.Files)
			}
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Control(ctx, target(tt.label), tt.action)
			if err != nil {
				t.Fatal(err)
			}
			if !ev.Applied || !ev.Connected || ev.Action != tt.action.Kind || ev.Target != target(tt.label) {
				t.Errorf("evidence = %+v", ev)
			}
			tt.check(t, ev)
			if tt.events != "" && !evalJS[bool](t, ctx, `window.seen.includes(`+jsString(tt.events)+`)`) {
				t.Errorf("the page never saw %s; saw %v", tt.events, evalJS[[]string](t, ctx, `window.seen`))
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
			ev, err := Control(ctx, tt.target, Action{Kind: Activate})
			if err != nil {
				t.Fatal(err)
			}
			if !ev.Applied {
				t.Errorf("evidence = %+v", ev)
			}
			if n := evalJS[int](t, ctx, tt.counter+` || 0`); n != 1 {
				t.Errorf("%s = %d after one activate", tt.counter, n)
			}
		})
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func wantValue(t *testing.T, ev *Evidence, want string) {
	t.Helper()
	if ev.Value == nil || *ev.Value != want {
		t.Errorf("value = %v, want %q", ev.Value, want)
	}
}

func wantChecked(t *testing.T, ev *Evidence, want bool) {
	t.Helper()
	if ev.Checked == nil || *ev.Checked != want {
		t.Errorf("checked = %v, want %v", ev.Checked, want)
	}
}

func wantSelected(t *testing.T, ev *Evidence, values ...string) {
	t.Helper()
	var got []string
	for _, o := range ev.Selected {
		got = append(got, o.Value)
	}
	if !slices.Equal(got, values) {
		t.Errorf("selected = %v, want %v", got, values)
	}
}

func TestPasswordNeverEchoed(t *testing.T) {
	ctx := openPage(t, "/form.html")
	fs, err := Snapshot(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pw := field(t, fs, "Password")
	const secret = "correct horse battery"
	ev, err := Control(ctx, pw.Target, Action{Kind: SetText, Text: secret})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Value != nil || !ev.HasValue || ev.Length == nil || *ev.Length != len(secret) || !ev.Applied || !ev.Changed {
		t.Errorf("password evidence = %+v", ev)
	}
	after, err := Snapshot(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{ev, after} {
		raw, _ := json.Marshal(v)
		for _, leak := range []string{"correct horse", "preset-secret-1"} {
			if strings.Contains(string(raw), leak) {
				t.Errorf("%T echoes a password: %s", v, raw)
			}
		}
	}
	if got := evalJS[string](t, ctx, `document.getElementById('password').value`); got != secret {
		t.Errorf("the page holds %q", got)
	}
}

func TestControlErrors(t *testing.T) {
	ctx := openPage(t, "/form.html")
	fs, err := Snapshot(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
		action Action
		want   error
		says   string
	}{
		{"no kind", get("Email"), Action{}, ErrInvalidAction, "kind is required"},
		{"unknown kind", get("Email"), Action{Kind: "type"}, ErrInvalidAction, "unknown kind"},
		{"setChecked without checked", get("Express"), Action{Kind: SetChecked}, ErrInvalidAction, "needs checked"},
		{"text on a checkbox", get("Send me the newsletter"), Action{Kind: SetText, Text: "x"}, ErrInvalidAction, "use setChecked"},
		{"uncheck a radio", get("Standard"), Action{Kind: SetChecked, Checked: ptr(false)}, ErrInvalidAction, "check another radio"},
		{"no such option", get("Country"), Action{Kind: SelectOne, Option: "Spain"}, ErrInvalidAction, `"France" (fr)`},
		{"many on a single select", get("Country"), Action{Kind: SelectMany, Options: []string{"fr"}}, ErrInvalidAction, "use selectOne"},
		{"missing file", get("Attachment"), Action{Kind: SetFiles, Paths: []string{filepath.Join(dir, "nope.pdf")}}, ErrInvalidAction, `"nope.pdf"`},
		{"two files on a single input", get("Attachment"), Action{Kind: SetFiles, Paths: []string{a, b}}, ErrInvalidAction, "takes one file"},
		{"type into a hidden field", get("Street"), Action{Kind: SetText, Text: "x"}, ErrInvalidAction, "cannot take focus"},
		{"not a form control", snapshot.Target{Role: "button", Name: "Place order"}, Action{Kind: SetText, Text: "x"}, ErrInvalidAction, "not a form control"},
		{"stale ref", snapshot.Target{Ref: "e999999"}, Action{Kind: Clear}, snapshot.ErrTargetNotFound, "take a new a11y_snapshot"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Control(ctx, tt.target, tt.action)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Control = %v, want %v saying %q", err, tt.want, tt.says)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("error echoes a local path: %v", err)
			}
		})
	}

	// Something drawn over the button: a native click would hit the overlay.
	evalJS[bool](t, ctx, `(() => { const d = document.createElement('div'); d.id = 'overlay';
		d.style.cssText = 'position:fixed;inset:0;z-index:9;background:rgba(0,0,0,.3)'; document.body.appendChild(d); return true; })()`)
	_, err = Control(ctx, snapshot.Target{Role: "button", Name: "Place order"}, Action{Kind: Activate})
	if !errors.Is(err, ErrNotClickable) || !strings.Contains(err.Error(), "div#overlay") {
		t.Errorf("activate under an overlay = %v, want ErrNotClickable naming it", err)
	}
}
