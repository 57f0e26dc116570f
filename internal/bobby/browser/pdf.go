package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// MaxPDFBytes bounds a printed PDF; a larger one is refused rather than
// held in memory.
const MaxPDFBytes = 50 << 20

// PDFOptions tune PDF. Zero fields take Chromium's defaults (US Letter,
// portrait, scale 1, no backgrounds).
type PDFOptions struct {
	Landscape       bool    `json:"landscape,omitempty"`
	PrintBackground bool    `json:"printBackground,omitempty"`
	Scale           float64 `json:"scale,omitempty"`      // 0.1..2
	PaperWidth      float64 `json:"paperWidth,omitempty"` // inches
	PaperHeight     float64 `json:"paperHeight,omitempty"`
	// PageRanges such as "1-5, 8".
	PageRanges string `json:"pageRanges,omitempty"`
}

// PDF is a printed page with its integrity evidence.
type PDF struct {
	Data   []byte `json:"-"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

var pageRanges = regexp.MustCompile(`^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$`)

// PDF prints the page to PDF (headless Chromium only).
func (p *Page) PDF(ctx context.Context, o PDFOptions) (PDF, error) {
	switch {
	case o.Scale != 0 && (o.Scale < 0.1 || o.Scale > 2):
		return PDF{}, fmt.Errorf("pdf: %w", invalidf("scale %g: want 0.1..2", o.Scale))
	case o.PaperWidth < 0 || o.PaperHeight < 0 || o.PaperWidth > 100 || o.PaperHeight > 100:
		return PDF{}, fmt.Errorf("pdf: %w", invalidf("paper size: want 0..100 inches"))
	case o.PageRanges != "" && !pageRanges.MatchString(o.PageRanges):
		return PDF{}, fmt.Errorf("pdf: %w", invalidf("pageRanges %q: want a list like 1-5, 8", o.PageRanges))
	}
	var out PDF
	err := p.Do(ctx, func(pctx context.Context) error {
		res, err := cdp.Call(pctx, chromedp.FromContext(pctx).Target, page.PrintToPDF, page.PrintToPDFParams{
			Landscape: &o.Landscape, PrintBackground: &o.PrintBackground, Scale: o.Scale,
			PaperWidth: o.PaperWidth, PaperHeight: o.PaperHeight, PageRanges: o.PageRanges,
			TransferMode: page.PrintToPDFTransferModeReturnAsBase64,
		})
		if err != nil {
			if isProtocolError(err) {
				return invalidf("the browser could not print the page: %v", err)
			}
			return err
		}
		out.Data = res.Data
		return nil
	})
	if err != nil {
		return PDF{}, fmt.Errorf("pdf: %w", err)
	}
	if len(out.Data) > MaxPDFBytes {
		return PDF{}, fmt.Errorf("pdf: %w", invalidf("the PDF has %d bytes, more than %d; print fewer pageRanges", len(out.Data), MaxPDFBytes))
	}
	sum := sha256.Sum256(out.Data)
	out.SHA256 = hex.EncodeToString(sum[:])
	out.Bytes = len(out.Data)
	return out, nil
}
