package form

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
	"github.com/deltaharness/delta/internal/clip"
)

// Action kinds, as control_action names them.
const (
	SetText    = "setText"
	SetChecked = "setChecked"
	SelectOne  = "selectOne"
	SelectMany = "selectMany"
	SetFiles   = "setFiles"
	Clear      = "clear"
	Activate   = "activate"
)

// Kinds lists every action kind, for schemas.
var Kinds = []string{SetText, SetChecked, SelectOne, SelectMany, SetFiles, Clear, Activate}

// ErrInvalidAction means the action does not fit its arguments or the
// control (setText on a checkbox, selectMany on a single select, …).
var ErrInvalidAction = errors.New("invalid control action")

// Action is one control action. Kind picks it; each kind reads only its own
// field: Text (setText), Checked (setChecked), Option (selectOne), Options
// (selectMany), Paths (setFiles). Clear and Activate read none.
type Action struct {
	Kind    string   `json:"kind"`
	Text    string   `json:"text,omitempty"`
	Checked *bool    `json:"checked,omitempty"`
	Option  string   `json:"option,omitempty"`
	Options []string `json:"options,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// Validate checks the action on its own, before touching the page.
func (a Action) Validate() error {
	switch a.Kind {
	case SetText, Clear, Activate:
	case SetChecked:
		if a.Checked == nil {
			return fmt.Errorf("%w: setChecked needs checked", ErrInvalidAction)
		}
	case SelectOne:
		if a.Option == "" {
			return fmt.Errorf("%w: selectOne needs option", ErrInvalidAction)
		}
	case SelectMany:
		if a.Options == nil {
			return fmt.Errorf("%w: selectMany needs options (an empty list deselects all)", ErrInvalidAction)
		}
	case SetFiles:
		if len(a.Paths) == 0 {
			return fmt.Errorf("%w: setFiles needs paths", ErrInvalidAction)
		}
	case "":
		return fmt.Errorf("%w: kind is required, one of %s", ErrInvalidAction, strings.Join(Kinds, ", "))
	default:
		return fmt.Errorf("%w: unknown kind %q, want one of %s", ErrInvalidAction, a.Kind, strings.Join(Kinds, ", "))
	}
	return nil
}

// Evidence is the control re-read after an action. It never holds a
// password's value (HasValue and Length instead) nor a file path (Files and
// base names instead).
type Evidence struct {
	Action string          `json:"action"`
	Target snapshot.Target `json:"target"`
	Type   string          `json:"type"`
	// Applied reports whether the re-read state is what the action asked
	// for (a maxlength can cut text; a page script can undo a check).
	Applied bool `json:"applied"`
	// Changed reports whether the state differs from before the action.
	Changed   bool     `json:"changed"`
	Value     *string  `json:"value,omitempty"`
	HasValue  bool     `json:"hasValue"`
	Length    *int     `json:"length,omitempty"` // passwords only
	Checked   *bool    `json:"checked,omitempty"`
	Selected  []Option `json:"selected,omitempty"`
	Files     *int     `json:"files,omitempty"`
	FileNames []string `json:"fileNames,omitempty"`
	Focused   bool     `json:"focused"`
	// Connected is false when the control left the page (an activate that
	// navigated); the other fields then describe nothing.
	Connected  bool      `json:"connected"`
	Valid      bool      `json:"valid"`
	Validation *Validity `json:"validation,omitempty"`
}

// Control performs one action on the control a target names on the
// Chromium page in ctx; see [Tab.Control].
func Control(ctx context.Context, t snapshot.Target, a Action) (*Evidence, error) {
	return On(chromium{}).Control(ctx, t, a)
}

// NotActedError wraps a failure of Control that came before the action
// reached the page (checking the action, resolving or reading the
// control): the page is as it was, so the call may be made again. Its
// text is the wrapped error's.
type NotActedError struct{ Err error }

func (e *NotActedError) Error() string { return e.Err.Error() }
func (e *NotActedError) Unwrap() error { return e.Err }

// Control performs one action on the control a target names, the way a user
// would, and returns the control re-read afterwards. setFiles reads the
// local paths; the caller checks the file:upload capability first. A
// failure before the action reached the page is a [*NotActedError].
func (tab Tab) Control(ctx context.Context, t snapshot.Target, a Action) (*Evidence, error) {
	notActed := func(err error) error { return &NotActedError{Err: fmt.Errorf("control %s: %w", a.Kind, err)} }
	if err := a.Validate(); err != nil {
		return nil, notActed(err)
	}
	if err := tab.p.Ready(ctx); err != nil {
		return nil, notActed(err)
	}
	defer tab.p.Release(ctx)
	el, err := tab.p.Resolve(ctx, t)
	if err != nil {
		return nil, notActed(err)
	}
	before, err := tab.read(ctx, el)
	if err != nil {
		return nil, notActed(err)
	}
	if a.Kind != Activate {
		if before.Type == "" {
			return nil, notActed(fmt.Errorf("%w: %s is not a form control; use activate or click", ErrInvalidAction, t))
		}
		if before.Disabled {
			return nil, notActed(fmt.Errorf("%w: the control is disabled", ErrInvalidAction))
		}
	}
	want, err := tab.act(ctx, el, before, a)
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", a.Kind, err)
	}
	after, err := tab.read(ctx, el)
	if err != nil {
		// An activate can navigate away and take the element with it.
		if a.Kind == Activate {
			return &Evidence{Action: a.Kind, Target: t, Type: before.Type, Applied: true, Changed: true}, nil
		}
		return nil, fmt.Errorf("control %s: re-read: %w", a.Kind, err)
	}
	return evidence(a.Kind, t, before, after, want), nil
}

// read returns the control's state.
func (t Tab) read(ctx context.Context, el Element) (controlData, error) {
	var cd controlData
	if err := t.p.Call(ctx, el.Object, pageFunc("op, arg", actionsJS), &cd, "read", nil); err != nil {
		return cd, fmt.Errorf("read control: %w", err)
	}
	return cd, nil
}

// step runs one op of js/actions.js on the element.
func (t Tab) step(ctx context.Context, el Element, op string, arg any, out any) error {
	if err := t.p.Call(ctx, el.Object, pageFunc("op, arg", actionsJS), out, op, arg); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// wanted is what the action asked for, to judge Applied.
type wanted struct {
	text     *string
	checked  *bool
	selected []string // option values
	files    int
	any      bool // activate: anything goes
}

// act dispatches the action.
func (t Tab) act(ctx context.Context, el Element, cd controlData, a Action) (wanted, error) {
	switch a.Kind {
	case SetText:
		return t.setText(ctx, el, cd, a.Text)
	case SetChecked:
		return t.setChecked(ctx, el, cd, *a.Checked)
	case SelectOne:
		return t.selectOptions(ctx, el, cd, []string{a.Option}, false)
	case SelectMany:
		return t.selectOptions(ctx, el, cd, a.Options, true)
	case SetFiles:
		return t.setFiles(ctx, el, cd, a.Paths)
	case Clear:
		return t.clearControl(ctx, el, cd)
	case Activate:
		return wanted{any: true}, t.click(ctx, el, false)
	}
	return wanted{}, fmt.Errorf("%w: unknown kind %q", ErrInvalidAction, a.Kind)
}

var textTypes = []string{"text", "email", "password", "search", "tel", "url", "number", "textarea", "contenteditable"}
var setterTypes = []string{"date", "time", "datetime-local", "month", "week", "color", "range"}

// setText types the text into the field as a user would: focus, select what
// is there, insert the text (beforeinput and input fire natively, so
// frameworks see it), then leave the field so change fires. Fields that
// take no typing (date, color, range) get the value set and input + change
// fired.
func (t Tab) setText(ctx context.Context, el Element, cd controlData, text string) (wanted, error) {
	w := wanted{text: &text}
	switch {
	case slices.Contains(setterTypes, cd.Type):
		return w, t.step(ctx, el, "setValue", text, nil)
	case !slices.Contains(textTypes, cd.Type):
		return w, fmt.Errorf("%w: setText does not apply to a %s control; use %s", ErrInvalidAction, cd.Type, suggest(cd.Type))
	case cd.ReadOnly:
		return w, fmt.Errorf("%w: the field is read-only", ErrInvalidAction)
	}
	if err := t.typeText(ctx, el, text); err != nil {
		return w, err
	}
	return w, nil
}

// typeText replaces the field's content with text through the input
// pipeline, falling back to the value setter when the field refused the
// keystrokes (a type=number field given letters keeps them out on purpose,
// and the evidence says so).
func (t Tab) typeText(ctx context.Context, el Element, text string) error {
	// A field without layout (display:none) cannot scroll; the focus check
	// below says so in words an agent can act on.
	t.p.ScrollIntoView(ctx, el)
	var f struct {
		Focused bool `json:"focused"`
	}
	if err := t.step(ctx, el, "focusSelect", nil, &f); err != nil {
		return err
	}
	if !f.Focused {
		return fmt.Errorf("%w: the field cannot take focus (hidden or inert)", ErrInvalidAction)
	}
	if text == "" {
		if err := t.p.PressKey(ctx, "Backspace"); err != nil {
			return err
		}
	} else if err := t.p.InsertText(ctx, text); err != nil {
		return err
	}
	return t.step(ctx, el, "blur", nil, nil)
}

// setChecked clicks a checkbox or radio when its state differs, natively
// when its centre is reachable, else through element.click() (custom-styled
// inputs are often drawn under their label).
func (t Tab) setChecked(ctx context.Context, el Element, cd controlData, checked bool) (wanted, error) {
	w := wanted{checked: &checked}
	switch {
	case cd.Type != "checkbox" && cd.Type != "radio":
		return w, fmt.Errorf("%w: setChecked does not apply to a %s control; use %s", ErrInvalidAction, cd.Type, suggest(cd.Type))
	case cd.Checked != nil && *cd.Checked == checked:
		return w, nil
	case cd.Type == "radio" && !checked:
		return w, fmt.Errorf("%w: a radio cannot be unchecked; check another radio of group %q", ErrInvalidAction, cd.Group)
	}
	return w, t.click(ctx, el, true)
}

// selectOptions picks options by value first, then by visible label.
func (t Tab) selectOptions(ctx context.Context, el Element, cd controlData, values []string, many bool) (wanted, error) {
	var w wanted
	switch {
	case !strings.HasPrefix(cd.Type, "select"):
		return w, fmt.Errorf("%w: %s does not apply to a %s control; use %s", ErrInvalidAction, kindName(many), cd.Type, suggest(cd.Type))
	case many && cd.Type != "select-multiple":
		return w, fmt.Errorf("%w: selectMany needs a multiple select; use selectOne", ErrInvalidAction)
	}
	var res struct {
		OK        bool     `json:"ok"`
		Error     string   `json:"error"`
		Missing   []string `json:"missing"`
		Available []Option `json:"available"`
		Values    []string `json:"values"`
	}
	if err := t.step(ctx, el, "selectOptions", map[string]any{"values": values}, &res); err != nil {
		return w, err
	}
	if res.Error != "" {
		return w, fmt.Errorf("%w: %s", ErrInvalidAction, res.Error)
	}
	if len(res.Missing) > 0 {
		var avail []string
		for _, o := range res.Available {
			avail = append(avail, fmt.Sprintf("%q (%s)", o.Label, o.Value))
		}
		return w, fmt.Errorf("%w: no option matches %q by value or label; options: %s", ErrInvalidAction, res.Missing, strings.Join(avail, ", "))
	}
	// Duplicates in the request collapse: Applied compares sets.
	w.selected = slices.Compact(slices.Sorted(slices.Values(res.Values)))
	if w.selected == nil {
		w.selected = []string{}
	}
	return w, nil
}

func kindName(many bool) string {
	if many {
		return SelectMany
	}
	return SelectOne
}

// setFiles puts local files on a file input; the browser fires input and
// change. Paths are checked first so a typo is a clear error, which names
// only the file's base name.
func (t Tab) setFiles(ctx context.Context, el Element, cd controlData, paths []string) (wanted, error) {
	w := wanted{files: len(paths)}
	switch {
	case cd.Type != "file":
		return w, fmt.Errorf("%w: setFiles does not apply to a %s control; use %s", ErrInvalidAction, cd.Type, suggest(cd.Type))
	case len(paths) > 1 && !cd.Multiple:
		return w, fmt.Errorf("%w: the file input takes one file, got %d", ErrInvalidAction, len(paths))
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return w, fmt.Errorf("%w: file %q is not readable", ErrInvalidAction, filepath.Base(p))
		}
		if !st.Mode().IsRegular() {
			return w, fmt.Errorf("%w: %q is not a regular file", ErrInvalidAction, filepath.Base(p))
		}
	}
	return w, t.p.SetFiles(ctx, el, paths)
}

// clearControl empties a control by its kind.
func (t Tab) clearControl(ctx context.Context, el Element, cd controlData) (wanted, error) {
	empty := ""
	switch {
	case slices.Contains(textTypes, cd.Type):
		if cd.ReadOnly {
			return wanted{text: &empty}, fmt.Errorf("%w: the field is read-only", ErrInvalidAction)
		}
		return wanted{text: &empty}, t.typeText(ctx, el, "")
	case slices.Contains(setterTypes, cd.Type):
		return wanted{text: &empty}, t.step(ctx, el, "setValue", "", nil)
	case cd.Type == "checkbox":
		return t.setChecked(ctx, el, cd, false)
	case cd.Type == "radio":
		return wanted{}, fmt.Errorf("%w: a radio group cannot be cleared by a user; check another radio", ErrInvalidAction)
	case cd.Type == "select-multiple":
		return t.selectOptions(ctx, el, cd, []string{}, true)
	case cd.Type == "select-one":
		// A single select clears to its empty option when it has one.
		for _, o := range cd.Options {
			if o.Value == "" {
				return t.selectOptions(ctx, el, cd, []string{""}, false)
			}
		}
		return wanted{}, fmt.Errorf("%w: the select has no empty option to clear to", ErrInvalidAction)
	case cd.Type == "file":
		// Setting an empty list through CDP leaves the files in place; an
		// empty value is what the browser's own "clear" does.
		return wanted{files: 0}, t.step(ctx, el, "setValue", "", nil)
	}
	return wanted{}, fmt.Errorf("%w: clear does not apply to a %s control", ErrInvalidAction, cd.Type)
}

// suggest names the action that fits a control type.
func suggest(typ string) string {
	switch {
	case typ == "checkbox" || typ == "radio":
		return SetChecked
	case typ == "select-one":
		return SelectOne
	case typ == "select-multiple":
		return SelectMany
	case typ == "file":
		return SetFiles
	case typ == "":
		return Activate
	}
	return SetText
}

// evidence builds the value-safe re-read.
func evidence(kind string, t snapshot.Target, before, after controlData, w wanted) *Evidence {
	ev := &Evidence{
		Action:    kind,
		Target:    t,
		Type:      after.Type,
		HasValue:  after.HasValue,
		Checked:   after.Checked,
		Selected:  after.Selected,
		Focused:   after.Focused,
		Connected: after.Connected,
		Valid:     after.Valid,
	}
	if ev.Type == "" {
		ev.Type = before.Type
	}
	switch after.Type {
	case "password":
		ev.Length = after.Length
	case "file":
		ev.Files = after.Files
		ev.FileNames = after.FileNames
	default:
		if after.Value != nil && !strings.HasPrefix(after.Type, "select") && after.Type != "checkbox" && after.Type != "radio" {
			v := clip.Runes(*after.Value, maxTextRunes)
			ev.Value = &v
		}
	}
	if !after.Valid && after.Constraint != "" {
		ev.Validation = &Validity{Constraint: after.Constraint, Message: after.Message}
	}
	ev.Changed = stateKey(before) != stateKey(after)
	ev.Applied = applied(after, w)
	return ev
}

// stateKey summarises the user-visible state for change detection. A
// password's value takes part only through its length: it is compared, not
// kept.
func stateKey(cd controlData) string {
	var b strings.Builder
	if cd.Value != nil {
		b.WriteString(*cd.Value)
	}
	if cd.Length != nil {
		fmt.Fprintf(&b, "|len=%d", *cd.Length)
	}
	if cd.Checked != nil {
		fmt.Fprintf(&b, "|checked=%v", *cd.Checked)
	}
	for _, o := range cd.Selected {
		b.WriteString("|sel=" + o.Value)
	}
	if cd.Files != nil {
		fmt.Fprintf(&b, "|files=%d:%s", *cd.Files, strings.Join(cd.FileNames, "/"))
	}
	return b.String()
}

// applied compares the re-read state with what was asked.
func applied(cd controlData, w wanted) bool {
	switch {
	case w.any:
		return true
	case w.text != nil:
		if cd.Type == "password" {
			return cd.Length != nil && *cd.Length == len(utf16.Encode([]rune(*w.text)))
		}
		return cd.Value != nil && *cd.Value == *w.text
	case w.checked != nil:
		return cd.Checked != nil && *cd.Checked == *w.checked
	case w.selected != nil || strings.HasPrefix(cd.Type, "select"):
		var got []string
		for _, o := range cd.Selected {
			got = append(got, o.Value)
		}
		slices.Sort(got)
		return slices.Equal(slices.Compact(got), w.selected)
	case cd.Type == "file":
		return cd.Files != nil && *cd.Files == w.files
	}
	return false
}
