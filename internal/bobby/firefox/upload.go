package firefox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// FileInput is the file input a target stands for, as FindFileInput
// reached it.
type FileInput struct {
	// Ref is the input's ref: hidden inputs get one too.
	Ref string
	// Via says how the input was reached: "input" (the target is one),
	// "label" (a label for it) or "descendant" (inside the target).
	Via      string
	Multiple bool
}

// ErrNoFileInput means the target is no file input, no label for one and
// holds none.
var ErrNoFileInput = errors.New("no file input")

// findFileInputJS finds the file input of `this`, as Chromium's upload
// does: the element itself, the control of a label, a file input inside
// it, or the control of the label around it.
const findFileInputJS = `function() {
  const isFile = (e) => !!e && e.localName === 'input' && String(e.type).toLowerCase() === 'file';
  let input = null, via = '';
  if (isFile(this)) { input = this; via = 'input'; }
  else if (this.localName === 'label' && isFile(this.control)) { input = this.control; via = 'label'; }
  else {
    const inner = this.querySelector ? this.querySelector('input[type=file]') : null;
    if (inner) { input = inner; via = 'descendant'; }
    else {
      const label = this.closest ? this.closest('label') : null;
      if (label && isFile(label.control)) { input = label.control; via = 'label'; }
    }
  }
  return {els: input ? [input] : [], data: JSON.stringify({via: via, multiple: !!(input && input.multiple)})};
}`

// FindFileInput resolves the target (a ref, a role and name, or a CSS
// selector of the top document) and the file input it stands for; one it
// cannot reach is ErrNoFileInput. It returns the target's ref too.
func (p *Page) FindFileInput(ctx context.Context, t snapshot.Target) (string, FileInput, error) {
	f := p.Forms()
	defer f.Release(ctx)
	el, err := f.Resolve(ctx, t)
	if err != nil {
		return "", FileInput{}, err
	}
	found, data, err := f.Elements(ctx, el.Object, findFileInputJS)
	if err != nil {
		return el.Ref, FileInput{}, fmt.Errorf("find file input: %w", err)
	}
	if len(found) == 0 || found[0].Ref == "" {
		return el.Ref, FileInput{}, ErrNoFileInput
	}
	var meta struct {
		Via      string `json:"via"`
		Multiple bool   `json:"multiple"`
	}
	if err := json.Unmarshal([]byte(data), &meta); err != nil {
		return el.Ref, FileInput{}, fmt.Errorf("find file input: decode: %w", err)
	}
	return el.Ref, FileInput{Ref: found[0].Ref, Via: meta.Via, Multiple: meta.Multiple}, nil
}

// SetInputFiles puts the files (absolute paths) on the file input ref
// through input.setFiles, which fires input and change as a file picker
// does, and returns the base names the input then reports. An input inside
// an iframe is set through its own frame's browsing context.
func (p *Page) SetInputFiles(ctx context.Context, ref string, paths []string) ([]string, error) {
	loc, err := p.Locate(ctx, snapshot.Target{Ref: ref}, false)
	if err != nil {
		return nil, fmt.Errorf("set files: %w", err)
	}
	if loc.SharedID == "" {
		return nil, fmt.Errorf("set files: ref %s has no node id", ref)
	}
	bcs := []string{p.bc}
	if loc.Where.InFrame {
		if bcs, err = p.contexts(ctx); err != nil {
			return nil, fmt.Errorf("set files: %w", err)
		}
	}
	for _, bc := range bcs {
		names, err := p.setFilesIn(ctx, bc, loc.SharedID, paths)
		if bidi.IsCode(err, "no such node") || bidi.IsCode(err, "no such element") {
			continue // the node lives in another frame
		}
		if err != nil {
			return nil, fmt.Errorf("set files: %w", err)
		}
		return names, nil
	}
	return nil, fmt.Errorf("set files: %w: %s is in no frame of the page any more; take a new a11y_snapshot", snapshot.ErrTargetNotFound, ref)
}

// setFilesIn sets the files of the input sharedID of browsing context bc
// and reads back the names it reports.
func (p *Page) setFilesIn(ctx context.Context, bc, sharedID string, paths []string) ([]string, error) {
	if paths == nil {
		paths = []string{}
	}
	err := p.conn.Call(ctx, "input.setFiles", map[string]any{
		"context": bc, "element": map[string]string{"sharedId": sharedID}, "files": paths,
	}, nil)
	if err != nil {
		return nil, err
	}
	v, err := p.callOnIn(ctx, bc, sharedID, `(el) => JSON.stringify(Array.from(el.files || [], (f) => f.name))`)
	if err != nil {
		return nil, fmt.Errorf("read back: %w", err)
	}
	raw, _ := v.Decode()
	text, _ := raw.(string)
	names := []string{}
	if err := json.Unmarshal([]byte(text), &names); err != nil {
		return nil, fmt.Errorf("read back: %w", err)
	}
	return names, nil
}

// FileDialog is the file picker a click opened: the input behind it.
type FileDialog struct {
	SharedID string
	Multiple bool
}

// ErrNoFileDialog means the click opened no file picker in time.
var ErrNoFileDialog = errors.New("no file dialog opened")

// ClickForFileDialog clicks the target and waits (at most wait) for the
// file picker it opens, reported by BiDi's input.fileDialogOpened. A
// Firefox that lacks the event answers ErrUnsupportedOnEngine.
func (p *Page) ClickForFileDialog(ctx context.Context, t snapshot.Target, wait time.Duration) (FileDialog, error) {
	opened := make(chan FileDialog, 1)
	remove := p.conn.OnEvent(func(e bidiEvent) {
		if e.Method != "input.fileDialogOpened" {
			return
		}
		var ev struct {
			Context string `json:"context"`
			Element *struct {
				SharedID string `json:"sharedId"`
			} `json:"element"`
			Multiple bool `json:"multiple"`
		}
		if json.Unmarshal(e.Params, &ev) != nil || ev.Context != p.bc || ev.Element == nil {
			return
		}
		select {
		case opened <- FileDialog{SharedID: ev.Element.SharedID, Multiple: ev.Multiple}:
		default:
		}
	})
	defer remove()
	sub, err := p.conn.Subscribe(ctx, []string{"input.fileDialogOpened"}, p.bc)
	if err != nil {
		if bidi.IsCode(err, "invalid argument") || bidi.IsCode(err, "unknown command") {
			return FileDialog{}, fmt.Errorf("%w: this Firefox reports no file dialogs (input.fileDialogOpened)", ErrUnsupportedOnEngine)
		}
		return FileDialog{}, fmt.Errorf("watch file dialogs: %w", err)
	}
	defer func() {
		cctx, cancel := cleanupCtx(ctx)
		defer cancel()
		_ = p.conn.Call(cctx, "session.unsubscribe", map[string]any{"subscriptions": []string{sub}}, nil)
	}()
	if _, err := p.Click(ctx, t, ClickOptions{}); err != nil {
		return FileDialog{}, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case d := <-opened:
		return d, nil
	case <-timer.C:
		return FileDialog{}, ErrNoFileDialog
	case <-ctx.Done():
		return FileDialog{}, ctx.Err()
	}
}

// SetDialogFiles answers the file dialog with the files (absolute paths)
// and returns the base names its input then reports.
func (p *Page) SetDialogFiles(ctx context.Context, d FileDialog, paths []string) ([]string, error) {
	names, err := p.setFilesIn(ctx, p.bc, d.SharedID, paths)
	if err != nil {
		return nil, fmt.Errorf("set files: %w", err)
	}
	return names, nil
}
