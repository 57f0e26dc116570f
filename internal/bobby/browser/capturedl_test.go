package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"
)

func TestClickedDownloadsAreCaptured(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/downloads.html")
	if _, err := p.Click(ctx, NodeRef{Selector: "#report"}, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	ds := p.TakeDownloads(ctx, 5*time.Second, 10*time.Second)
	if len(ds) != 1 {
		t.Fatalf("captured %d downloads, want 1", len(ds))
	}
	d := ds[0]
	sum := sha256.Sum256([]byte(strings.Repeat("x", 2048)))
	if d.State != CaptureCompleted || d.Bytes != 2048 || d.SHA256 != hex.EncodeToString(sum[:]) || d.SuggestedFilename != "report.bin" {
		t.Errorf("captured download = %+v", d)
	}
	if b, err := os.ReadFile(d.Path); err != nil || len(b) != 2048 {
		t.Errorf("captured file: %d bytes, %v", len(b), err)
	}
	// Taken once: nothing is left for the next call.
	if again := p.TakeDownloads(ctx, 0, time.Second); len(again) != 0 {
		t.Errorf("second take = %+v", again)
	}
	// A page that starts nothing gives nothing after the grace.
	if none := p.TakeDownloads(ctx, 200*time.Millisecond, time.Second); len(none) != 0 {
		t.Errorf("no download = %+v", none)
	}
}

func TestCapturedDownloadOverTheBoundIsCancelled(t *testing.T) {
	ctx := context.Background()
	rt := openRuntime(t, Options{DataDir: t.TempDir(), Logger: testLogger(), MaxCaptureBytes: 64 << 10})
	_, p := sessionPage(t, rt, "default")
	open(t, p, "/downloads.html")
	if _, err := p.Click(ctx, NodeRef{Selector: "#big"}, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	ds := p.TakeDownloads(ctx, 5*time.Second, 20*time.Second)
	if len(ds) != 1 || ds[0].State != CaptureCanceled || !strings.Contains(ds[0].Error, "larger than 65536") || ds[0].Path != "" {
		t.Fatalf("oversized download = %+v", ds)
	}
}
