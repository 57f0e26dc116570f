package form

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// FieldValue is one entry of a fill: the field, named by a description
// (its label, accessible name, name attribute, id or placeholder; for radio
// groups the legend or group name) or by a target, and the value to give it.
//
// Values by control: text-like fields, dates and textareas take a string or
// a number; checkboxes a bool (or "true"/"false", "yes"/"no", "on"/"off");
// a radio group the value or label of the radio to check; a single select
// an option value or label; a multiple select a list of them. A nil value
// clears the field. File inputs are refused: setting files goes through
// Control with SetFiles, behind the file:upload capability.
type FieldValue struct {
	Field  string           `json:"field,omitempty"`
	Target *snapshot.Target `json:"target,omitempty"`
	Value  any              `json:"value"`
}

// FieldsFromMap turns {"Email": "a@b.c", "Newsletter": true} into entries.
// Fill orders entries by the controls' document order, so the map's order
// does not matter.
func FieldsFromMap(m map[string]any) []FieldValue {
	out := make([]FieldValue, 0, len(m))
	for k, v := range m {
		out = append(out, FieldValue{Field: k, Value: v})
	}
	slices.SortFunc(out, func(a, b FieldValue) int { return cmp.Compare(a.Field, b.Field) })
	return out
}

// Per-field outcome statuses.
const (
	StatusFilled    = "filled"
	StatusNotFound  = "notFound"  // no control matches the description
	StatusAmbiguous = "ambiguous" // several controls match; use a target
	StatusHidden    = "hidden"    // the control exists but is not shown
	StatusRefused   = "refused"   // file inputs: use Control with SetFiles
	StatusFailed    = "failed"    // the action failed; Error says why
)

// FieldOutcome is what happened to one entry.
type FieldOutcome struct {
	Field    string           `json:"field"`
	Target   *snapshot.Target `json:"target,omitempty"`
	Status   string           `json:"status"`
	Action   string           `json:"action,omitempty"`
	Error    string           `json:"error,omitempty"`
	Evidence *Evidence        `json:"evidence,omitempty"`
}

// Completion is the outcome of CompleteForm.
type Completion struct {
	Fields []FieldOutcome `json:"fields"`
	// RevealedControls are the controls visible after the fill that were not
	// before: fields a checkbox or select revealed. Their targets are usable
	// at once.
	RevealedControls []Field `json:"revealedControls"`
	// InvalidControls are visible controls that still fail a constraint
	// (required and empty, a malformed email, …): the repair list. One entry
	// per radio group.
	InvalidControls []Field `json:"invalidControls"`
}

// maxFillPasses bounds the re-snapshots a fill makes to reach fields that
// earlier entries reveal.
const maxFillPasses = 3

// Fill fills the entries in the controls' document order and returns one
// outcome per entry, in the order given. Entries whose control only appears
// after an earlier entry is filled (a checkbox revealing an address block)
// are retried after a re-snapshot. An error means the page could not be
// read at all; a failed entry is an outcome.
func (t Tab) Fill(ctx context.Context, fields []FieldValue, opts Options) ([]FieldOutcome, error) {
	outs, _, _, err := t.fill(ctx, fields, opts)
	return outs, err
}

// Fill fills the entries on the Chromium page in ctx; see [Tab.Fill].
func Fill(ctx context.Context, fields []FieldValue, opts Options) ([]FieldOutcome, error) {
	return On(chromium{}).Fill(ctx, fields, opts)
}

// CompleteForm fills and reports on the Chromium page in ctx; see
// [Tab.CompleteForm].
func CompleteForm(ctx context.Context, fields []FieldValue, opts Options) (*Completion, error) {
	return On(chromium{}).CompleteForm(ctx, fields, opts)
}

// CompleteForm fills like Fill, then re-snapshots and reports the controls
// the fill revealed and those still invalid.
func (t Tab) CompleteForm(ctx context.Context, fields []FieldValue, opts Options) (*Completion, error) {
	outs, first, last, err := t.fill(ctx, fields, opts)
	if err != nil {
		return nil, err
	}
	c := &Completion{Fields: outs, RevealedControls: []Field{}, InvalidControls: []Field{}}
	wasVisible := map[string]bool{}
	for _, f := range first.Controls {
		if f.Visible {
			wasVisible[f.Target.Ref] = true
		}
	}
	groups := map[string]bool{}
	for _, f := range last.Controls {
		if f.Visible && !wasVisible[f.Target.Ref] {
			c.RevealedControls = append(c.RevealedControls, f)
		}
		if f.Visible && !f.Disabled && f.Validation != nil {
			if f.Type == "radio" && f.Group != "" {
				key := f.Form + "\x00" + f.Group
				if groups[key] {
					continue
				}
				groups[key] = true
			}
			c.InvalidControls = append(c.InvalidControls, f)
		}
	}
	return c, nil
}

func (t Tab) fill(ctx context.Context, fields []FieldValue, opts Options) (outs []FieldOutcome, first, last *FormSnapshot, err error) {
	if len(fields) == 0 {
		return nil, nil, nil, fmt.Errorf("fill: %w: no fields", ErrInvalidAction)
	}
	for i, f := range fields {
		if f.Field == "" && f.Target == nil {
			return nil, nil, nil, fmt.Errorf("fill: %w: entry %d names no field and no target", ErrInvalidAction, i)
		}
	}
	snap, err := t.Snapshot(ctx, opts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("fill: %w", err)
	}
	first = snap
	outs = make([]FieldOutcome, len(fields))
	pending := make([]int, len(fields))
	for i, f := range fields {
		outs[i] = FieldOutcome{Field: fieldLabel(f), Status: StatusNotFound}
		pending[i] = i
	}
	for pass := 0; pass < maxFillPasses && len(pending) > 0; pass++ {
		if pass > 0 {
			t.settle(ctx)
			if snap, err = t.Snapshot(ctx, opts); err != nil {
				return nil, nil, nil, fmt.Errorf("fill: %w", err)
			}
		}
		type job struct {
			i     int
			pos   int
			field Field
			a     Action
		}
		var jobs []job
		var later []int
		for _, i := range pending {
			m := t.match(ctx, fields[i], snap)
			switch m.status {
			case StatusHidden, StatusNotFound:
				outs[i].Status, outs[i].Error = m.status, m.reason
				later = append(later, i)
				continue
			case StatusAmbiguous:
				outs[i].Status, outs[i].Error = m.status, m.reason
				continue
			}
			target, a, err := actionFor(m, fields[i].Value)
			tg := target.Target
			outs[i].Target = &tg
			if err != nil {
				outs[i].Status, outs[i].Error = StatusFailed, err.Error()
				if errors.Is(err, errRefused) {
					outs[i].Status = StatusRefused
				}
				continue
			}
			outs[i].Action = a.Kind
			jobs = append(jobs, job{i: i, pos: m.pos, field: target, a: a})
		}
		slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(a.pos, b.pos) })
		for _, j := range jobs {
			ev, err := t.Control(ctx, j.field.Target, j.a)
			if err != nil {
				outs[j.i].Status, outs[j.i].Error = StatusFailed, err.Error()
				continue
			}
			outs[j.i].Status, outs[j.i].Error, outs[j.i].Evidence = StatusFilled, "", ev
		}
		pending = later
		if len(jobs) == 0 {
			break // nothing changed, so nothing new can have appeared
		}
	}
	t.settle(ctx)
	if last, err = t.Snapshot(ctx, opts); err != nil {
		return nil, nil, nil, fmt.Errorf("fill: %w", err)
	}
	return outs, first, last, nil
}

func fieldLabel(f FieldValue) string {
	if f.Field != "" {
		return f.Field
	}
	return f.Target.String()
}

// matched is how one entry maps onto the snapshot.
type matched struct {
	status string
	reason string
	field  Field   // the control (for a radio group: the radio to check)
	group  []Field // a radio group or same-name checkbox group
	pos    int     // document position, for ordering
}

// normKey folds a label for comparison: case, spacing, and the trailing
// ":" or "*" of "Email *".
func normKey(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimSpace(strings.TrimRight(s, ":* \u00a0"))
}

// match finds the control an entry names.
func (t Tab) match(ctx context.Context, fv FieldValue, snap *FormSnapshot) matched {
	if fv.Target != nil {
		return t.matchTarget(ctx, *fv.Target, snap)
	}
	key := normKey(fv.Field)
	var hits []int
	for i, f := range snap.Controls {
		if normKey(f.Label) == key || normKey(f.Target.Name) == key || normKey(f.Placeholder) == key ||
			strings.EqualFold(f.FieldName, fv.Field) || (f.ID != "" && f.ID == fv.Field) ||
			((f.Type == "radio" || f.Type == "checkbox") && (normKey(f.GroupLabel) == key || (f.Group != "" && strings.EqualFold(f.Group, fv.Field)))) {
			hits = append(hits, i)
		}
	}
	if len(hits) == 0 {
		// A looser pass: the description as whole words of the label.
		for i, f := range snap.Controls {
			if containsWords(normKey(f.Label), key) || containsWords(normKey(f.Target.Name), key) {
				hits = append(hits, i)
			}
		}
	}
	return choose(fv.Field, snap, hits)
}

// containsWords reports whether needle occurs in hay on word boundaries.
func containsWords(hay, needle string) bool {
	if needle == "" || hay == "" {
		return false
	}
	return strings.Contains(" "+hay+" ", " "+needle+" ")
}

// choose turns the matching controls into one control or group.
func choose(desc string, snap *FormSnapshot, hits []int) matched {
	if len(hits) == 0 {
		return matched{status: StatusNotFound, reason: fmt.Sprintf("no control is labelled %q; take a form_snapshot", desc)}
	}
	first := snap.Controls[hits[0]]
	sameGroup := first.Group != "" && (first.Type == "radio" || first.Type == "checkbox")
	for _, i := range hits[1:] {
		f := snap.Controls[i]
		if f.Type != first.Type || f.Group != first.Group || f.Form != first.Form {
			sameGroup = false
		}
	}
	if sameGroup && (len(hits) > 1 || first.Type == "radio") {
		// The whole group, so a value can pick among its members.
		var group []Field
		for _, f := range snap.Controls {
			if f.Type == first.Type && f.Group == first.Group && f.Form == first.Form {
				group = append(group, f)
			}
		}
		return matched{status: StatusFilled, field: first, group: group, pos: hits[0]}
	}
	var visible []int
	for _, i := range hits {
		if snap.Controls[i].Visible {
			visible = append(visible, i)
		}
	}
	switch {
	case len(visible) == 1:
		return matched{status: StatusFilled, field: snap.Controls[visible[0]], pos: visible[0]}
	case len(visible) > 1:
		var names []string
		for _, i := range visible {
			f := snap.Controls[i]
			names = append(names, fmt.Sprintf("%s %q [ref=%s]", f.Target.Role, f.Label, f.Target.Ref))
		}
		return matched{status: StatusAmbiguous, reason: fmt.Sprintf("%d controls match %q: %s; pass a target instead", len(visible), desc, strings.Join(names, "; "))}
	}
	return matched{status: StatusHidden, field: first, pos: hits[0],
		reason: fmt.Sprintf("the control for %q is hidden; fill or check what reveals it first", desc)}
}

// matchTarget finds the snapshot control a target names.
func (tab Tab) matchTarget(ctx context.Context, t snapshot.Target, snap *FormSnapshot) matched {
	ref := t.Ref
	if ref == "" {
		r, err := tab.p.Resolve(ctx, t)
		if err != nil {
			st := StatusNotFound
			if errors.Is(err, snapshot.ErrAmbiguous) {
				st = StatusAmbiguous
			}
			return matched{status: st, reason: err.Error()}
		}
		ref = r.Ref
	}
	for i, f := range snap.Controls {
		if f.Target.Ref == ref {
			if !f.Visible {
				return matched{status: StatusHidden, field: f, pos: i, reason: fmt.Sprintf("the control %s is hidden; fill or check what reveals it first", ref)}
			}
			return matched{status: StatusFilled, field: f, pos: i}
		}
	}
	return matched{status: StatusNotFound, reason: fmt.Sprintf("%s is not a form control of this page; take a form_snapshot", t)}
}

// errRefused marks entries Fill will not perform.
var errRefused = errors.New("refused")

// actionFor converts an entry's value into the action and the control to
// act on: for a radio group, the member the value picks.
func actionFor(m matched, v any) (Field, Action, error) {
	f := m.field
	a, err := actionOn(m, v)
	if err != nil {
		return f, Action{}, err
	}
	if f.Type == "radio" && len(m.group) > 0 {
		if want, ok := scalar(v); ok {
			if r, ok := pickMember(m.group, want); ok {
				f = r
			}
		}
	}
	return f, a, nil
}

func actionOn(m matched, v any) (Action, error) {
	f := m.field
	if f.Type == "file" {
		return Action{}, fmt.Errorf("%w: file inputs take files through control_action setFiles", errRefused)
	}
	if v == nil {
		return Action{Kind: Clear}, nil
	}
	switch {
	case f.Type == "radio" && len(m.group) > 0:
		want, ok := scalar(v)
		if !ok {
			return Action{}, fmt.Errorf("a radio group takes the value or label of one radio, got %T", v)
		}
		if b, isBool := v.(bool); isBool && len(m.group) == 1 {
			return Action{Kind: SetChecked, Checked: &b}, nil
		}
		if _, ok := pickMember(m.group, want); !ok {
			return Action{}, fmt.Errorf("no radio of %q has the value or label %q; options: %s", f.Group, want, memberNames(m.group))
		}
		checked := true
		return Action{Kind: SetChecked, Checked: &checked}, nil
	case f.Type == "checkbox" && len(m.group) > 1:
		return Action{}, fmt.Errorf("%d checkboxes share the name %q; fill each by its label", len(m.group), f.Group)
	case f.Type == "checkbox" || f.Type == "radio":
		b, ok := boolOf(v)
		if !ok {
			return Action{}, fmt.Errorf("a checkbox takes true or false, got %v", v)
		}
		return Action{Kind: SetChecked, Checked: &b}, nil
	case f.Type == "select-multiple":
		list, ok := listOf(v)
		if !ok {
			return Action{}, fmt.Errorf("a multiple select takes a list of option values or labels, got %T", v)
		}
		return Action{Kind: SelectMany, Options: list}, nil
	case f.Type == "select-one":
		s, ok := scalar(v)
		if !ok {
			return Action{}, fmt.Errorf("a select takes one option value or label, got %T", v)
		}
		return Action{Kind: SelectOne, Option: s}, nil
	}
	s, ok := scalar(v)
	if !ok {
		return Action{}, fmt.Errorf("a %s field takes text, got %T", f.Type, v)
	}
	if _, isBool := v.(bool); isBool {
		return Action{}, fmt.Errorf("a %s field takes text, got a bool", f.Type)
	}
	return Action{Kind: SetText, Text: s}, nil
}

// pickMember finds a group member by value, then by label.
func pickMember(group []Field, want string) (Field, bool) {
	for _, f := range group {
		if f.Value != nil && *f.Value == want {
			return f, true
		}
	}
	for _, f := range group {
		if normKey(f.Label) == normKey(want) || normKey(f.Target.Name) == normKey(want) {
			return f, true
		}
	}
	return Field{}, false
}

func memberNames(group []Field) string {
	var out []string
	for _, f := range group {
		v := ""
		if f.Value != nil {
			v = *f.Value
		}
		out = append(out, fmt.Sprintf("%q (%s)", f.Label, v))
	}
	return strings.Join(out, ", ")
}

// scalar renders a string, number or bool as text.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case fmt.Stringer:
		return x.String(), true
	}
	return "", false
}

func boolOf(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "on", "checked", "1":
			return true, true
		case "false", "no", "off", "unchecked", "0", "":
			return false, true
		}
	case float64:
		return x != 0, true
	case int:
		return x != 0, true
	}
	return false, false
}

func listOf(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := scalar(e)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	case string:
		return []string{x}, true
	}
	return nil, false
}
