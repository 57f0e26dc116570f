package gateway

import (
	"context"
	"encoding/json"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// formOptions reads form_snapshot's arguments.
func formOptions(in map[string]any) (form.Options, error) {
	opts := form.Options{MaxControls: argInt(in, "maxControls")}
	if _, has := in["target"]; has {
		t, ok, err := targetOf(map[string]any{"target": in["target"]})
		if err != nil {
			return opts, err
		}
		if ok {
			opts.Target = &t
		}
	}
	return opts, nil
}

func (x *execCtx) formSnapshot(ctx context.Context, opts form.Options) (*form.FormSnapshot, error) {
	var fs *form.FormSnapshot
	err := x.page.Do(ctx, func(pctx context.Context) error {
		var err error
		fs, err = form.Snapshot(pctx, opts)
		return err
	})
	return fs, err
}

func runFormSnapshot(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	opts, err := formOptions(x.input)
	if err != nil {
		return nil, nil, err
	}
	fs, err := x.formSnapshot(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"formSnapshot": fs}, nil, nil
}

func runControlAction(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	t, _, err := targetOf(map[string]any{"target": x.input["target"]})
	if err != nil {
		return nil, nil, err
	}
	var a form.Action
	b, _ := json.Marshal(x.input["action"])
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, nil, errorf(CodeInvalidRequest, "action: %v", err)
	}
	var ev *form.Evidence
	err = x.page.Do(ctx, func(pctx context.Context) error {
		var err error
		ev, err = form.Control(pctx, t, a)
		return err
	})
	if err != nil {
		if errorsIs(err, form.ErrInvalidAction) {
			return nil, nil, errorf(CodeInvalidRequest, "%v", err)
		}
		return nil, nil, err
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
func runIntentLocate(ctx context.Context, x *execCtx) (map[string]any, map[string]any, error) {
	opts := snapshot.Options{MaxNodes: snapshot.MaxMaxNodes, Interesting: true}
	if role := argString(x.input, "role"); role != "" {
		// The role narrows the question; Ask scores role words too.
		x.input["description"] = role + " " + argString(x.input, "description")
	}
	snap, err := x.takeSnapshot(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	ans, ok := snapshot.Ask(snap, argString(x.input, "description"))
	if !ok {
		return map[string]any{"located": nil}, nil, errorf(CodeTargetNotFound,
			"no single element matches the description clearly (ambiguous, partial or below confidence %.1f); take an a11y_snapshot and pick a ref", snapshot.ConfidenceFloor)
	}
	return map[string]any{"located": ans}, nil, nil
}
