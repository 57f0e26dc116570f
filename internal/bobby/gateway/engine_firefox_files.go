package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/firefox"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// The Firefox side of upload_files and download_url: files go on the input
// through BiDi's input.setFiles, and a download is the same Go fetch as
// Chromium's (browser.Fetch) with the cookies of the session's user
// context.

// ffFileDialogWait bounds the wait for the file picker a click opens, as
// Chromium's action timeout does.
const ffFileDialogWait = browser.DefaultActionTimeout

// uploadFiles puts local files on the target's file input: the target
// itself, the input its label stands for, one inside it, or, when it is
// none of those, the input whose file picker clicking it opens. That click
// is refused unmade, as on Chromium, when it could do anything else (a
// link, a form's submit or reset button, another control or its label, a
// summary) or when several files are given and no file input of the page
// takes several. Hidden inputs work. The evidence is Chromium's: the ref
// and what the input reports (base names), never a local path.
func (p *firefoxPage) uploadFiles(ctx context.Context, x *execCtx, in uploadArgs) (map[string]any, map[string]any, error) {
	t, err := p.target(in.targetArgs)
	if err != nil {
		return nil, nil, err
	}
	abs, err := browser.UploadPaths(in.Paths)
	if err != nil {
		return nil, nil, fmt.Errorf("upload files: %w", err)
	}
	ref, input, err := p.p.FindFileInput(ctx, t)
	ev := map[string]any{}
	if ref != "" {
		ev["ref"] = ref
	}
	one := func(multiple bool) error {
		if !multiple && len(abs) > 1 {
			return fmt.Errorf("upload files: %w: the file input takes one file, got %d", browser.ErrInvalidArgument, len(abs))
		}
		return nil
	}
	up := browser.Upload{Via: input.Via}
	switch {
	case err == nil:
		if err := one(input.Multiple); err != nil {
			return ev, nil, err
		}
		if up.Names, err = p.p.SetInputFiles(ctx, input.Ref, abs); err != nil {
			return ev, nil, ffErr(fmt.Errorf("upload files: %w", err))
		}
	case errors.Is(err, firefox.ErrNoFileInput):
		// The click is a probe, made only when it can do nothing but open
		// a file chooser: Chromium's check, by the same script.
		var probe browser.ChooserProbe
		if err := p.p.CallOnRef(ctx, ref, browser.ChooserProbeJS, &probe); err != nil {
			return ev, nil, unsent(ffErr(fmt.Errorf("upload files: %w", err)))
		}
		if err := probe.Check(ref, len(abs)); err != nil {
			return ev, nil, fmt.Errorf("upload files: %w", err)
		}
		wait := min(ffFileDialogWait, time.Until(x.deadline))
		d, err := p.p.ClickForFileDialog(ctx, snapshot.Target{Ref: ref}, wait)
		switch {
		case errors.Is(err, firefox.ErrNoFileDialog):
			return ev, nil, fmt.Errorf("upload files: %w: %s is no file input, holds none, and clicking it opened no file chooser", browser.ErrNotInteractable, ref)
		case errors.Is(err, firefox.ErrUnsupportedOnEngine):
			return ev, nil, errorf(CodeUnsupportedOnEngine, "upload_files through a button that opens a file chooser runs on chromium, not on firefox (this runtime's [browser] engine): %v; "+
				"target the file input itself (a selector such as input[type=file] reaches a hidden one), its label or a container holding it, or set [browser] engine = \"chromium\"", err)
		case err != nil:
			return ev, nil, ffErr(fmt.Errorf("upload files: %w", err))
		}
		if err := one(d.Multiple); err != nil {
			return ev, nil, err
		}
		if up.Names, err = p.p.SetDialogFiles(ctx, d, abs); err != nil {
			return ev, nil, ffErr(fmt.Errorf("upload files: %w", err))
		}
		up.Via = "fileChooser"
	default:
		// FindFileInput only reads the page: nothing was sent to it.
		return ev, nil, unsent(ffErr(err))
	}
	up.Files = len(up.Names)
	ev["upload"] = up
	return ev, nil, nil
}

// download reads the user context's cookies over BiDi (storage.getCookies
// with its partition) and fetches in Go under the same URL policy as
// navigate on Firefox.
func (s *firefoxSession) download(ctx context.Context, root, rawURL, saveAs string, maxBytes int64) (browser.Download, error) {
	return browser.Fetch(ctx, browser.DownloadRequest{
		Root: root, URL: rawURL, SaveAs: saveAs, MaxBytes: maxBytes,
		Check: func(raw string) (*url.URL, error) { return browser.NavigationPolicy{}.Check(raw) },
		Jar: func(ctx context.Context) (string, []browser.Cookie, error) {
			if !s.s.Alive() {
				return "", nil, browser.ErrSessionClosed
			}
			raw, err := s.s.Cookies(ctx)
			if err != nil {
				return "", nil, fmt.Errorf("read cookies: %w", ffErr(err))
			}
			cs := make([]browser.Cookie, len(raw))
			for i, c := range raw {
				cs[i] = toCookie(c)
			}
			return s.s.UserAgent(), cs, nil
		},
	})
}
