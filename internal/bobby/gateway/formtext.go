package gateway

import (
	"strconv"
	"strings"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// Form evidence is rendered for the model one fact per line, never as the
// JSON record (structuredContent keeps that):
//
//	Email = ada@example.com
//	Password = (13 chars)
//	Team name = Acme (revealed and filled) [ref=e7]
//	Gift: hidden — the control for "Gift" is hidden; …
//	invalid textbox "Email" [ref=e3]: typeMismatch — Please enter an email address.
//	verified: navigated to https://shop.test/welcome (POST 200 Document)
//
// Secret values never appear: a password shows its length, a file input its
// file count, as the value-free evidence itself does.

// formEvidenceText renders the form keys of a command's evidence and
// deletes them from ev; it reports the lines in reading order.
func formEvidenceText(ev map[string]any, raw map[string]any) []string {
	var lines []string
	revealed, _ := raw["revealedControls"].([]form.Field)
	if fields, ok := raw["fields"].([]form.FieldOutcome); ok {
		lines = append(lines, fieldOutcomeLines(fields, revealed)...)
		delete(ev, "fields")
		delete(ev, "revealedControls")
	} else if revealed != nil {
		for _, f := range revealed {
			lines = append(lines, "revealed "+controlText(f))
		}
		delete(ev, "revealedControls")
	}
	if inv, ok := raw["invalidControls"].([]form.Field); ok {
		for _, f := range inv {
			lines = append(lines, invalidLine(f.Target, f.Validation))
		}
		delete(ev, "invalidControls")
	}
	if sub, ok := raw["submission"].(*form.Submission); ok && sub != nil {
		t, _ := raw["submitTarget"].(snapshot.Target)
		lines = append(lines, submissionLine(sub, t))
		delete(ev, "submission")
		delete(ev, "submitTarget")
		if len(sub.FormValidation) > 0 {
			for _, is := range sub.FormValidation {
				v := &form.Validity{Constraint: is.Constraint, Message: is.Message}
				lines = append(lines, invalidLine(is.Target, v))
			}
			delete(ev, "formValidation")
		}
	}
	if c, ok := raw["control"].(*form.Evidence); ok && c != nil {
		lines = append(lines, controlEvidenceLine(c))
		delete(ev, "control")
	}
	if fs, ok := raw["formSnapshot"].(*form.FormSnapshot); ok && fs != nil {
		lines = append(lines, formSnapshotLines(fs)...)
		delete(ev, "formSnapshot")
	}
	return lines
}

// fieldOutcomeLines renders one line per filled entry: `Label = value`,
// marked when the fill revealed the control; failures say why. Controls the
// fill revealed but no entry filled follow, with their targets.
func fieldOutcomeLines(outs []form.FieldOutcome, revealed []form.Field) []string {
	wasRevealed := map[string]bool{}
	for _, f := range revealed {
		wasRevealed[f.Target.Ref] = true
	}
	filled := map[string]bool{}
	lines := make([]string, 0, len(outs)+len(revealed))
	for _, o := range outs {
		ref := ""
		if o.Target != nil {
			ref = o.Target.Ref
		}
		if o.Status != form.StatusFilled {
			l := o.Field + ": " + o.Status
			if o.Error != "" {
				l += " — " + o.Error
			}
			lines = append(lines, l)
			continue
		}
		filled[ref] = true
		l := o.Field + " = " + evidenceValue(o.Evidence)
		if o.Evidence != nil && !o.Evidence.Applied {
			l += " (not applied: the page changed it back)"
		}
		if wasRevealed[ref] {
			l += " (revealed and filled) [ref=" + ref + "]"
		}
		lines = append(lines, l)
	}
	for _, f := range revealed {
		if !filled[f.Target.Ref] {
			lines = append(lines, "revealed "+controlText(f))
		}
	}
	return lines
}

// evidenceValue renders a control's re-read value without secrets.
func evidenceValue(e *form.Evidence) string {
	if e == nil {
		return "?"
	}
	switch {
	case e.Length != nil:
		return "(" + strconv.Itoa(*e.Length) + " chars)"
	case e.Files != nil:
		return "(" + strconv.Itoa(*e.Files) + " files)"
	case e.Checked != nil:
		if *e.Checked {
			return "checked"
		}
		return "unchecked"
	case e.Selected != nil:
		labels := make([]string, len(e.Selected))
		for i, o := range e.Selected {
			labels[i] = o.Label
		}
		if len(labels) == 0 {
			return "(none)"
		}
		return strings.Join(labels, ", ")
	case e.Value != nil:
		if *e.Value == "" {
			return `""`
		}
		return *e.Value
	case e.HasValue:
		return "(set)"
	}
	return `""`
}

// controlEvidenceLine renders control_action's re-read control.
func controlEvidenceLine(e *form.Evidence) string {
	l := e.Action + " " + targetText(e.Target) + " → " + evidenceValue(e)
	switch {
	case !e.Connected:
		l = e.Action + " " + targetText(e.Target) + ": the control left the page"
	case !e.Applied:
		l += " (not applied)"
	}
	if e.Validation != nil {
		l += "; invalid: " + e.Validation.Constraint + " — " + e.Validation.Message
	}
	return l
}

// invalidLine renders a failed constraint, value-free.
func invalidLine(t snapshot.Target, v *form.Validity) string {
	l := "invalid " + targetText(t)
	if v != nil {
		l += ": " + v.Constraint
		if v.Message != "" {
			l += " — " + v.Message
		}
	}
	return l
}

// submissionLine renders the verdict of a submit and what proved it.
func submissionLine(s *form.Submission, t snapshot.Target) string {
	var b strings.Builder
	b.WriteString(s.Status)
	if !t.IsZero() {
		b.WriteString(" by " + targetText(t))
	}
	if s.Navigated {
		b.WriteString(": navigated to " + s.URL)
	} else {
		b.WriteString(": no navigation")
		if s.URL != "" {
			b.WriteString(", at " + s.URL)
		}
	}
	var rs []string
	for _, r := range s.Responses {
		switch {
		case r.Failed != "":
			rs = append(rs, r.Method+" "+r.Type+" failed: "+r.Failed)
		case r.Status == 0:
			rs = append(rs, r.Method+" "+r.Type+" unanswered")
		default:
			rs = append(rs, r.Method+" "+strconv.Itoa(r.Status)+" "+r.Type)
		}
	}
	if len(rs) > 0 {
		b.WriteString(" (" + strings.Join(rs, ", ") + ")")
	} else if s.Requests > 0 {
		b.WriteString(" (" + strconv.Itoa(s.Requests) + " requests)")
	}
	if s.Reason != "" {
		b.WriteString("; " + s.Reason)
	}
	return b.String()
}

// formSnapshotLines renders a form snapshot: one line per form (how it
// submits, its submit buttons), one per control.
func formSnapshotLines(fs *form.FormSnapshot) []string {
	lines := make([]string, 0, len(fs.Forms)+len(fs.Controls)+1)
	for _, f := range fs.Forms {
		var b strings.Builder
		b.WriteString("form " + strconv.Quote(f.Key))
		if f.Label != "" {
			b.WriteString(" " + strconv.Quote(f.Label))
		}
		b.WriteString(" [ref=" + f.Target.Ref + "]")
		if f.Method != "" || f.Action != "" {
			b.WriteString(" " + strings.ToUpper(cmpOr(f.Method, "get")) + " " + f.Action)
		}
		if f.NoValidate {
			b.WriteString(" [novalidate]")
		}
		for i, s := range f.Submit {
			if i == 0 {
				b.WriteString("; submit ")
			} else {
				b.WriteString(", ")
			}
			b.WriteString(targetText(s))
		}
		lines = append(lines, b.String())
	}
	for _, c := range fs.Controls {
		lines = append(lines, "  "+controlText(c))
	}
	if fs.Truncated {
		lines = append(lines, "# form controls truncated: showing "+strconv.Itoa(fs.ShownControls)+" of "+
			strconv.Itoa(fs.TotalControls)+"; "+fs.Repair)
	}
	return lines
}

// controlText renders one form control: its target, type and flags, its
// value (never a secret), options, and a failed constraint.
func controlText(f form.Field) string {
	var b strings.Builder
	b.WriteString(targetText(f.Target))
	b.WriteString(" " + f.Type)
	flag := func(on bool, s string) {
		if on {
			b.WriteString(" [" + s + "]")
		}
	}
	flag(f.Required, "required")
	flag(f.Disabled, "disabled")
	flag(f.ReadOnly, "readonly")
	flag(!f.Visible, "hidden")
	if f.Label != "" && f.Label != f.Target.Name {
		b.WriteString(" label=" + strconv.Quote(f.Label))
	}
	switch {
	case f.Type == "password":
		if f.HasValue {
			b.WriteString(" = (set)")
		}
	case f.Type == "file":
		if f.Files > 0 {
			b.WriteString(" = (" + strconv.Itoa(f.Files) + " files)")
		}
	case f.Checked != nil:
		if *f.Checked {
			b.WriteString(" = checked")
		}
	case len(f.Options) > 0:
		var sel, all []string
		for _, o := range f.Options {
			all = append(all, o.Label)
			if o.Selected {
				sel = append(sel, o.Label)
			}
		}
		b.WriteString(" = " + strings.Join(sel, ", ") + " of " + strings.Join(all, "|"))
		if f.MoreOptions > 0 {
			b.WriteString("|… (" + strconv.Itoa(f.MoreOptions) + " more)")
		}
	case f.Value != nil && *f.Value != "":
		b.WriteString(" = " + strconv.Quote(*f.Value))
	}
	if f.Visible && !f.Disabled && f.Validation != nil {
		b.WriteString("; invalid: " + f.Validation.Constraint)
	}
	return b.String()
}

// targetText renders a target the way snapshot lines do: role "name" [ref=eN].
func targetText(t snapshot.Target) string {
	var b strings.Builder
	b.WriteString(cmpOr(t.Role, "element"))
	if t.Name != "" {
		b.WriteString(" " + strconv.Quote(t.Name))
	}
	if t.Ref != "" {
		b.WriteString(" [ref=" + t.Ref + "]")
	} else if t.Selector != "" {
		b.WriteString(" [selector=" + strconv.Quote(t.Selector) + "]")
	}
	return b.String()
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
