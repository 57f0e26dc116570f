package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/api"
)

type upFile struct {
	name string
	size int64
	data []byte // nil = size bytes of a repeating pattern
}

var day = time.Date(2026, 3, 7, 23, 30, 0, 0, time.UTC)

func uploadServer(t *testing.T, u api.Uploads) (*httptest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	u.Dir = dir
	u.Now = func() time.Time { return day }
	srv := httptest.NewServer(api.New(api.Options{Uploads: &u, ControlToken: "ctl", MaxBodyBytes: 1024}))
	t.Cleanup(srv.Close)
	return srv, dir
}

// post streams a multipart body through a pipe, so the client holds no
// file in memory either.
func post(t *testing.T, url string, files []upFile, extra func(*multipart.Writer)) (int, map[string]any) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		if extra != nil {
			extra(mw)
		}
		for _, f := range files {
			h := textproto.MIMEHeader{}
			// Quoted by hand: %q would escape a control character away.
			h.Set("Content-Disposition", `form-data; name="file"; filename="`+strings.ReplaceAll(f.name, `\`, `\\`)+`"`)
			h.Set("Content-Type", "application/octet-stream")
			w, err := mw.CreatePart(h)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			var r io.Reader = bytes.NewReader(f.data)
			if f.data == nil {
				r = io.LimitReader(pattern{}, f.size)
			}
			if _, err := io.Copy(w, r); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/files", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer ctl")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("decode answer (status %d): %v", resp.StatusCode, err)
	}
	pr.CloseWithError(io.ErrClosedPipe) // the server may stop reading early
	return resp.StatusCode, body
}

type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	return len(p), nil
}

// visible lists the files a user would see in the workspace (not .delta).
func visible(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".delta" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func tmpLeft(t *testing.T, dir string) int {
	entries, _ := os.ReadDir(filepath.Join(dir, ".delta", "tmp"))
	return len(entries)
}

func TestUploadStoresFilesUnderInboxWithFilesMD(t *testing.T) {
	srv, dir := uploadServer(t, api.Uploads{})
	code, body := post(t, srv.URL, []upFile{
		{name: "brief.docx", data: []byte("hello")},
		{name: `C:\Users\me\chart.png`, data: []byte("png")},
		{name: "brief.docx", data: []byte("again")},
		{name: "../../etc/passwd", data: []byte("x")},
	}, nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, body)
	}
	got := body["files"].([]any)
	want := []struct {
		path string
		data string
	}{
		{"inbox/2026-03-07/brief.docx", "hello"},
		{"inbox/2026-03-07/chart.png", "png"},
		{"inbox/2026-03-07/brief-2.docx", "again"},
		{"inbox/2026-03-07/passwd", "x"},
	}
	if len(got) != len(want) {
		t.Fatalf("files = %v", got)
	}
	for i, w := range want {
		f := got[i].(map[string]any)
		sum := sha256.Sum256([]byte(w.data))
		if f["path"] != w.path || f["bytes"] != float64(len(w.data)) || f["sha256"] != hex.EncodeToString(sum[:]) {
			t.Errorf("file %d = %v, want %s", i, f, w.path)
		}
		b, err := os.ReadFile(filepath.Join(dir, w.path))
		if err != nil || string(b) != w.data {
			t.Errorf("%s on disk = %q, %v", w.path, b, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "FILES.md"))
	if err != nil || !strings.Contains(string(md), "inbox/YYYY-MM-DD/") {
		t.Fatalf("FILES.md = %q, %v", md, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "FILES.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, srv.URL, []upFile{{name: "brief.docx", data: []byte("3")}}, nil); code != 200 ||
		body["files"].([]any)[0].(map[string]any)["path"] != "inbox/2026-03-07/brief-3.docx" {
		t.Fatalf("second upload: %d %v", code, body)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "FILES.md")); string(md) != "mine" {
		t.Errorf("a later upload rewrote FILES.md: %q", md)
	}
	if n := tmpLeft(t, dir); n != 0 {
		t.Errorf("%d temp files left", n)
	}
}

// TestUploadRefusesTheWholeBatch: one bad file anywhere writes nothing.
func TestUploadRefusesTheWholeBatch(t *testing.T) {
	srv, dir := uploadServer(t, api.Uploads{MaxFiles: 3, MaxFileSize: 1000, MaxTotal: 2500})
	ok := upFile{name: "ok.txt", data: []byte("fine")}
	cases := []struct {
		name   string
		files  []upFile
		extra  func(*multipart.Writer)
		status int
		want   string
	}{
		{"leading dot", []upFile{ok, {name: ".bashrc", data: []byte("x")}}, nil, 400, "starts with a dot"},
		{"dot dot", []upFile{ok, {name: "..", data: []byte("x")}}, nil, 400, "starts with a dot"},
		{"trailing slash", []upFile{ok, {name: "dir/", data: []byte("x")}}, nil, 400, "no base name"},
		{"control char", []upFile{ok, {name: "a\tb.txt", data: []byte("x")}}, nil, 400, "control character"},
		{"long name", []upFile{ok, {name: strings.Repeat("n", 256), data: []byte("x")}}, nil, 400, "256 bytes"},
		{"no filename", []upFile{ok, {name: "", data: []byte("x")}}, nil, 400, "no filename"},
		{"other field", []upFile{ok}, func(mw *multipart.Writer) { _ = mw.WriteField("note", "hi") }, 400, `unexpected form field "note"`},
		{"too many files", []upFile{ok, ok, ok, ok}, nil, 413, "at most 3"},
		{"file too large", []upFile{ok, {name: "big.bin", size: 1001}}, nil, 413, "per file"},
		{"batch too large", []upFile{{name: "a", size: 1000}, {name: "b", size: 1000}, {name: "c", size: 501}}, nil, 413, "in all"},
		{"no files", nil, nil, 400, "no files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv.URL, tc.files, tc.extra)
			e, _ := body["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if code != tc.status || !strings.Contains(msg, tc.want) {
				t.Fatalf("got %d %q, want %d containing %q", code, msg, tc.status, tc.want)
			}
			if v := visible(t, dir); len(v) != 0 {
				t.Fatalf("a refused batch wrote %v", v)
			}
			if n := tmpLeft(t, dir); n != 0 {
				t.Fatalf("%d temp files left", n)
			}
		})
	}
	// Exactly at every limit is accepted.
	if code, body := post(t, srv.URL, []upFile{{name: "a", size: 1000}, {name: "b", size: 1000}, {name: "c", size: 500}}, nil); code != 200 {
		t.Fatalf("at the limits: %d %v", code, body)
	}
}

func TestUploadRequestErrors(t *testing.T) {
	srv, dir := uploadServer(t, api.Uploads{})
	cases := []struct {
		name, ctype, auth, body string
		status                  int
	}{
		{"no bearer", "multipart/form-data; boundary=x", "", "", 401},
		{"json body", "application/json", "Bearer ctl", "{}", 400},
		{"no boundary", "multipart/form-data", "Bearer ctl", "", 400},
		{"truncated", "multipart/form-data; boundary=xx", "Bearer ctl", "--xx\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc", 400},
		{"garbage", "multipart/form-data; boundary=xx", "Bearer ctl", "not multipart at all", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/files", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.ctype)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			status, _, raw := roundTrip(t, req)
			var body struct {
				Error struct{ Message string } `json:"error"`
			}
			if err := json.Unmarshal(raw, &body); err != nil || body.Error.Message == "" {
				t.Fatalf("not an error envelope: %v", err)
			}
			if status != tc.status {
				t.Fatalf("status %d (%s), want %d", status, body.Error.Message, tc.status)
			}
			if v := visible(t, dir); len(v) != 0 {
				t.Fatalf("wrote %v", v)
			}
		})
	}
}

// TestUploadStreams: a 24 MB batch (past the 1 KiB global body cap) is
// accepted and the process allocates far less than the bytes it stored.
func TestUploadStreams(t *testing.T) {
	srv, dir := uploadServer(t, api.Uploads{})
	const size = 12 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, body := post(t, srv.URL, []upFile{{name: "a.bin", size: size}, {name: "b.bin", size: size}}, nil)
	runtime.ReadMemStats(&after)
	if code != 200 {
		t.Fatalf("status %d: %v", code, body)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("allocated %d bytes to store %d: not streaming", alloc, 2*size)
	}
	fi, err := os.Stat(filepath.Join(dir, "inbox/2026-03-07/b.bin"))
	if err != nil || fi.Size() != size {
		t.Fatalf("stored file: %v %v", fi, err)
	}
}

// BenchmarkUpload100MB reports the process's peak RSS growth while a
// 100 MB batch (four 25 MB files) streams to disk.
func BenchmarkUpload100MB(b *testing.B) {
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		srv := httptest.NewServer(api.New(api.Options{Uploads: &api.Uploads{Dir: dir}}))
		hwm0 := peakRSS()
		b.StartTimer()
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			for i := range 4 {
				w, _ := mw.CreateFormFile("file", fmt.Sprintf("f%d.bin", i))
				_, _ = io.Copy(w, io.LimitReader(pattern{}, 25<<20))
			}
			pw.CloseWithError(mw.Close())
		}()
		resp, err := http.Post(srv.URL+"/v1/files", mw.FormDataContentType(), pr)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("upload: %v %v", err, resp)
		}
		resp.Body.Close()
		b.StopTimer()
		b.ReportMetric(float64(peakRSS()-hwm0)/(1<<20), "MB-peak-RSS-growth")
		srv.Close()
	}
	b.SetBytes(100 << 20)
}

// peakRSS is VmHWM from /proc/self/status in bytes (0 off Linux).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb); err != nil {
				return 0 // unreadable, as when /proc is missing
			}
			return kb << 10
		}
	}
	return 0
}
