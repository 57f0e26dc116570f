package gateway

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// fieldOutcomeError turns the first unfilled field of a fill into the
// command's error; every field's outcome stays in the evidence.
func fieldOutcomeError(outs []form.FieldOutcome) *toolError {
	for _, o := range outs {
		switch o.Status {
		case form.StatusFilled:
			continue
		case form.StatusNotFound:
			return errorf(CodeTargetNotFound, "no control matches field %q; take a form_snapshot", o.Field)
		case form.StatusAmbiguous:
			return errorf(CodeTargetAmbiguous, "several controls match field %q; pass its target", o.Field)
		case form.StatusHidden:
			return errorf(CodeNotInteractable, "the control of field %q is not shown", o.Field)
		case form.StatusRefused:
			return errorf(CodeInvalidRequest, "field %q is a file input: use control_action setFiles (needs file:upload)", o.Field)
		default:
			return errorf(CodeNotVerified, "field %q: %s", o.Field, o.Error)
		}
	}
	return nil
}

// rememberPasswords records the values a fill typed into password fields
// (their evidence says type password) for redaction. Fill reports one
// outcome per entry, in the entries' order.
func (x *execCtx) rememberPasswords(outs []form.FieldOutcome, fields []form.FieldValue) {
	for i, o := range outs {
		if i >= len(fields) || o.Evidence == nil || o.Evidence.Type != "password" {
			continue
		}
		switch v := fields[i].Value.(type) {
		case string:
			x.rememberSecret(v)
		case float64: // a numeric PIN
			x.rememberSecret(strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
}

type intentFillArgs struct {
	Fields []form.FieldValue `json:"fields"`
}

func runIntentFill(ctx context.Context, x *execCtx, in intentFillArgs) (map[string]any, map[string]any, error) {
	fields := in.Fields
	for _, f := range fields {
		if f.Field == "" && f.Target == nil {
			return nil, nil, errorf(CodeInvalidRequest, "each field needs field (a label or name) or target")
		}
	}
	outs, err := onForms(ctx, x, func(fctx context.Context, tab form.Tab) ([]form.FieldOutcome, error) {
		return tab.Fill(fctx, fields, form.Options{})
	})
	if err != nil {
		return nil, nil, err
	}
	x.rememberPasswords(outs, fields)
	ev := map[string]any{"fields": outs}
	if te := fieldOutcomeError(outs); te != nil {
		return ev, nil, te
	}
	return ev, nil, nil
}

type intentCompleteFormArgs struct {
	// Values are plain JSON values (numbers decode as float64).
	Values map[string]any   `json:"values"`
	Form   *snapshot.Target `json:"form"`
}

func runIntentCompleteForm(ctx context.Context, x *execCtx, in intentCompleteFormArgs) (map[string]any, map[string]any, error) {
	plain := in.Values
	if plain == nil {
		plain = map[string]any{}
	}
	t, err := optionalTarget(in.Form)
	if err != nil {
		return nil, nil, err
	}
	opts := form.Options{Target: t}
	c, err := onForms(ctx, x, func(fctx context.Context, tab form.Tab) (*form.Completion, error) {
		return tab.CompleteForm(fctx, form.FieldsFromMap(plain), opts)
	})
	if err != nil {
		return nil, nil, err
	}
	x.rememberPasswords(c.Fields, form.FieldsFromMap(plain))
	// Compact evidence keeps revealedControls: their targets are usable at once.
	ev := map[string]any{"fields": c.Fields, "revealedControls": c.RevealedControls, "invalidControls": c.InvalidControls}
	if te := fieldOutcomeError(c.Fields); te != nil {
		return ev, nil, te
	}
	return ev, nil, nil
}

type submitAndVerifyArgs struct {
	Target *snapshot.Target `json:"target"`
	Expect *struct {
		URLContains  string `json:"urlContains"`
		TextContains string `json:"textContains"`
	} `json:"expect"`
	WaitFor string `json:"waitFor"`
}

func runIntentSubmitAndVerify(ctx context.Context, x *execCtx, in submitAndVerifyArgs) (map[string]any, map[string]any, error) {
	t, ok, err := targetOnly(in.Target)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		// Default: the first form's submit button (else the form itself).
		fs, err := x.formSnapshot(ctx, form.Options{})
		if err != nil {
			return nil, nil, err
		}
		if len(fs.Forms) == 0 {
			return nil, nil, errorf(CodeTargetNotFound, "the page has no form; pass target (a submit button or form)")
		}
		t = fs.Forms[0].Target
		if len(fs.Forms[0].Submit) > 0 {
			t = fs.Forms[0].Submit[0]
		}
	}
	v := form.Verify{WaitFor: in.WaitFor}
	if e := in.Expect; e != nil {
		v.URLContains, v.TextContains = e.URLContains, e.TextContains
	}
	if d, ok := ctx.Deadline(); ok {
		v.Timeout = max(0, time.Until(d)-time.Second)
	}
	sub, err := onForms(ctx, x, func(fctx context.Context, tab form.Tab) (*form.Submission, error) {
		return tab.SubmitAndVerify(fctx, t, v)
	})
	if err != nil {
		return nil, nil, formActionError(err)
	}
	ev := map[string]any{"submission": sub, "submitTarget": t, "page": submittedPage(pageState(x.ep))}
	if len(sub.FormValidation) > 0 {
		ev["formValidation"] = sub.FormValidation
	}
	switch sub.Status {
	case form.SubmitVerified:
		return ev, nil, nil
	case form.SubmitBlocked:
		if sub.Reason != "" && !strings.HasPrefix(sub.Reason, "client-side validation") {
			return ev, nil, errorf(CodeFormValidation, "validation blocked the submit: %s", sub.Reason)
		}
		return ev, nil, errorf(CodeFormValidation, "client-side validation blocked the submit: %d invalid control(s)", len(sub.FormValidation))
	default:
		return ev, nil, errorf(CodeNotVerified, "the submit was not verified: %s", sub.Reason)
	}
}

// submittedPage is the page state a submit's evidence shows: its URL as
// the submission's own (form.EvidenceURL), since after a GET form the query
// holds the values just submitted, a password among them.
func submittedPage(st browser.PageState) browser.PageState {
	if st.URL != nil {
		st.URL = ptr(form.EvidenceURL(*st.URL))
	}
	return st
}
