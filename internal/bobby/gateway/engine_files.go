package gateway

import (
	"context"

	"github.com/deltaharness/delta/internal/bobby/browser"
)

// The Chromium side of upload_files and download_url (the Firefox side is
// engine_firefox_files.go).

// uploadFiles resolves the target through the accessibility tree and puts
// the files on its input, or on the one a file chooser it opens stands
// for.
func (p chromiumPage) uploadFiles(ctx context.Context, x *execCtx, in uploadArgs) (map[string]any, map[string]any, error) {
	ref, refName, err := x.requireTarget(ctx, in.targetArgs)
	if err != nil {
		return nil, nil, err
	}
	up, err := p.UploadFiles(ctx, ref, in.Paths)
	if err != nil {
		return map[string]any{"ref": refName}, nil, err
	}
	// The evidence holds what the page's input reports (base names), never
	// the local paths.
	return map[string]any{"ref": refName, "upload": up}, nil, nil
}

// download reads the browser context's cookies over CDP and fetches in Go
// (browser.Fetch).
func (s chromiumSession) download(ctx context.Context, root, url, saveAs string, maxBytes int64) (browser.Download, error) {
	return s.DownloadTo(ctx, root, url, saveAs, maxBytes)
}
