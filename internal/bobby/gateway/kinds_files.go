package gateway

import (
	"context"
	"errors"
	"mime"
	"os"
	"path/filepath"
	"time"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/policy"
)

// maxDownloadArtifact bounds the downloads also kept as artifact://
// resources (they live in memory with the screenshots).
const maxDownloadArtifact = 16 << 20

type uploadArgs struct {
	targetArgs
	Paths []string `json:"paths"`
}

func runUploadFiles(ctx context.Context, x *execCtx, in uploadArgs) (map[string]any, map[string]any, error) {
	return x.ep.uploadFiles(ctx, x, in)
}

type downloadArgs struct {
	URL      string `json:"url"`
	SaveAs   string `json:"saveAs"`
	MaxBytes *int64 `json:"maxBytes"`
}

func runDownloadURL(ctx context.Context, x *execCtx, in downloadArgs) (map[string]any, map[string]any, error) {
	limit := x.g.cfg.HTTP.MaxDownloadBytes
	max := limit
	if in.MaxBytes != nil {
		max = *in.MaxBytes
	}
	// Checked here, before any network access, so an out-of-range value
	// names the limit rather than failing as a schema violation.
	if max < 1 || max > limit {
		return nil, nil, errorf(CodeInvalidRequest, "maxBytes must be 1..%d ([http].max_download_bytes)", limit)
	}
	root := x.g.cfg.HTTP.DownloadsRoot
	if root == "" {
		return nil, nil, errorf(CodeInvalidRequest, "downloads are off: set [http].downloads_root")
	}
	budget := time.Until(x.deadline).Round(10 * time.Millisecond)
	d, err := x.es.download(ctx, root, in.URL, in.SaveAs, max)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			// download_url changes no page: cut off, it is plainly a
			// timeout, and the partial file is gone.
			return map[string]any{"download": d}, nil, errorf(CodeTimeout, "the download did not finish within %s; nothing was saved", budget)
		case errorsIs(err, browser.ErrDownloadTooLarge):
			return map[string]any{"download": d}, nil, errorf(CodeInvalidRequest, "the file is larger than maxBytes %d; nothing was saved", max)
		case errorsIs(err, browser.ErrPolicyDenied):
			return nil, nil, errorf(CodeNetworkPolicyDenied, "%v", err)
		case errorsIs(err, browser.ErrInvalidArgument):
			return nil, nil, err
		}
		return map[string]any{"download": d}, nil, errorf(CodeNavigationFailed, "%v", err)
	}
	ev := map[string]any{"download": d}
	if x.principal.Capabilities.Has(policy.ArtifactCapture) && d.Bytes <= maxDownloadArtifact {
		data, rerr := os.ReadFile(d.Path)
		if rerr == nil {
			typ := d.ContentType
			if typ == "" {
				typ = mime.TypeByExtension(filepath.Ext(d.Path))
			}
			if typ == "" {
				typ = "application/octet-stream"
			}
			a := x.g.artifacts.put(x.principal.Name, typ, data, d.SHA256, x.g.now())
			ev["artifact"] = a.evidence()
		}
	}
	return ev, nil, nil
}

type pdfArgs struct {
	browser.PDFOptions
}

func runPDF(ctx context.Context, x *execCtx, in pdfArgs) (map[string]any, map[string]any, error) {
	doc, err := x.page.PDF(ctx, in.PDFOptions)
	if err != nil {
		return nil, nil, err
	}
	a := x.g.artifacts.put(x.principal.Name, "application/pdf", doc.Data, doc.SHA256, x.g.now())
	return map[string]any{"artifact": a.evidence()}, nil, nil
}

type popupArgs struct {
	targetArgs
	Modifiers      []string `json:"modifiers"`
	AutoCheckpoint bool     `json:"autoCheckpoint"`
	CommandID      string   `json:"commandId"`
	AttemptID      string   `json:"attemptId"`
}

// popupCheckpoint reads an autoCheckpoint popup click's pinned ids; the
// pipeline records the outcome under them (minting the commandId when
// absent) in bobby's state directory, so a retry with the same ids replays
// the recorded outcome instead of opening a second page, after a restart
// too.
func popupCheckpoint(input map[string]any) (commandID, attemptID string, on bool) {
	on, _ = input["autoCheckpoint"].(bool)
	commandID, _ = input["commandId"].(string)
	attemptID, _ = input["attemptId"].(string)
	return commandID, attemptID, on
}

func runClickAndWaitForPopup(ctx context.Context, x *execCtx, in popupArgs) (map[string]any, map[string]any, error) {
	if !in.AutoCheckpoint && (in.CommandID != "" || in.AttemptID != "") {
		return nil, nil, errorf(CodeInvalidRequest, "commandId and attemptId pin a checkpoint: pass autoCheckpoint:true with them")
	}
	ref, refName, err := x.requireTarget(ctx, in.targetArgs)
	if err != nil {
		return nil, nil, err
	}
	var click browser.ClickResult
	popup, err := x.sess.WaitPopup(ctx, x.page, func() error {
		var err error
		click, err = x.page.Click(ctx, ref, browser.ClickOptions{Modifiers: in.Modifiers})
		return err
	})
	ev := map[string]any{"ref": refName}
	if click.Dialog != nil {
		ev["dialog"] = click.Dialog
	}
	if err != nil {
		if errorsIs(err, browser.ErrTimeout) {
			return ev, nil, errorf(CodeNotVerified, "the click opened no page within the action timeout; check the target (page_list shows the pages)")
		}
		return ev, nil, err
	}
	// Report the popup once its first document is under way.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, _ = popup.WaitFor(wctx, browser.Condition{Kind: browser.WaitDocument, ReadyState: "interactive", TimeoutMs: 10000})
	cancel()
	ev["popup"] = map[string]any{"pageId": popup.ID, "openerId": popup.OpenerID, "page": pageState(popup)}
	ev["pageIds"] = x.sess.State().PageIDs
	// With autoCheckpoint the pipeline persists the outcome and adds
	// evidence.checkpoint (see recordCheckpoint).
	return ev, nil, nil
}

// capturedDownload is the evidence of a download a click started.
type capturedDownload struct {
	browser.CapturedDownload
	Artifact map[string]any `json:"artifact,omitempty"`
}

// takeDownloads hands over the downloads the page started after the mark
// since (browser.Page.DownloadMark, taken before the action), waiting for
// those under way (within the command's deadline) and up to grace for one
// to begin; a completed one becomes an artifact:// resource for a
// principal with artifact:capture.
func (x *execCtx) takeDownloads(ctx context.Context, since uint64, grace time.Duration) []capturedDownload {
	ds := x.page.TakeDownloads(ctx, since, grace, time.Until(x.deadline))
	out := make([]capturedDownload, 0, len(ds))
	for _, d := range ds {
		c := capturedDownload{CapturedDownload: d}
		if d.State == browser.CaptureCompleted && d.Bytes <= maxDownloadArtifact && x.principal.Capabilities.Has(policy.ArtifactCapture) {
			if data, err := os.ReadFile(d.Path); err == nil {
				typ := mime.TypeByExtension(filepath.Ext(d.SuggestedFilename))
				if typ == "" {
					typ = "application/octet-stream"
				}
				a := x.g.artifacts.put(x.principal.Name, typ, data, d.SHA256, x.g.now())
				c.Artifact = a.evidence()
			}
		}
		out = append(out, c)
	}
	return out
}
