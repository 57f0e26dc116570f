package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// catPNG is a real 24×16 PNG with a pattern no other test data holds.
func catPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 24, 16))
	for x := range 24 {
		for y := range 16 {
			img.Set(x, y, color.NRGBA{uint8(x * 10), uint8(y * 15), 0x5d, 0xff})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// upload posts one file to /v1/files and returns its workspace path.
func (d *daemon) upload(name string, data []byte) string {
	d.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, err := mw.CreateFormFile("file", name)
	if err != nil {
		d.t.Fatal(err)
	}
	_, _ = w.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, d.url+"/v1/files", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(raw, &out) != nil || len(out.Files) != 1 {
		d.t.Fatalf("upload %s: %d %s", name, resp.StatusCode, raw)
	}
	return out.Files[0].Path
}

// stateFiles is the SQLite database with its WAL, as bytes to grep.
func (d *daemon) stateFiles() []byte {
	var all []byte
	for _, f := range []string{"delta.db", "delta.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(d.dir, "state", f))
		all = append(all, b...)
	}
	return all
}

// lookAgent: a user turn "look <tool> <json args>" calls that tool, and a
// tool result is answered with its text; any other user turn is answered
// at once. Per-turn and images blocks ("<delta:…") are not the user's.
func lookAgent(req modeltest.ChatRequest) modeltest.Reply {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		switch {
		case m.Role == "tool":
			return modeltest.TextReply("seen: " + m.Content)
		case m.Role == "assistant":
			return modeltest.TextReply("nothing to look at")
		case m.Role == "user" && !strings.HasPrefix(m.Content, "<delta:"):
			name, args, ok := strings.Cut(strings.TrimPrefix(m.Content, "look "), " ")
			if !strings.HasPrefix(m.Content, "look ") || !ok {
				return modeltest.TextReply("ok")
			}
			return modeltest.ToolReply(modeltest.ToolCall{ID: "call_1", Name: name, Arguments: args})
		}
	}
	return modeltest.TextReply("empty conversation")
}

// imagesBlocks counts the images messages Delta appended to a request.
func imagesBlocks(r modeltest.ChatRequest) int {
	n := 0
	for _, m := range r.Messages {
		if strings.HasPrefix(m.Content, "<delta:images>") {
			n++
		}
	}
	return n
}

// TestVisionUploadThenReadFile: an uploaded PNG that the model reads with
// read_file reaches the next model request as exactly that image, on every
// wire, when DELTA_VISION_MODELS matches the model; without it the model
// gets the marker only. The database never holds the image bytes.
func TestVisionUploadThenReadFile(t *testing.T) {
	cat := catPNG(t)
	for _, api := range []string{"chat", "anthropic", "responses"} {
		for _, vision := range []bool{true, false} {
			name := api + "/vision"
			if !vision {
				name = api + "/no-vision"
			}
			t.Run(name, func(t *testing.T) {
				fake := startScript(t, lookAgent)
				env := []string{"MODEL_API=" + api}
				if vision {
					env = append(env, "DELTA_VISION_MODELS=^scripted/")
				}
				d := newDaemon(t, fake, env...)
				path := d.upload("cat.png", cat)
				s, resp := d.call("POST", "/v1/responses", `{"input":"look read_file {\"path\":\"`+path+`\"}"}`)
				if s != 200 || resp["status"] != "completed" {
					t.Fatalf("run: %d %v\nlog:\n%s", s, resp, d.logText())
				}
				marker := "[image: " + path + " (image/png, " + itoa(len(cat)) + " bytes)]"
				if out, _ := resp["output_text"].(string); !strings.Contains(out, marker) || !strings.Contains(out, "attached for vision models") {
					t.Fatalf("answer %q lacks the marker %q", out, marker)
				}
				reqs := fake.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d model requests, want 2", len(reqs))
				}
				if n := len(reqs[0].Images()); n != 0 {
					t.Errorf("the first request carried %d images", n)
				}
				got := reqs[1].Images()
				if !vision {
					if len(got) != 0 || imagesBlocks(reqs[1]) != 0 {
						t.Fatalf("without DELTA_VISION_MODELS the model got %d images", len(got))
					}
				} else {
					want := modeltest.ChatImage{MIME: "image/png", Bytes: len(cat), SHA256: hexSum(cat)}
					if len(got) != 1 || got[0] != want {
						t.Fatalf("the model saw %+v, want exactly %+v", got, want)
					}
					if last := reqs[1].LastMessage(); last.Role != "user" || !strings.Contains(last.Content, path) || len(last.Images) != 1 {
						t.Errorf("the image does not ride in the last user message: %+v", last)
					}
				}
				state := d.stateFiles()
				if len(state) == 0 {
					t.Fatal("no database to inspect")
				}
				b64 := base64.StdEncoding.EncodeToString(cat)
				if bytes.Contains(state, []byte(b64[:64])) || bytes.Contains(state, cat[16:]) {
					t.Error("the database holds the image bytes")
				}
				if !bytes.Contains(state, []byte(marker)) {
					t.Error("the database does not hold the marker")
				}
			})
		}
	}
}

// TestVisionProvenanceIsProcessLocal: after a restart the old marker in
// the history is a file reference only, until the file is read again.
func TestVisionProvenanceIsProcessLocal(t *testing.T) {
	fake := startScript(t, lookAgent)
	d := newDaemon(t, fake, "DELTA_VISION_MODELS=^scripted/")
	cat := catPNG(t)
	path := d.upload("cat.png", cat)
	_, first := d.call("POST", "/v1/responses", `{"input":"look read_file {\"path\":\"`+path+`\"}"}`)
	if first["status"] != "completed" || len(fake.Requests()[1].Images()) != 1 {
		t.Fatalf("first run: %v", first)
	}
	d.stop()
	d.start()
	_, next := d.call("POST", "/v1/responses", `{"input":"what did you see?","previous_response_id":"`+first["id"].(string)+`"}`)
	if next["status"] != "completed" {
		t.Fatalf("continuation: %v\nlog:\n%s", next, d.logText())
	}
	after := fake.Requests()[2]
	if n := len(after.Images()); n != 0 {
		t.Fatalf("after a restart %d images were attached from an old marker", n)
	}
	if !strings.Contains(string(after.Raw), "[image: "+path) {
		t.Error("the old marker is gone from the history")
	}
	_, again := d.call("POST", "/v1/responses", `{"input":"look read_file {\"path\":\"`+path+`\"}","previous_response_id":"`+next["id"].(string)+`"}`)
	reqs := fake.Requests()
	if again["status"] != "completed" || len(reqs[len(reqs)-1].Images()) != 1 {
		t.Fatalf("re-reading the file did not attach it again: %v", again)
	}
}

// TestVisionMCPImage: an MCP tool's image is saved in the workspace under
// .delta/media/, the model gets its marker, and the next request carries it.
func TestVisionMCPImage(t *testing.T) {
	srv := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{}))
	defer srv.Close()
	fake := startScript(t, lookAgent)
	servers, _ := json.Marshal([]map[string]any{{"name": "pics", "url": srv.URL}})
	d := newDaemon(t, fake, "DELTA_MCP_SERVERS="+string(servers), "DELTA_VISION_MODELS=^scripted/", "DELTA_PINNED_TOOLS=pics__get_image")
	s, resp := d.call("POST", "/v1/responses", `{"input":"look pics__get_image {}"}`)
	if s != 200 || resp["status"] != "completed" {
		t.Fatalf("run: %d %v\nlog:\n%s", s, resp, d.logText())
	}
	rel := ".delta/media/" + time.Now().UTC().Format("2006-01-02") + "/pics__get_image-call_1-1.png"
	out, _ := resp["output_text"].(string)
	if !strings.Contains(out, "[image: "+rel+" (image/png, "+itoa(len(mcptest.PNG))+" bytes)]") || strings.Contains(out, "not shown to the model") {
		t.Fatalf("answer %q lacks the saved image's marker %s", out, rel)
	}
	if b, err := os.ReadFile(filepath.Join(d.dir, "ws", rel)); err != nil || !bytes.Equal(b, mcptest.PNG) {
		t.Fatalf("%s in the workspace: %v", rel, err)
	}
	reqs := fake.Requests()
	want := modeltest.ChatImage{MIME: "image/png", Bytes: len(mcptest.PNG), SHA256: hexSum(mcptest.PNG)}
	if got := reqs[len(reqs)-1].Images(); len(got) != 1 || got[0] != want {
		t.Fatalf("the model saw %+v, want %+v", got, want)
	}
	if bytes.Contains(d.stateFiles(), []byte(base64.StdEncoding.EncodeToString(mcptest.PNG))) {
		t.Error("the database holds the image as base64")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
