package browser

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
)

func TestNetLogIsBoundedAndBodyFree(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/home.html")
	if _, err := p.Evaluate(ctx, `Promise.all([fetch("/api/items"), fetch("/error"), fetch("/bytes?n=64")]).then(() => 1)`); err != nil {
		t.Fatal(err)
	}
	var log NetLog
	eventually(t, "three fetches logged as done", func() bool {
		var err error
		log, err = p.NetLog(ctx, NetQuery{Types: []string{"fetch"}})
		done := 0
		for _, e := range log.Entries {
			if e.Done {
				done++
			}
		}
		return err == nil && done == 3
	})
	doc, _ := p.NetLog(ctx, NetQuery{Types: []string{"Document"}})
	if len(doc.Entries) != 1 || !strings.HasSuffix(doc.Entries[0].URL, "/home.html") || doc.Entries[0].Status != 200 {
		t.Errorf("document entries = %+v", doc.Entries)
	}
	for _, e := range log.Entries {
		if e.Body != nil {
			t.Errorf("entry %s carries a body without includeBodies", e.URL)
		}
	}
	// failedOnly keeps the 500 (and the browser's own favicon 404), not
	// the successes.
	failed, _ := p.NetLog(ctx, NetQuery{FailedOnly: true})
	sawError := false
	for _, e := range failed.Entries {
		if e.Status < 400 && e.Failed == "" {
			t.Errorf("failedOnly kept a success: %+v", e)
		}
		sawError = sawError || (strings.HasSuffix(e.URL, "/error") && e.Status == 500)
	}
	if !sawError {
		t.Errorf("failedOnly = %+v, want the /error 500", failed.Entries)
	}

	// Bodies on request, clipped.
	withBody, err := p.NetLog(ctx, NetQuery{URLContains: "/api/items", IncludeBodies: true, MaxBodyBytes: 5})
	if err != nil || len(withBody.Entries) != 1 {
		t.Fatalf("includeBodies = %+v, %v", withBody, err)
	}
	if e := withBody.Entries[0]; e.Body == nil || *e.Body != `{"ite` || !strings.Contains(e.BodyNote, "clipped") {
		t.Errorf("body = %v note %q, want the first 5 bytes, clipped", e.Body, e.BodyNote)
	}

	// Since reads only what is new.
	since := log.LastSeq
	if _, err := p.Evaluate(ctx, `fetch("/api/items?again").then(() => 1)`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new fetch", func() bool {
		l, _ := p.NetLog(ctx, NetQuery{Since: since})
		return len(l.Entries) == 1 && strings.Contains(l.Entries[0].URL, "again")
	})

	// The log keeps the newest DefaultNetLogSize entries and counts the rest.
	l := newNetLog(3)
	for i := range 5 {
		l.add(network.RequestID(strconv.Itoa(i)), &NetEntry{RequestID: string(network.RequestID(strconv.Itoa(i)))})
	}
	if len(l.entries) != 3 || l.dropped != 2 || l.entries[0].Seq != 3 || len(l.byID) != 3 {
		t.Errorf("bounded log: %d entries, %d dropped, first seq %d, %d ids", len(l.entries), l.dropped, l.entries[0].Seq, len(l.byID))
	}
	if _, err := p.NetLog(ctx, NetQuery{MaxBodyBytes: MaxNetBodyBytes + 1}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("oversized maxBodyBytes = %v", err)
	}
}

func TestUploadFilesReachesHiddenInputs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := filepath.Join(dir, "secret-folder-name", "avatar.png")
	if err := os.MkdirAll(filepath.Dir(a), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("png!"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(b, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := pageAt(t, "/upload.html")

	tests := []struct {
		name     string
		selector string
		paths    []string
		via      string
		status   string
	}{
		{"button opening a hidden input", "#pick", []string{a}, "fileChooser", "hidden-input: avatar.png (4)"},
		{"hidden input itself", "#hidden-input", []string{b}, "input", "hidden-input: notes.txt (5)"},
		{"label for a multiple input", "#docs-label", []string{a, b}, "label", "docs: avatar.png (4), notes.txt (5)"},
		{"container holding an input", "#dropzone", []string{b}, "descendant", "inner: notes.txt (5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, err := p.UploadFiles(ctx, NodeRef{Selector: tt.selector}, tt.paths)
			if err != nil {
				t.Fatalf("UploadFiles: %v", err)
			}
			if up.Via != tt.via || up.Files != len(tt.paths) {
				t.Errorf("upload = %+v, want via %s and %d files", up, tt.via, len(tt.paths))
			}
			for _, n := range up.Names {
				if strings.Contains(n, dir) || strings.Contains(n, "/") {
					t.Errorf("upload evidence holds a path: %q", n)
				}
			}
			eventually(t, "the page saw the files", func() bool {
				return eval[string](t, p, `document.getElementById("status").textContent`) == tt.status
			})
		})
	}

	bad := []struct {
		name     string
		selector string
		paths    []string
		want     error
	}{
		{"two files on a single input", "#hidden-input", []string{a, b}, ErrInvalidArgument},
		{"missing file", "#docs", []string{filepath.Join(dir, "nope.bin")}, ErrInvalidArgument},
		{"directory", "#docs", []string{dir}, ErrInvalidArgument},
		{"no paths", "#docs", nil, ErrInvalidArgument},
		{"nothing to upload to", "#nothing", []string{a}, ErrNotInteractable},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.UploadFiles(ctx, NodeRef{Selector: tt.selector}, tt.paths)
			if !errors.Is(err, tt.want) {
				t.Fatalf("UploadFiles = %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("error echoes a path: %v", err)
			}
		})
	}
}

// A target that is no file input, holds none and labels none is clicked to
// look for a file chooser only when the click could do nothing else: a
// submit button or a link is refused unclicked, and so are several paths
// when every file input of the page takes one.
func TestUploadFilesRefusesWhatIsNoFilePicker(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	b := filepath.Join(dir, "b.txt")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(t *testing.T, p *Page, selector string, paths []string, says string) {
		t.Helper()
		_, err := p.UploadFiles(ctx, NodeRef{Selector: selector}, paths)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), says) {
			t.Errorf("UploadFiles(%s) = %v, want invalid argument saying %q", selector, err, says)
		}
		if err != nil && strings.Contains(err.Error(), dir) {
			t.Errorf("error echoes a path: %v", err)
		}
	}

	p := pageAt(t, "/upload.html")
	refused(t, p, "#send", []string{a}, "submit button")
	if n := eval[int](t, p, "window.submits"); n != 0 {
		t.Errorf("the form was submitted %d times", n)
	}
	refused(t, p, "#away", []string{a}, "link")
	if u := p.URL(); !strings.HasSuffix(u, "/upload.html") {
		t.Errorf("the page left for %s", u)
	}

	// A page with no file input may make one on the click, as
	// script-driven uploaders do: that button is clicked, and its chooser
	// gets the file.
	d := pageAt(t, "/upload-dynamic.html")
	up, err := d.UploadFiles(ctx, NodeRef{Selector: "#pick"}, []string{a})
	if err != nil || up.Via != "fileChooser" || up.Files != 1 {
		t.Fatalf("UploadFiles(#pick) = %+v, %v; want the chooser of the input the click made", up, err)
	}
	if got := eval[string](t, d, `document.getElementById("got").textContent`); got != "a.txt" {
		t.Errorf("the page's input got %q, want a.txt", got)
	}

	one := pageAt(t, "/upload-single.html")
	refused(t, one, "#choose", []string{a, b}, "several files")
	if n := eval[int](t, one, "window.opened"); n != 0 {
		t.Errorf("the chooser was opened %d times before the count was checked", n)
	}
	// One path goes through the chooser as before.
	up, err = one.UploadFiles(ctx, NodeRef{Selector: "#choose"}, []string{a})
	if err != nil || up.Via != "fileChooser" || up.Files != 1 {
		t.Fatalf("UploadFiles(#choose, one path) = %+v, %v", up, err)
	}
}

func TestPDF(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/home.html")
	pdf, err := p.PDF(ctx, PDFOptions{Landscape: true, PrintBackground: true})
	if err != nil {
		t.Fatalf("PDF: %v", err)
	}
	if !bytes.HasPrefix(pdf.Data, []byte("%PDF-")) || pdf.Bytes != len(pdf.Data) || len(pdf.SHA256) != 64 {
		t.Errorf("pdf = %d bytes, sha %q, starts %q", pdf.Bytes, pdf.SHA256, pdf.Data[:min(8, len(pdf.Data))])
	}
	for _, o := range []PDFOptions{{Scale: 5}, {PageRanges: "one"}, {PaperWidth: -1}} {
		if _, err := p.PDF(ctx, o); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("PDF(%+v) = %v, want ErrInvalidArgument", o, err)
		}
	}
}

func TestDismissObstructions(t *testing.T) {
	ctx := context.Background()
	p := testPage(t)

	open(t, p, "/banner.html")
	// The banner covers the Buy button: a plain click is refused.
	if _, err := p.Click(ctx, NodeRef{Selector: "#buy"}, ClickOptions{}); err != nil {
		t.Logf("click before dismissing: %v", err)
	}
	d, err := p.DismissObstructions(ctx, DismissOptions{})
	if err != nil {
		t.Fatalf("DismissObstructions: %v", err)
	}
	if d.Found != 1 || d.Dismissed != 1 || d.Items[0].Kind != "cookie-banner" || d.Items[0].Control != "Reject all" {
		t.Errorf("dismissal = %+v, want one cookie banner rejected", d)
	}
	if got := eval[string](t, p, `window.consent`); got != "rejected" {
		t.Errorf("consent = %q, want rejected", got)
	}
	if n := eval[int](t, p, `document.querySelectorAll("[data-bobby-obstruction],[data-bobby-dismiss]").length`); n != 0 {
		t.Errorf("%d marker attributes left in the page", n)
	}

	open(t, p, "/banner.html")
	if d, _ := p.DismissObstructions(ctx, DismissOptions{Prefer: "accept"}); d.Dismissed != 1 || eval[string](t, p, `window.consent`) != "accepted" {
		t.Errorf("prefer accept: %+v, consent %q", d, eval[string](t, p, `window.consent`))
	}

	open(t, p, "/banner.html?nocookie&promo")
	d, err = p.DismissObstructions(ctx, DismissOptions{})
	if err != nil || d.Dismissed != 1 || d.Items[0].Kind != "modal" || d.Items[0].Control != "×" {
		t.Errorf("modal dismissal = %+v, %v", d, err)
	}
	if eval[bool](t, p, `document.getElementById("promo").open`) {
		t.Errorf("the promo dialog is still open")
	}

	open(t, p, "/banner.html?nocookie&plain")
	d, err = p.DismissObstructions(ctx, DismissOptions{})
	if err != nil || d.Dismissed != 1 || d.Items[0].Control != "Escape" {
		t.Errorf("buttonless modal = %+v, %v", d, err)
	}

	// A page with only a sticky header has nothing to dismiss.
	open(t, p, "/banner.html?nocookie")
	if d, err := p.DismissObstructions(ctx, DismissOptions{}); err != nil || d.Found != 0 {
		t.Errorf("clean page = %+v, %v", d, err)
	}
	if _, err := p.Click(ctx, NodeRef{Selector: "#buy"}, ClickOptions{}); err != nil {
		t.Errorf("click after dismissing: %v", err)
	}
	if _, err := p.DismissObstructions(ctx, DismissOptions{Prefer: "maybe"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("bad prefer = %v", err)
	}
}

func TestFollow(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	p := pageOf(t, s)
	tests := []struct {
		selector string
		outcome  string
		urlEnd   string
		status   int64
	}{
		{"#next", FollowNavigated, "/home.html", 200},
		{"#frag", FollowSameDocument, "#details", 0},
		{"#pop", FollowPopup, "", 0},
		{"#noop", FollowNone, "/follow.html", 0},
		{"#missing", FollowNavigated, "/no-such-page", 404},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			open(t, p, "/follow.html")
			res, err := p.Follow(ctx, NodeRef{Selector: tt.selector})
			if err != nil {
				t.Fatalf("Follow: %v", err)
			}
			if res.Outcome != tt.outcome || !strings.HasSuffix(res.URL, tt.urlEnd) || res.Status != tt.status {
				t.Errorf("Follow = %+v, want %s at …%s status %d", res, tt.outcome, tt.urlEnd, tt.status)
			}
			if tt.outcome == FollowPopup && (res.Popup == nil || !slices.Contains(s.State().PageIDs, res.Popup.ID)) {
				t.Errorf("popup not registered in the session: %+v", res)
			}
		})
	}

	// A link or download the network policy refuses is refused before any
	// request leaves.
	rt := openRuntime(t, Options{DataDir: t.TempDir(), Logger: testLogger(), DownloadsDir: t.TempDir(), AllowURL: denySecret})
	hits := secretHits.Load()
	ps, pp := sessionPage(t, rt, "default")
	open(t, pp, "/follow.html")
	if _, err := pp.Follow(ctx, NodeRef{Selector: "#secret"}); !errors.Is(err, ErrPolicyDenied) {
		t.Errorf("Follow(#secret) = %v, want ErrPolicyDenied", err)
	}
	if strings.HasSuffix(pp.URL(), "/secret") {
		t.Errorf("the page followed the refused link")
	}
	if _, err := ps.DownloadURL(ctx, srv.URL+"/secret", "s.html", 100); !errors.Is(err, ErrPolicyDenied) {
		t.Errorf("DownloadURL(/secret) = %v, want ErrPolicyDenied", err)
	}
	if _, err := ps.DownloadURL(ctx, srv.URL+"/redirect-secret", "s.html", 100); !errors.Is(err, ErrPolicyDenied) {
		t.Errorf("DownloadURL(redirect to /secret) = %v, want ErrPolicyDenied", err)
	}
	if n := secretHits.Load() - hits; n != 0 {
		t.Errorf("/secret was reached %d times", n)
	}
}

func TestHumanizedInput(t *testing.T) {
	ctx := context.Background()
	for _, humanize := range []bool{false, true} {
		p := pageOf(t, newSessionWith(t, "default", ExecutionPolicy{Humanize: humanize}))
		open(t, p, "/humanize.html")
		if _, err := p.Click(ctx, NodeRef{Selector: "#go"}, ClickOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := p.TypeText(ctx, NodeRef{Selector: "#name"}, "Ada Lovelace", false); err != nil {
			t.Fatal(err)
		}
		moves, keys := eval[int](t, p, `window.moves`), eval[int](t, p, `window.keydowns`)
		if !eval[bool](t, p, `window.clicked`) || eval[string](t, p, `document.getElementById("name").value`) != "Ada Lovelace" {
			t.Fatalf("humanize=%v: the click or the text did not arrive", humanize)
		}
		if humanize && (moves < HumanPathSteps || keys != len("Ada Lovelace")) {
			t.Errorf("humanized: %d pointer moves and %d keydowns, want ≥ %d and %d", moves, keys, HumanPathSteps, len("Ada Lovelace"))
		}
		if !humanize && (moves > 1 || keys != 0) {
			t.Errorf("plain: %d pointer moves and %d keydowns, want one move and inserted text", moves, keys)
		}
	}
	// The path ends exactly on the target and stays near the straight line.
	pts := humanPath(0, 0, 300, 400, HumanPathSteps)
	if last := pts[len(pts)-1]; last != [2]float64{300, 400} || len(pts) != HumanPathSteps {
		t.Errorf("path ends at %v after %d points", last, len(pts))
	}
	for _, pt := range pts {
		if pt[0] < -300 || pt[0] > 600 || pt[1] < -300 || pt[1] > 700 {
			t.Errorf("path point %v strays far from the segment", pt)
		}
	}
}

func TestDownloadSlowLargeFileHitsLimitWhileStreaming(t *testing.T) {
	ctx := context.Background()
	root := shared.opts.DownloadsDir
	s := newSession(t)
	// 256 KiB in 8 KiB chunks, no Content-Length: the limit acts mid-stream.
	_, err := s.DownloadURL(ctx, srv.URL+"/slow-download?n=262144&chunk=8192&ms=5", "archive/big.bin", 64<<10)
	if !errors.Is(err, ErrDownloadTooLarge) {
		t.Fatalf("DownloadURL over the limit = %v, want ErrDownloadTooLarge", err)
	}
	if _, err := os.Stat(filepath.Join(root, "archive", "big.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a partial download was left: %v", err)
	}
	d, err := s.DownloadURL(ctx, srv.URL+"/slow-download?n=262144&chunk=8192&ms=5", "archive/big.bin", 1<<20)
	if err != nil || d.Bytes != 262144 || d.SavedTo != "archive/big.bin" || len(d.SHA256) != 64 {
		t.Fatalf("DownloadURL within the limit = %+v, %v", d, err)
	}
}
