package api_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/vision"
	"github.com/deltaharness/delta/internal/workspace"
)

// TestUploadRecordsImages: every stored file of an accepted batch is
// handed to Stored, so the daemon's vision registry records the images
// (by their bytes, not their names); a refused batch hands over nothing.
func TestUploadRecordsImages(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg := vision.New(ws, vision.Options{})
	var (
		mu     sync.Mutex
		stored []string
	)
	u := api.Uploads{Dir: dir, MaxFileSize: 1000, Now: func() time.Time { return day }, Stored: func(rel string) {
		mu.Lock()
		stored = append(stored, rel)
		mu.Unlock()
		_, _ = reg.Verify(rel)
	}}
	srv := httptest.NewServer(api.New(api.Options{Uploads: &u, ControlToken: "ctl", MaxBodyBytes: 1024}))
	t.Cleanup(srv.Close)

	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01")
	jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	code, body := post(t, srv.URL, []upFile{
		{name: "chart.png", data: png},
		{name: "scan.dat", data: jpeg},
		{name: "notes.png", data: []byte("not an image")},
	}, nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, body)
	}
	want := []string{"inbox/2026-03-07/chart.png", "inbox/2026-03-07/scan.dat", "inbox/2026-03-07/notes.png"}
	if !slices.Equal(stored, want) {
		t.Fatalf("Stored got %v, want %v", stored, want)
	}
	for path, mime := range map[string]string{want[0]: "image/png", want[1]: "image/jpeg"} {
		if info, ok := reg.Lookup(path); !ok || info.MIME != mime {
			t.Errorf("%s recorded as %+v (%v), want %s", path, info, ok, mime)
		}
	}
	if _, ok := reg.Lookup(want[2]); ok {
		t.Error("a text file named .png was recorded as an image")
	}

	stored = nil
	if code, _ := post(t, srv.URL, []upFile{{name: "ok.png", data: png}, {name: "big.png", size: 2000}}, nil); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized batch: status %d", code)
	}
	if len(stored) != 0 {
		t.Errorf("a refused batch reached Stored: %v", stored)
	}
}
