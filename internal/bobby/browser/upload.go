package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/bobby/jsobject"
)

// MaxUploadFiles bounds the paths of one UploadFiles call.
const MaxUploadFiles = 50

// Upload is the evidence of UploadFiles. It never holds a local path: the
// names are what the page's file input reports (base names).
type Upload struct {
	// Files is how many files the input holds afterwards.
	Files int      `json:"files"`
	Names []string `json:"names"`
	// Via says how the file input was reached: "input" (the target is
	// one), "label" (a label for it), "descendant" (inside the target),
	// or "fileChooser" (clicking the target opened a file chooser, as
	// buttons that stand in for a hidden input do).
	Via string `json:"via"`
}

// UploadFiles puts local files on a file input: the target itself, the
// input a target label stands for, a file input inside the target, or,
// when the target is none of those, whatever file input clicking it opens
// a chooser for. Hidden inputs work. That click is a probe, so it is made
// only on a target that could stand in for a file input (see
// ChooserProbeJS): one whose click would submit a form, follow a link or
// change a control is refused unclicked, as is more than one path when no
// file input of the page takes several. Each path must be a readable
// regular file; errors name only its base name. The caller checks the
// file:upload capability.
func (p *Page) UploadFiles(ctx context.Context, ref NodeRef, paths []string) (Upload, error) {
	abs, err := UploadPaths(paths)
	if err != nil {
		return Upload{}, fmt.Errorf("upload files: %w", err)
	}

	var up Upload
	var input cdp.BackendNodeID
	var probe ChooserProbe
	err = p.onNode(ctx, ref, func(pctx context.Context, t *chromedp.Target, n node) error {
		res, err := cdp.Call(pctx, t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
			FunctionDeclaration: `function(){
				const isFile = e => e instanceof HTMLInputElement && e.type === "file";
				const mark = (e, via) => { e.__bobbyVia = via; return e; };
				if (isFile(this)) return mark(this, "input");
				if (this instanceof HTMLLabelElement && isFile(this.control)) return mark(this.control, "label");
				const inner = this.querySelector ? this.querySelector("input[type=file]") : null;
				if (inner) return mark(inner, "descendant");
				const label = this.closest ? this.closest("label") : null;
				if (label && isFile(label.control)) return mark(label.control, "label");
				return null;
			}`,
			ObjectID:    n.object,
			ObjectGroup: n.group,
		})
		if err != nil {
			return err
		}
		if res.ExceptionDetails != nil {
			return &EvalError{Text: jsobject.ExceptionText(res.ExceptionDetails)}
		}
		if res.Result == nil || res.Result.ObjectID == "" {
			// No input: what clicking the target for a chooser would do.
			return callOn(pctx, t, n.object, ChooserProbeJS, &probe)
		}
		desc, err := cdp.Call(pctx, t, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
		if err != nil {
			return err
		}
		input = desc.Node.BackendNodeID
		var meta struct {
			Via      string `json:"via"`
			Multiple bool   `json:"multiple"`
		}
		if err := callOn(pctx, t, res.Result.ObjectID, `function(){ return {via: this.__bobbyVia, multiple: this.multiple} }`, &meta); err != nil {
			return err
		}
		if !meta.Multiple && len(abs) > 1 {
			return invalidf("the file input takes one file, got %d", len(abs))
		}
		up.Via = meta.Via
		_, err = cdp.Call(pctx, t, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: abs, BackendNodeID: input})
		return err
	})
	if err != nil {
		return Upload{}, fmt.Errorf("upload files: %w", err)
	}
	if input == 0 {
		if err := probe.Check(ref.String(), len(abs)); err != nil {
			return Upload{}, fmt.Errorf("upload files: %w", err)
		}
		if err := p.chooseFiles(ctx, ref, abs, &up.Names); err != nil {
			return Upload{}, fmt.Errorf("upload files: %w", err)
		}
		up.Via = "fileChooser"
	} else {
		err = p.onNode(ctx, NodeRef{BackendNodeID: input}, func(pctx context.Context, t *chromedp.Target, n node) error {
			return callOn(pctx, t, n.object, fileNamesJS, &up.Names)
		})
		if err != nil {
			return Upload{}, fmt.Errorf("upload files: read back: %w", err)
		}
	}
	if up.Names == nil {
		up.Names = []string{}
	}
	up.Files = len(up.Names)
	return up, nil
}

// UploadPaths checks the paths of an upload, on either engine: 1..
// MaxUploadFiles of them, each a readable regular file. It returns them
// absolute; its errors wrap ErrInvalidArgument and name only a file's base
// name, never its directory.
func UploadPaths(paths []string) ([]string, error) {
	if len(paths) == 0 || len(paths) > MaxUploadFiles {
		return nil, invalidf("give 1..%d paths, got %d", MaxUploadFiles, len(paths))
	}
	abs := make([]string, len(paths))
	for i, path := range paths {
		a, err := filepath.Abs(path)
		if err != nil {
			return nil, invalidf("file %q: bad path", filepath.Base(path))
		}
		fi, err := os.Stat(a)
		switch {
		case err != nil:
			return nil, invalidf("file %q is not readable", filepath.Base(path))
		case !fi.Mode().IsRegular():
			return nil, invalidf("%q is not a regular file", filepath.Base(path))
		}
		f, err := os.Open(a)
		if err != nil {
			return nil, invalidf("file %q is not readable", filepath.Base(path))
		}
		f.Close()
		abs[i] = a
	}
	return abs, nil
}

// ChooserProbe is what ChooserProbeJS reports of a target that is no file
// input, holds none and labels none.
type ChooserProbe struct {
	// Refuse says why clicking the target must not serve as a file
	// chooser probe; empty when it may.
	Refuse string `json:"refuse"`
	// Multiple is whether a file input of the target's document (or
	// shadow root) takes several files.
	Multiple bool `json:"multiple"`
}

// Check is the refusal, before any click, of the target (named in the
// error) as a file chooser probe for n files: an ErrInvalidArgument when
// the click could do something other than open a chooser, or when several
// files are given and no file input of the page takes several; nil when
// the click may be made. Both engines' upload_files refuse by it.
func (c ChooserProbe) Check(target string, n int) error {
	switch {
	case c.Refuse != "":
		return invalidf("%s is no file input, holds none and labels none; %s, so it is not clicked to look for a file chooser: target the file input itself (hidden ones work), its label or a container holding it", target, c.Refuse)
	case n > 1 && !c.Multiple:
		return invalidf("no file input of the page takes several files, got %d", n)
	}
	return nil
}

// ChooserProbeJS decides, for a target that is no file input, whether a
// click may be spent to see if it opens a file chooser, as a button that
// stands in for a hidden input does, and answers a ChooserProbe. Its
// default action must be harmless: no link to another document, no submit
// or reset button of a form, no form control or label of one that the
// click would change, no details summary. Several paths are refused before
// the click when every file input of the target's document (or shadow
// root) takes one; a page with none may make its input on the click, as
// script-driven uploaders do, and the chooser that opens says then how
// many files it takes.
//
// Both engines run this one script with the target as `this`: Chromium
// through Runtime.callFunctionOn in the element's own realm, Firefox (the
// gateway's upload_files) in the walker's sandbox of the top document,
// where an element of a frame is no instance of that realm's classes; so
// it tells elements apart by localName, never by instanceof.
const ChooserProbeJS = `function(){
	const isFile = e => !!e && e.localName === "input" && e.type === "file";
	const a = this.closest ? this.closest("a[href], area[href]") : null;
	if (a) {
		const href = (a.getAttribute("href") || "").trim();
		if (!href.startsWith("#") && !/^javascript:/i.test(href)) return {refuse: "it is a link to " + a.href};
	}
	const b = this.closest ? this.closest("button, input[type=submit], input[type=image], input[type=reset]") : null;
	if (b && b.form && (b.type === "submit" || b.type === "image" || b.type === "reset")) {
		return {refuse: "it is a " + b.type + " button of a form, which the click would " + (b.type === "reset" ? "reset" : "submit")};
	}
	const c = this.closest ? this.closest("input, select, textarea, option") : null;
	if (c && !(c.localName === "input" && ["button", "submit", "image", "reset"].includes(c.type))) {
		return {refuse: "it is a form control, which the click would change"};
	}
	const label = this.closest ? this.closest("label") : null;
	if (label && label.control && !isFile(label.control)) return {refuse: "it labels a form control, which the click would change"};
	if (this.closest && this.closest("summary")) return {refuse: "it is a details summary, which the click would toggle"};
	const inputs = [];
	for (const root of new Set([this.getRootNode(), this.ownerDocument])) {
		if (root && root.querySelectorAll) inputs.push(...root.querySelectorAll("input[type=file]"));
	}
	// None in the page: a script may make one on the click, and the
	// chooser it opens tells how many files it takes.
	if (inputs.length === 0) return {refuse: "", multiple: true};
	return {refuse: "", multiple: inputs.some(i => i.multiple)};
}`

// chooseFiles clicks the target with file-chooser interception on, answers
// the chooser it opens with the files and reads back into names what its
// input holds then.
func (p *Page) chooseFiles(ctx context.Context, ref NodeRef, paths []string, names *[]string) error {
	opened := make(chan *page.EventFileChooserOpened, 1)
	lctx, stop := context.WithCancel(p.ctx)
	defer stop()
	if err := chromedp.Listen(lctx, func(ev any) {
		if e, ok := ev.(*page.EventFileChooserOpened); ok {
			select {
			case opened <- e:
			default:
			}
		}
	}); err != nil {
		return err
	}
	setIntercept := func(on bool) error {
		return p.Do(ctx, func(pctx context.Context) error {
			_, err := cdp.Call(pctx, chromedp.FromContext(pctx).Target, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: on})
			return err
		})
	}
	if err := setIntercept(true); err != nil {
		return fmt.Errorf("intercept file chooser: %w", err)
	}
	defer func() { _ = setIntercept(false) }()
	if _, err := p.Click(ctx, ref, ClickOptions{}); err != nil {
		return err
	}
	timer := time.NewTimer(p.session.rt.opts.ActionTimeout)
	defer timer.Stop()
	var ev *page.EventFileChooserOpened
	select {
	case ev = <-opened:
	case <-timer.C:
		return fmt.Errorf("%s is no file input, holds none, and clicking it opened no file chooser: %w", ref, ErrNotInteractable)
	case <-ctx.Done():
		return ctx.Err()
	}
	if ev.Mode == page.FileChooserOpenedModeSelectSingle && len(paths) > 1 {
		return invalidf("the file input takes one file, got %d", len(paths))
	}
	group := newObjectGroup()
	defer p.release(group)
	err := p.Do(ctx, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		if _, err := cdp.Call(pctx, t, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: paths, BackendNodeID: ev.BackendNodeID}); err != nil {
			return err
		}
		// The chooser's input may be in no document (a script made it for
		// the click): it is read back where it is, not looked up in the
		// page.
		res, err := cdp.Call(pctx, t, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: ev.BackendNodeID, ObjectGroup: group})
		if err != nil || res.Object == nil || res.Object.ObjectID == "" {
			return fmt.Errorf("read back the chooser's input: %w", ErrNodeNotFound)
		}
		return callOn(pctx, t, res.Object.ObjectID, fileNamesJS, names)
	})
	return err
}

// fileNamesJS lists the names of a file input's files.
const fileNamesJS = `function(){ return Array.from(this.files || [], f => f.name) }`
