package gateway

import (
	"context"
	"errors"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

type formSnapshotArgs struct {
	Target      *snapshot.Target `json:"target"`
	MaxControls int              `json:"maxControls"`
}

// formOptions reads form_snapshot's arguments.
func formOptions(in formSnapshotArgs) (form.Options, error) {
	opts := form.Options{MaxControls: in.MaxControls}
	t, err := optionalTarget(in.Target)
	opts.Target = t
	return opts, err
}

// onForms runs fn on the page's form tab (see enginePage.forms) and
// returns what it returns.
func onForms[T any](ctx context.Context, x *execCtx, fn func(ctx context.Context, tab form.Tab) (T, error)) (T, error) {
	var out T
	err := x.ep.forms(ctx, func(fctx context.Context, tab form.Tab) error {
		var err error
		out, err = fn(fctx, tab)
		return err
	})
	return out, err
}

// formActionError is the error of a form action: an action the control
// cannot take is the caller's invalid request, and a failure before the
// action reached the page is marked unsent.
func formActionError(err error) error {
	if errorsIs(err, form.ErrInvalidAction) {
		return errorf(CodeInvalidRequest, "%v", err)
	}
	var na *form.NotActedError
	if errors.As(err, &na) {
		return unsent(err)
	}
	return err
}

func (x *execCtx) formSnapshot(ctx context.Context, opts form.Options) (*form.FormSnapshot, error) {
	return onForms(ctx, x, func(fctx context.Context, tab form.Tab) (*form.FormSnapshot, error) { return tab.Snapshot(fctx, opts) })
}

func runFormSnapshot(ctx context.Context, x *execCtx, in formSnapshotArgs) (map[string]any, map[string]any, error) {
	opts, err := formOptions(in)
	if err != nil {
		return nil, nil, err
	}
	fs, err := x.formSnapshot(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"formSnapshot": fs}, nil, nil
}

type controlActionArgs struct {
	Target *snapshot.Target `json:"target"`
	Action form.Action      `json:"action"`
}

func runControlAction(ctx context.Context, x *execCtx, in controlActionArgs) (map[string]any, map[string]any, error) {
	t, _, err := targetOnly(in.Target)
	if err != nil {
		return nil, nil, err
	}
	a := in.Action
	ev, err := onForms(ctx, x, func(fctx context.Context, tab form.Tab) (*form.Evidence, error) { return tab.Control(fctx, t, a) })
	if err != nil {
		return nil, nil, formActionError(err)
	}
	if ev != nil && ev.Type == "password" && a.Kind == form.SetText {
		x.rememberSecret(a.Text)
	}
	out := map[string]any{"control": ev}
	if a.Kind == form.Activate {
		for k, v := range x.settle(ctx) {
			out[k] = v
		}
	}
	return out, nil, nil
}

// runIntentLocate finds the element a description names, from a fresh
// snapshot (which also refreshes the retained context).
type intentLocateArgs struct {
	Description string `json:"description"`
	Role        string `json:"role"`
}

func runIntentLocate(ctx context.Context, x *execCtx, in intentLocateArgs) (map[string]any, map[string]any, error) {
	opts := snapshot.Options{MaxNodes: snapshot.MaxMaxNodes, Interesting: true}
	question := in.Description
	if in.Role != "" {
		// The role narrows the question; Ask scores role words too.
		question = in.Role + " " + in.Description
	}
	snap, err := x.takeSnapshot(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	ans, ok := snapshot.Ask(snap, question)
	if !ok {
		return map[string]any{"located": nil}, nil, errorf(CodeTargetNotFound,
			"no single element matches the description clearly (ambiguous, partial or below confidence %.1f); take an a11y_snapshot and pick a ref", snapshot.ConfidenceFloor)
	}
	return map[string]any{"located": ans}, nil, nil
}
