package form

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/clip"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// Bounds of a form snapshot.
const (
	DefaultMaxControls = 128
	MaxMaxControls     = 1000
	maxTextRunes       = 500
	maxLabelRunes      = 200
)

// Options shape a form snapshot. The zero value covers the whole page with
// the default bound.
type Options struct {
	// Target scopes the snapshot to the controls inside one node, e.g. a
	// form's ref or {Role: "main"}.
	Target *snapshot.Target `json:"target,omitempty"`
	// MaxControls bounds the controls listed: 0 means DefaultMaxControls.
	MaxControls int `json:"maxControls,omitempty"`
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.MaxControls == 0:
		o.MaxControls = DefaultMaxControls
	case o.MaxControls < 1 || o.MaxControls > MaxMaxControls:
		return o, fmt.Errorf("maxControls %d out of range 1..%d", o.MaxControls, MaxMaxControls)
	}
	if o.Target != nil {
		if err := o.Target.Validate(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// FormSnapshot lists the form controls of a page (or of a scope) with their
// state and semantic targets.
type FormSnapshot struct {
	URL      string  `json:"url"`
	Forms    []Form  `json:"forms"`
	Controls []Field `json:"controls"`
	// Truncated is true when MaxControls cut the list; Repair says how to
	// see the rest.
	Truncated     bool      `json:"truncated"`
	TotalControls int       `json:"totalControls"`
	ShownControls int       `json:"shownControls"`
	Repair        string    `json:"repair,omitempty"`
	TakenAt       time.Time `json:"takenAt"`
}

// Form is one <form> element that holds listed controls.
type Form struct {
	// Key is what Field.Form refers to: the form's id, else its name,
	// else "form<N>" in document order.
	Key        string          `json:"key"`
	Target     snapshot.Target `json:"target"`
	Label      string          `json:"label,omitempty"`
	Action     string          `json:"action,omitempty"`
	Method     string          `json:"method,omitempty"`
	NoValidate bool            `json:"noValidate,omitempty"`
	Controls   int             `json:"controls"`
	// Submit lists the form's submit buttons, usable as the submit target of
	// SubmitAndVerify.
	Submit []snapshot.Target `json:"submit,omitempty"`
}

// Option is one option of a select.
type Option struct {
	Value    string `json:"value"`
	Label    string `json:"label"`
	Selected bool   `json:"selected"`
	Disabled bool   `json:"disabled,omitempty"`
}

// Validity is a failed constraint of a control, value-free: the message is
// built from the constraint and the field's attributes, never from what was
// typed.
type Validity struct {
	Constraint string `json:"constraint"`
	Message    string `json:"message"`
}

// Field is one form control as a form snapshot lists it.
type Field struct {
	// Target is the control's semantic target (ref, role, accessible name),
	// usable unchanged with Control, Fill and the MCP tools.
	Target snapshot.Target `json:"target"`
	// Type is the input type ("text", "email", "password", "checkbox",
	// "radio", "file", "date", …), "select-one", "select-multiple",
	// "textarea" or "contenteditable".
	Type        string `json:"type"`
	Label       string `json:"label,omitempty"`
	FieldName   string `json:"fieldName,omitempty"` // the name attribute
	ID          string `json:"id,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
	Required    bool   `json:"required"`
	Disabled    bool   `json:"disabled"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	Visible     bool   `json:"visible"`
	// Value is the current value; nil for passwords and files, whose values
	// are never reported (HasValue says whether one is set).
	Value    *string `json:"value,omitempty"`
	HasValue bool    `json:"hasValue"`
	Checked  *bool   `json:"checked,omitempty"`
	// Group and GroupLabel tie radios (and same-name checkboxes) together:
	// the name attribute and the fieldset legend.
	Group       string    `json:"group,omitempty"`
	GroupLabel  string    `json:"groupLabel,omitempty"`
	Options     []Option  `json:"options,omitempty"`
	MoreOptions int       `json:"moreOptions,omitempty"` // options past the first 100
	Files       int       `json:"files,omitempty"`
	FileNames   []string  `json:"fileNames,omitempty"` // base names only, never paths
	Multiple    bool      `json:"multiple,omitempty"`
	Valid       bool      `json:"valid"`
	Validation  *Validity `json:"validation,omitempty"`
	Form        string    `json:"form,omitempty"`    // Form.Key
	FrameID     string    `json:"frameId,omitempty"` // set inside iframes
}

// controlData is what js/helpers.js readControl reports.
type controlData struct {
	El          int      `json:"el"`
	Frame       int      `json:"frame"`
	Form        int      `json:"form"`
	Type        string   `json:"type"`
	Role        string   `json:"role"`
	ID          string   `json:"id"`
	FieldName   string   `json:"fieldName"`
	Label       string   `json:"label"`
	Placeholder string   `json:"placeholder"`
	Required    bool     `json:"required"`
	Disabled    bool     `json:"disabled"`
	ReadOnly    bool     `json:"readOnly"`
	Visible     bool     `json:"visible"`
	Focused     bool     `json:"focused"`
	Connected   bool     `json:"connected"`
	Value       *string  `json:"value"`
	HasValue    bool     `json:"hasValue"`
	Length      *int     `json:"length"`
	Checked     *bool    `json:"checked"`
	Group       string   `json:"group"`
	GroupLabel  string   `json:"groupLabel"`
	Options     []Option `json:"options"`
	MoreOptions int      `json:"moreOptions"`
	Selected    []Option `json:"selected"`
	Files       *int     `json:"files"`
	FileNames   []string `json:"fileNames"`
	Multiple    bool     `json:"multiple"`
	Valid       bool     `json:"valid"`
	Constraint  string   `json:"constraint"`
	Message     string   `json:"message"`
}

type collected struct {
	Controls []controlData `json:"controls"`
	Forms    []struct {
		El         int    `json:"el"`
		ID         string `json:"id"`
		Name       string `json:"name"`
		Label      string `json:"label"`
		Action     string `json:"action"`
		Method     string `json:"method"`
		NoValidate bool   `json:"noValidate"`
		Controls   int    `json:"controls"`
		Submits    []struct {
			El    int    `json:"el"`
			Label string `json:"label"`
		} `json:"submits"`
	} `json:"forms"`
	Frames []int  `json:"frames"`
	Total  int    `json:"total"`
	URL    string `json:"url"`
}

// repairTruncated is what a truncated form snapshot tells the agent.
const repairTruncated = `scope with target (a form's ref from this snapshot, or {"role":"main"}) or raise maxControls`

// Snapshot lists the form controls of the Chromium page in ctx, including
// those in same-origin iframes and open shadow roots, and hidden ones
// (Visible false).
func Snapshot(ctx context.Context, opts Options) (*FormSnapshot, error) {
	return On(chromium{}).Snapshot(ctx, opts)
}

// Snapshot lists the form controls of the page, including those in
// same-origin iframes and open shadow roots, and hidden ones (Visible
// false).
func (t Tab) Snapshot(ctx context.Context, opts Options) (*FormSnapshot, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("form snapshot: %w", err)
	}
	if err := t.p.Ready(ctx); err != nil {
		return nil, fmt.Errorf("form snapshot: %w", err)
	}
	defer t.p.Release(ctx)
	var root Object // nil: the document
	if opts.Target != nil {
		el, err := t.p.Resolve(ctx, *opts.Target)
		if err != nil {
			return nil, fmt.Errorf("form snapshot: scope: %w", err)
		}
		root = el.Object
	}
	found, data, err := t.p.Elements(ctx, root, pageFunc("opts", collectJS), map[string]int{"max": opts.MaxControls})
	if err != nil {
		return nil, fmt.Errorf("form snapshot: %w", err)
	}
	var c collected
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return nil, fmt.Errorf("form snapshot: decode: %w", err)
	}
	at := func(i int) Found {
		if i < 0 || i >= len(found) {
			return Found{}
		}
		return found[i]
	}

	fs := &FormSnapshot{URL: c.URL, Forms: []Form{}, Controls: []Field{}, TotalControls: c.Total, TakenAt: time.Now().UTC()}
	keys := make([]string, len(c.Forms))
	for i, f := range c.Forms {
		key := f.ID
		if key == "" {
			key = f.Name
		}
		if key == "" {
			key = fmt.Sprintf("form%d", i+1)
		}
		keys[i] = key
		form := Form{
			Key:        key,
			Target:     semanticTarget(at(f.El), "form", f.Label),
			Label:      clip.Runes(f.Label, maxLabelRunes),
			Action:     f.Action,
			Method:     f.Method,
			NoValidate: f.NoValidate,
			Controls:   f.Controls,
		}
		for _, s := range f.Submits {
			form.Submit = append(form.Submit, semanticTarget(at(s.El), "button", s.Label))
		}
		fs.Forms = append(fs.Forms, form)
	}
	for _, cd := range c.Controls {
		ctl := cd.field(semanticTarget(at(cd.El), cd.Role, cd.Label))
		if cd.Form >= 0 && cd.Form < len(keys) {
			ctl.Form = keys[cd.Form]
		}
		if cd.Frame >= 0 && cd.Frame < len(c.Frames) {
			ctl.FrameID = at(c.Frames[cd.Frame]).Frame
		}
		fs.Controls = append(fs.Controls, ctl)
	}
	fs.ShownControls = len(fs.Controls)
	if fs.TotalControls > fs.ShownControls {
		fs.Truncated = true
		fs.Repair = repairTruncated
	}
	return fs, nil
}

// semanticTarget is the target of a DOM node: its accessibility role and
// name when the tree exposes it, else the implicit role and the label the
// page shows (a hidden control still gets a usable ref).
func semanticTarget(f Found, role, label string) snapshot.Target {
	if f.Ref == "" {
		return snapshot.Target{}
	}
	if n := f.Node; n != nil {
		return snapshot.Target{Ref: n.Ref, Role: n.Role, Name: n.Name}
	}
	return snapshot.Target{Ref: f.Ref, Role: role, Name: clip.Runes(label, maxLabelRunes)}
}

// field converts page data into a Field, dropping anything secret.
func (cd controlData) field(t snapshot.Target) Field {
	c := Field{
		Target:      t,
		Type:        cd.Type,
		Label:       clip.Runes(cd.Label, maxLabelRunes),
		FieldName:   cd.FieldName,
		ID:          cd.ID,
		Placeholder: cd.Placeholder,
		Required:    cd.Required,
		Disabled:    cd.Disabled,
		ReadOnly:    cd.ReadOnly,
		Visible:     cd.Visible,
		HasValue:    cd.HasValue,
		Checked:     cd.Checked,
		Group:       cd.Group,
		GroupLabel:  clip.Runes(cd.GroupLabel, maxLabelRunes),
		Options:     cd.Options,
		MoreOptions: cd.MoreOptions,
		FileNames:   cd.FileNames,
		Multiple:    cd.Multiple,
		Valid:       cd.Valid,
	}
	if cd.Files != nil {
		c.Files = *cd.Files
	}
	if cd.Type != "password" && cd.Type != "file" && cd.Value != nil {
		v := clip.Runes(*cd.Value, maxTextRunes)
		c.Value = &v
	}
	if !cd.Valid && cd.Constraint != "" {
		c.Validation = &Validity{Constraint: cd.Constraint, Message: cd.Message}
	}
	return c
}
