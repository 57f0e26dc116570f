package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDownloadURL(t *testing.T) {
	ctx := context.Background()
	root := shared.opts.DownloadsDir
	p := testPage(t)
	s := p.Session()
	open(t, p, "/setcookie")

	d, err := s.DownloadURL(ctx, srv.URL+"/echo-cookie", "reports/cookie.html", 1<<20)
	if err != nil {
		t.Fatalf("DownloadURL: %v", err)
	}
	body, err := os.ReadFile(filepath.Join(root, "reports", "cookie.html"))
	if err != nil {
		t.Fatalf("downloaded file: %v", err)
	}
	if !strings.Contains(string(body), "[sid=abc123]") {
		t.Errorf("download did not carry the session's cookie: %s", body)
	}
	sum := sha256.Sum256(body)
	if d.SavedTo != "reports/cookie.html" || d.SHA256 != hex.EncodeToString(sum[:]) || d.Bytes != int64(len(body)) || d.HTTPStatus != 200 {
		t.Errorf("download evidence = %+v", d)
	}

	// Another session's download does not carry this session's cookie.
	other := newSession(t)
	if _, err := other.DownloadURL(ctx, srv.URL+"/echo-cookie", "other.html", 1<<20); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "other.html")); !strings.Contains(string(b), "[]") {
		t.Errorf("other session's download sent cookies: %s", b)
	}

	abs := filepath.Join(root, "direct.bin")
	if d, err := s.DownloadURL(ctx, srv.URL+"/bytes?n=1000", abs, 1000); err != nil || d.SavedTo != abs || d.Bytes != 1000 {
		t.Errorf("absolute saveAs at exactly maxBytes = %+v, %v", d, err)
	}

	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		url    string
		saveAs string
		max    int64
		want   error
	}{
		{"content-length over max", srv.URL + "/bytes?n=2000", "big.bin", 1000, ErrDownloadTooLarge},
		{"stream over max", srv.URL + "/stream?n=2000", "big2.bin", 1000, ErrDownloadTooLarge},
		{"dot-dot", srv.URL + "/bytes?n=1", "../escape.bin", 10, ErrPolicyDenied},
		{"absolute elsewhere", srv.URL + "/bytes?n=1", filepath.Join(t.TempDir(), "x.bin"), 10, ErrPolicyDenied},
		{"absolute nested", srv.URL + "/bytes?n=1", filepath.Join(root, "a", "b.bin"), 10, ErrPolicyDenied},
		{"through symlink", srv.URL + "/bytes?n=1", "link/sub/x.bin", 10, ErrPolicyDenied},
		{"zero max", srv.URL + "/bytes?n=1", "z.bin", 0, ErrInvalidArgument},
		{"empty saveAs", srv.URL + "/bytes?n=1", "", 10, ErrInvalidArgument},
		{"file url", "file:///etc/passwd", "p.txt", 10, ErrPolicyDenied},
		{"404", srv.URL + "/missing.bin", "m.bin", 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.DownloadURL(ctx, tt.url, tt.saveAs, tt.max)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("DownloadURL = %v, want %v", err, tt.want)
			}
			if tt.saveAs != "" && !filepath.IsAbs(tt.saveAs) {
				if _, err := os.Stat(filepath.Join(root, tt.saveAs)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("failed download left %s", tt.saveAs)
				}
			}
		})
	}
	if m, _ := filepath.Glob(filepath.Join(outside, "*")); len(m) != 0 {
		t.Errorf("download wrote through the symlink: %v", m)
	}
	// No partial files are left behind.
	m, _ := filepath.Glob(filepath.Join(root, ".download-*"))
	if len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
