package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/config"
)

// The engine matrix of upload_files and download_url: the page reports the
// files it received, and the fixture server serves the private file only
// to a request that carries the session's cookie.

var (
	filesOnce sync.Once
	filesSrv  *httptest.Server
	// privateHits counts the requests that reached the cookie-protected
	// files, with or without the cookie.
	privateHits atomic.Int64
)

const (
	filesSessionCookie = "files-sid"
	filesSessionValue  = "opaque-7f3a"
)

// filesURL is a URL of the files fixture server.
func filesURL(path string) string {
	filesOnce.Do(func() {
		mux := http.NewServeMux()
		mux.HandleFunc("/upload.html", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>Upload</title><main><h1>Upload</h1>
<input type="file" id="avatar" style="display:none">
<button type="button" id="pick" onclick="document.getElementById('avatar').click()">Choose avatar</button>
<label id="docs-label">Documents <input type="file" id="docs" multiple></label>
<div id="drop"><span>Drop files</span><input type="file" id="inner" style="opacity:0;position:absolute;left:-9999px"></div>
<p id="status">nothing yet</p>
<iframe src="/upload-frame.html" title="Attachments" width="400" height="120"></iframe></main>
<script>for (const id of ['avatar', 'docs', 'inner']) document.getElementById(id).addEventListener('change', (e) => {
  document.getElementById('status').textContent = id + ': ' + Array.from(e.target.files, (f) => f.name + ' (' + f.size + ')').join(', ');
});</script>`)
		})
		mux.HandleFunc("/upload-frame.html", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>Attachments</title><body>
<label>Attachment <input type="file" id="att"></label><p id="fstatus">no attachment</p>
<script>document.getElementById('att').addEventListener('change', (e) => {
  document.getElementById('fstatus').textContent = 'attached ' + Array.from(e.target.files, (f) => f.name + ' (' + f.size + ')').join(', ');
});</script></body>`)
		})
		mux.HandleFunc("/not-pickers.html", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>Not pickers</title><main><h1>Not pickers</h1>
<form id="f"><input type="file" id="resume" style="display:none">
<label id="remember-label">Remember me <input type="checkbox" id="remember"></label>
<select id="kind"><option>CV</option><option>Letter</option></select>
<button type="reset" id="again">Start over</button></form>
<details id="more"><summary id="more-summary">More options</summary><p>Nothing</p></details>
<script>window.resets = 0; document.getElementById('f').addEventListener('reset', () => window.resets++);</script></main>`)
		})
		// The login page sets the session cookie as a site does: HttpOnly,
		// so no page script could have handed it over.
		mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
			http.SetCookie(w, &http.Cookie{Name: filesSessionCookie, Value: filesSessionValue, Path: "/", HttpOnly: true})
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>Signed in</title><main><h1>Signed in</h1></main>`)
		})
		mux.HandleFunc("/private/", func(w http.ResponseWriter, r *http.Request) {
			privateHits.Add(1)
			c, err := r.Cookie(filesSessionCookie)
			if err != nil || c.Value != filesSessionValue {
				http.Error(w, "sign in first", http.StatusForbidden)
				return
			}
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			w.Header().Set("Content-Type", "application/octet-stream")
			// No Content-Length: an oversized body is caught while streaming.
			w.Header().Set("Transfer-Encoding", "chunked")
			for i := range min(n, 1<<20) {
				fmt.Fprintf(w, "%c", 'a'+byte(i%26))
			}
		})
		filesSrv = httptest.NewServer(mux)
	})
	return filesSrv.URL + path
}

// uploadFixtures writes the local files the upload tests put on the page.
func uploadFixtures(t *testing.T) (dir string, files map[string]string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "private-uploads")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files = map[string]string{}
	for name, body := range map[string]string{"avatar.png": "png!", "cv.pdf": "%PDF-1.4 cv", "notes.txt": "two lines\nof notes\n"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	return dir, files
}

// TestEngineMatrixUploadFiles puts files on a hidden input, a visible
// labelled one, one inside a container and, through the button that stands
// in for the hidden input, the file chooser; the page reports what it
// received. Local paths are never echoed.
func TestEngineMatrixUploadFiles(t *testing.T) {
	shapes := map[string]string{}
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		dir, files := uploadFixtures(t)
		h := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": filesURL("/upload.html")})["workflowHandle"]
		upload := func(args map[string]any, paths ...string) (*mcp.CallToolResult, map[string]any) {
			t.Helper()
			args["workflowHandle"], args["paths"] = h, paths
			res, m := callTool(t, cs, "upload_files", args)
			if strings.Contains(dump(m), dir) || strings.Contains(textOf(res), dir) {
				t.Errorf("upload_files(%v) echoes the local directory:\n%s\n%s", args, dump(m), textOf(res))
			}
			return res, m
		}

		// The hidden input itself, by selector.
		res, m := upload(map[string]any{"selector": "#avatar"}, files["avatar.png"])
		if res.IsError || get(m, "evidence", "upload", "files") != float64(1) || get(m, "evidence", "upload", "via") != "input" ||
			fmt.Sprint(get(m, "evidence", "upload", "names")) != "[avatar.png]" || asStr(get(m, "evidence", "ref")) == "" {
			t.Fatalf("upload to the hidden input = %s", dump(m))
		}
		shapes[engine] = shapeOf(m, "evidence") + " | " + shapeOf(m, "evidence", "upload")
		if text := textOf(res); !strings.Contains(text, "uploaded 1 file via input: avatar.png") {
			t.Errorf("text = %s", text)
		}
		waitText(t, cs, h, "avatar: avatar.png (4)")

		// A visible multiple input through its label, two files.
		_, m = upload(map[string]any{"selector": "#docs-label"}, files["cv.pdf"], files["notes.txt"])
		if get(m, "status") != StatusCompleted || get(m, "evidence", "upload", "via") != "label" || get(m, "evidence", "upload", "files") != float64(2) {
			t.Fatalf("upload through the label = %s", dump(m))
		}
		waitText(t, cs, h, "docs: cv.pdf (11), notes.txt (19)")

		// The same visible input by its snapshot ref.
		text := snapshotText(t, cs, h)
		ref := ""
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, `"Documents"`) && strings.Contains(line, "[ref=") {
				ref = line[strings.Index(line, "[ref=")+5:]
				ref = ref[:strings.Index(ref, "]")]
				break
			}
		}
		if ref == "" {
			t.Fatalf("no Documents control with a ref in the snapshot:\n%s", text)
		}
		_, m = upload(map[string]any{"target": map[string]any{"ref": ref}}, files["notes.txt"])
		if get(m, "status") != StatusCompleted || fmt.Sprint(get(m, "evidence", "upload", "names")) != "[notes.txt]" {
			t.Errorf("upload by ref %s = %s", ref, dump(m))
		}
		waitText(t, cs, h, "docs: notes.txt (19)")

		// An input inside an iframe, by its snapshot ref.
		att := refOf(t, text, "button", "Attachment")
		_, m = upload(map[string]any{"target": map[string]any{"ref": att}}, files["cv.pdf"])
		if get(m, "status") != StatusCompleted || get(m, "evidence", "upload", "via") != "input" {
			t.Errorf("upload into the iframe = %s", dump(m))
		}
		// The frame's own page saw the file (its text is in the snapshot).
		for i := 0; !strings.Contains(snapshotText(t, cs, h), "attached cv.pdf (11)"); i++ {
			if i == 50 {
				t.Fatalf("the iframe never reported the file:\n%s", snapshotText(t, cs, h))
			}
			time.Sleep(100 * time.Millisecond)
		}

		// An input inside a container.
		_, m = upload(map[string]any{"selector": "#drop"}, files["cv.pdf"])
		if get(m, "evidence", "upload", "via") != "descendant" {
			t.Errorf("upload into the container = %s", dump(m))
		}
		waitText(t, cs, h, "inner: cv.pdf (11)")

		// The button that stands in for the hidden input opens a file chooser.
		_, m = upload(map[string]any{"target": map[string]any{"role": "button", "name": "Choose avatar"}}, files["notes.txt"])
		if get(m, "status") != StatusCompleted || get(m, "evidence", "upload", "via") != "fileChooser" {
			t.Fatalf("upload through the file chooser = %s", dump(m))
		}
		waitText(t, cs, h, "avatar: notes.txt (19)")

		// Refusals: two files for a single input, a missing file (named by
		// its base name only), no paths.
		_, m = upload(map[string]any{"selector": "#avatar"}, files["cv.pdf"], files["notes.txt"])
		if errCode(m) != CodeInvalidRequest || !strings.Contains(asStr(get(m, "error", "message")), "takes one file") {
			t.Errorf("two files for one input = %s", dump(m))
		}
		_, m = upload(map[string]any{"selector": "#docs"}, filepath.Join(dir, "gone.txt"))
		if errCode(m) != CodeInvalidRequest || !strings.Contains(asStr(get(m, "error", "message")), "gone.txt") {
			t.Errorf("missing file = %s", dump(m))
		}
		_, m = upload(map[string]any{"selector": "#docs"}, dir)
		if errCode(m) != CodeInvalidRequest {
			t.Errorf("a directory = %s", dump(m))
		}
	})
	if len(shapes) == 2 && shapes[engineChromium] != shapes[engineFirefox] {
		t.Errorf("upload evidence differs:\nchromium %s\nfirefox  %s", shapes[engineChromium], shapes[engineFirefox])
	}
}

// TestEngineMatrixUploadRefusesWhatIsNoFilePicker: a target that is no
// file input, holds none and labels none is clicked to look for a file
// chooser only when the click could do nothing else. A link, a form's
// submit or reset button, another form control or its label and a summary
// are invalidRequest, unclicked, and so are several paths when every file
// input of the page takes one; a button of a page with no file input, which
// may make one on the click, is clicked and its chooser gets the file.
func TestEngineMatrixUploadRefusesWhatIsNoFilePicker(t *testing.T) {
	onBothEngines(t, func(t *testing.T, engine string, cs *mcp.ClientSession) {
		dir, files := uploadFixtures(t)
		start := func(url string) any {
			return mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": url,
				"executionPolicy": map[string]any{"javascriptEvaluation": true}})["workflowHandle"]
		}
		eval := func(h any, expr string) any {
			return get(mustOK(t, cs, "evaluate_javascript", map[string]any{"workflowHandle": h, "expression": expr}), "evidence", "value")
		}
		refused := func(h any, target map[string]any, says string, paths ...string) {
			t.Helper()
			args := map[string]any{"workflowHandle": h, "paths": paths}
			if sel, ok := target["selector"]; ok {
				args["selector"] = sel
			} else {
				args["target"] = target
			}
			m := mustFail(t, cs, "upload_files", args, CodeInvalidRequest)
			if msg := asStr(get(m, "error", "message")); !strings.Contains(msg, says) || strings.Contains(dump(m), dir) {
				t.Errorf("upload_files(%v) = %s, want invalidRequest saying %q and no local path", target, dump(m), says)
			}
		}

		h := start(fixtureURL("upload.html"))
		refused(h, map[string]any{"role": "button", "name": "Send"}, "submit button", files["notes.txt"])
		refused(h, map[string]any{"selector": "#away"}, "link to", files["notes.txt"])
		if n := eval(h, "window.submits"); n != 0.0 {
			t.Errorf("the form was submitted %v times", n)
		}
		if p := eval(h, "location.pathname"); p != "/b/upload.html" {
			t.Errorf("the page left for %v", p)
		}

		h = start(filesURL("/not-pickers.html"))
		refused(h, map[string]any{"selector": "#remember-label"}, "labels a form control", files["notes.txt"])
		refused(h, map[string]any{"selector": "#remember"}, "form control", files["notes.txt"])
		refused(h, map[string]any{"selector": "#kind"}, "form control", files["notes.txt"])
		refused(h, map[string]any{"selector": "#again"}, "reset button", files["notes.txt"])
		refused(h, map[string]any{"selector": "#more-summary"}, "details summary", files["notes.txt"])
		if got := eval(h, `[document.getElementById("remember").checked, window.resets, document.getElementById("more").open].join()`); got != "false,0,false" {
			t.Errorf("checked, resets, open = %v: a refused target was clicked", got)
		}

		h = start(fixtureURL("upload-single.html"))
		refused(h, map[string]any{"selector": "#choose"}, "several files", files["cv.pdf"], files["notes.txt"])
		if n := eval(h, "window.opened"); n != 0.0 {
			t.Errorf("the chooser was opened %v times before the count was checked", n)
		}
		m := mustOK(t, cs, "upload_files", map[string]any{"workflowHandle": h, "selector": "#choose", "paths": []string{files["notes.txt"]}})
		if get(m, "evidence", "upload", "via") != "fileChooser" || get(m, "evidence", "upload", "files") != 1.0 {
			t.Errorf("one path through the chooser = %s", dump(m))
		}

		h = start(fixtureURL("upload-dynamic.html"))
		m = mustOK(t, cs, "upload_files", map[string]any{"workflowHandle": h, "selector": "#pick", "paths": []string{files["notes.txt"]}})
		if get(m, "evidence", "upload", "via") != "fileChooser" || get(m, "evidence", "upload", "files") != 1.0 {
			t.Errorf("the chooser of the input the click made = %s", dump(m))
		}
		waitText(t, cs, h, "notes.txt")
	})
}

// TestEngineMatrixDownloadURL downloads a file the server serves only to
// the signed-in session (its HttpOnly cookie, set by the site), and checks
// the refusals: maxBytes out of range before any request, an oversized
// body, saveAs outside the root, a scheme other than http(s).
func TestEngineMatrixDownloadURL(t *testing.T) {
	shapes := map[string]string{}
	for _, engine := range bothEngines {
		t.Run(engine, func(t *testing.T) {
			root := t.TempDir()
			_, cs := engineGatewayWith(t, engine, func(c *config.Config) {
				c.HTTP.DownloadsRoot = root
				c.HTTP.MaxDownloadBytes = 4096
			})
			start := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default", "url": filesURL("/upload.html")})
			h := start["workflowHandle"]
			private := filesURL("/private/report.bin?n=2048")

			// Before signing in the server refuses: the tool says so and
			// saves nothing.
			m := mustFail(t, cs, "download_url", map[string]any{"workflowHandle": h, "url": private, "saveAs": "report.bin"}, CodeNavigationFailed)
			if !strings.Contains(asStr(get(m, "error", "message")), "403") {
				t.Errorf("download before sign-in = %s", dump(m))
			}
			if _, err := os.Stat(filepath.Join(root, "report.bin")); err == nil {
				t.Error("a refused download left a file")
			}

			mustOK(t, cs, "navigate", map[string]any{"workflowHandle": h, "url": filesURL("/login")})
			res, m := callTool(t, cs, "download_url", map[string]any{"workflowHandle": h, "url": private, "saveAs": "reports/report.bin"})
			if res.IsError {
				t.Fatalf("download after sign-in = %s", dump(m))
			}
			body, err := os.ReadFile(filepath.Join(root, "reports", "report.bin"))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(body)
			if len(body) != 2048 || get(m, "evidence", "download", "savedTo") != "reports/report.bin" ||
				get(m, "evidence", "download", "sha256") != hex.EncodeToString(sum[:]) || get(m, "evidence", "download", "bytes") != float64(2048) ||
				get(m, "evidence", "download", "httpStatus") != float64(200) {
				t.Errorf("download evidence = %s (%d bytes on disk)", dump(m["evidence"]), len(body))
			}
			if strings.Contains(dump(m), filesSessionValue) || strings.Contains(textOf(res), filesSessionValue) {
				t.Errorf("the result echoes the session cookie: %s", dump(m))
			}
			shapes[engine] = shapeOf(m, "evidence") + " | " + shapeOf(m, "evidence", "download")

			// An absolute saveAs directly under the root.
			mustOK(t, cs, "download_url", map[string]any{"workflowHandle": h, "url": private, "saveAs": filepath.Join(root, "abs.bin")})

			// maxBytes out of range: refused naming the limit, before any request.
			hits := privateHits.Load()
			for _, max := range []int{0, 5000} {
				m := mustFail(t, cs, "download_url", map[string]any{"workflowHandle": h, "url": private, "saveAs": "a.bin", "maxBytes": max}, CodeInvalidRequest)
				if msg := asStr(get(m, "error", "message")); !strings.Contains(msg, "4096") {
					t.Errorf("maxBytes %d: message %q does not name the limit", max, msg)
				}
			}
			// saveAs outside the root and other schemes: network policy, before any request.
			for _, saveAs := range []string{"../escape.bin", filepath.Join(t.TempDir(), "x.bin"), filepath.Join(root, "a", "b.bin")} {
				mustFail(t, cs, "download_url", map[string]any{"workflowHandle": h, "url": private, "saveAs": saveAs}, CodeNetworkPolicyDenied)
			}
			mustFail(t, cs, "download_url", map[string]any{"workflowHandle": h, "url": "file:///etc/passwd", "saveAs": "p.txt"}, CodeNetworkPolicyDenied)
			if n := privateHits.Load() - hits; n != 0 {
				t.Errorf("refused downloads reached the server %d times", n)
			}
			// A body over maxBytes is cut off while streaming; nothing is kept.
			mustFail(t, cs, "download_url", map[string]any{"workflowHandle": h, "url": filesURL("/private/big.bin?n=3000"), "saveAs": "big.bin", "maxBytes": 1000}, CodeInvalidRequest)
			if _, err := os.Stat(filepath.Join(root, "big.bin")); err == nil {
				t.Error("an oversized download was kept")
			}
			// Another session has no cookie: the server refuses it.
			other := mustOK(t, cs, "workflow_start", map[string]any{"profile": "default"})
			mustFail(t, cs, "download_url", map[string]any{"workflowHandle": other["workflowHandle"], "url": private, "saveAs": "other.bin"}, CodeNavigationFailed)
		})
	}
	if len(shapes) == 2 && shapes[engineChromium] != shapes[engineFirefox] {
		t.Errorf("download evidence differs:\nchromium %s\nfirefox  %s", shapes[engineChromium], shapes[engineFirefox])
	}
}
