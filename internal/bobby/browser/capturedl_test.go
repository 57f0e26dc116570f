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
	mark := p.DownloadMark()
	if _, err := p.Click(ctx, NodeRef{Selector: "#report"}, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	ds := p.TakeDownloads(ctx, mark, 5*time.Second, 10*time.Second)
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
	if again := p.TakeDownloads(ctx, mark, 0, time.Second); len(again) != 0 {
		t.Errorf("second take = %+v", again)
	}
	// A page that starts nothing gives nothing after the grace.
	if none := p.TakeDownloads(ctx, mark, 200*time.Millisecond, time.Second); len(none) != 0 {
		t.Errorf("no download = %+v", none)
	}
}

func TestCapturedDownloadOverTheBoundIsCancelled(t *testing.T) {
	ctx := context.Background()
	rt := openRuntime(t, Options{DataDir: t.TempDir(), Logger: testLogger(), MaxCaptureBytes: 64 << 10})
	_, p := sessionPage(t, rt, "default")
	open(t, p, "/downloads.html")
	mark := p.DownloadMark()
	if _, err := p.Click(ctx, NodeRef{Selector: "#big"}, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	ds := p.TakeDownloads(ctx, mark, 5*time.Second, 20*time.Second)
	if len(ds) != 1 || ds[0].State != CaptureCanceled || !strings.Contains(ds[0].Error, "larger than 65536") || ds[0].Path != "" {
		t.Fatalf("oversized download = %+v", ds)
	}
}

// A download begun before a command's mark is no effect of that command:
// TakeDownloads drops it rather than reporting it.
func TestEarlierDownloadIsNotTaken(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/downloads.html")
	before := p.DownloadMark()
	if _, err := p.Click(ctx, NodeRef{Selector: "#report"}, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the download began", func() bool { return p.hasDownloadSince(before) })
	later := p.DownloadMark()
	if ds := p.TakeDownloads(ctx, later, 200*time.Millisecond, 5*time.Second); len(ds) != 0 {
		t.Fatalf("a take after the download began = %+v, want none", ds)
	}
}

// Navigate refuses a URL that downloads: the download is cancelled or, if it
// already finished, its file removed, and no later take reports it.
func TestNavigateToADownloadLeavesNoDownload(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/home.html")
	mark := p.DownloadMark()
	out := p.Navigate(ctx, srv.URL+"/attachment?n=75")
	if out.OK() || out.Error == nil || out.Error.Code != NavCodeDownload {
		t.Fatalf("Navigate to a download = %+v (%+v)", out, out.Error)
	}
	if p.hasDownloadSince(mark) {
		t.Error("the refused download is still listed on the page")
	}
	p.session.inst.caps.mu.Lock()
	var files []string
	for _, d := range p.session.inst.caps.byGUID {
		if d.seq > mark && d.Path != "" {
			files = append(files, d.Path)
		}
	}
	p.session.inst.caps.mu.Unlock()
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("the refused download left its file %s", f)
		}
	}
	open(t, p, "/downloads.html")
	if ds := p.TakeDownloads(ctx, mark, 500*time.Millisecond, 5*time.Second); len(ds) != 0 {
		t.Errorf("a take after the refused navigation = %+v, want none", ds)
	}
}

// Following a download link reports the download, which TakeDownloads then
// hands over.
func TestFollowADownloadLink(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/downloads.html")
	mark := p.DownloadMark()
	res, err := p.Follow(ctx, NodeRef{Selector: "#report"})
	if err != nil || res.Outcome != FollowDownload {
		t.Fatalf("Follow(download link) = %+v, %v; want outcome %s", res, err, FollowDownload)
	}
	ds := p.TakeDownloads(ctx, mark, 0, 10*time.Second)
	if len(ds) != 1 || ds[0].State != CaptureCompleted || ds[0].Bytes != 2048 {
		t.Fatalf("downloads after the follow = %+v", ds)
	}
}
