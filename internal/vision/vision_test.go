package vision_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/vision"
	"github.com/deltaharness/delta/internal/workspace"
)

const (
	pngMagic  = "\x89PNG\r\n\x1a\n"
	jpegMagic = "\xff\xd8\xff\xe0"
)

// realPNG encodes a w×h image whose pixels depend on seed, so two calls
// with different seeds give different bytes.
func realPNG(t testing.TB, w, h int, seed uint8) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{uint8(x) ^ seed, uint8(y), seed, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sized is bytes of an exact length that sniff as a PNG.
func sized(n int, fill byte) []byte {
	b := bytes.Repeat([]byte{fill}, n)
	copy(b, pngMagic)
	return b
}

type fixture struct {
	t   *testing.T
	dir string
	ws  *workspace.Root
	reg *vision.Registry
}

func newFixture(t *testing.T, o vision.Options) *fixture {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Models == nil {
		o.Models = regexp.MustCompile(`^vision-`)
	}
	return &fixture{t: t, dir: dir, ws: ws, reg: vision.New(ws, o)}
}

func (f *fixture) write(rel string, data []byte) {
	f.t.Helper()
	p := filepath.Join(f.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// verified writes an image and verifies it, returning the tool message a
// read_file of it would leave in the conversation.
func (f *fixture) verified(rel string, data []byte) model.Message {
	f.t.Helper()
	f.write(rel, data)
	info, err := f.reg.Verify(rel)
	if err != nil {
		f.t.Fatalf("Verify(%s): %v", rel, err)
	}
	return model.Message{Role: model.RoleTool, ToolCallID: "call_" + rel, Name: "read_file", Content: info.Marker()}
}

func TestSniff(t *testing.T) {
	for _, tt := range []struct {
		name string
		head string
		want string
	}{
		{"png", pngMagic + "\x00\x00\x00\rIHDR", "image/png"},
		{"jpeg jfif", jpegMagic + "\x00\x10JFIF", "image/jpeg"},
		{"jpeg exif", "\xff\xd8\xff\xe1\x00\x10Exif", "image/jpeg"},
		{"gif87a", "GIF87a\x01\x00", "image/gif"},
		{"gif89a", "GIF89a\x01\x00", "image/gif"},
		{"webp lossy", "RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"},
		{"webp lossless", "RIFF\x24\x00\x00\x00WEBPVP8L", "image/webp"},
		{"webp extended", "RIFF\x24\x00\x00\x00WEBPVP8X", "image/webp"},
		{"riff wave is not an image", "RIFF\x24\x00\x00\x00WAVEfmt ", ""},
		{"webp cut short", "RIFF\x24\x00\x00\x00WEBP", ""},
		{"png signature cut short", "\x89PNG\r\n", ""},
		{"svg is not taken", `<svg xmlns="http://www.w3.org/2000/svg"/>`, ""},
		{"bmp is not taken", "BM\x36\x00\x00\x00\x00\x00", ""},
		{"pdf", "%PDF-1.7\n", ""},
		{"text", "hello, world", ""},
		{"empty", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := vision.Sniff([]byte(tt.head)); got != tt.want {
				t.Errorf("Sniff(%q) = %q, want %q", tt.head, got, tt.want)
			}
		})
	}
}

// TestVerifyTrustsBytesNotNames: the extension plays no part.
func TestVerifyTrustsBytesNotNames(t *testing.T) {
	f := newFixture(t, vision.Options{})
	f.write("notes.png", []byte("just text pretending"))
	if _, err := f.reg.Verify("notes.png"); !errors.Is(err, vision.ErrNotImage) {
		t.Errorf("Verify(text named .png) = %v, want ErrNotImage", err)
	}
	if _, ok := f.reg.Lookup("notes.png"); ok {
		t.Error("a text file was recorded as an image")
	}
	jpeg := []byte(jpegMagic + "\x00\x10JFIF rest of a jpeg")
	f.write("photo.txt", jpeg)
	info, err := f.reg.Verify("./sub/../photo.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := vision.Info{Path: "photo.txt", MIME: "image/jpeg", Size: int64(len(jpeg)), SHA256: sha256.Sum256(jpeg)}
	if info != want {
		t.Errorf("Verify = %+v, want %+v", info, want)
	}
	if got, ok := f.reg.Lookup("photo.txt"); !ok || got != want {
		t.Errorf("Lookup = %+v %v", got, ok)
	}
	if _, err := f.reg.Verify("../outside.png"); !errors.Is(err, workspace.ErrOutside) {
		t.Errorf("Verify outside the workspace = %v, want ErrOutside", err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, "folder.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.Verify("folder.png"); err == nil {
		t.Error("a folder verified as an image")
	}
}

func TestMarkerRoundTrip(t *testing.T) {
	for _, p := range []string{
		"inbox/2026-11-29/cat.png",
		"inbox/2026-11-29/my photo (1).jpg",
		".delta/media/2026-11-29/bobby__screenshot-call_1-1.png",
		"weird [brackets] and ) parens.webp",
		"ünïcödé/画像.gif",
	} {
		text := "read " + vision.Marker(p, "image/png", 48213) + " done"
		refs := vision.ParseMarkers(text)
		if want := []vision.Ref{{Path: p, MIME: "image/png", Size: 48213}}; !reflect.DeepEqual(refs, want) {
			t.Errorf("ParseMarkers(%q) = %+v, want %+v", text, refs, want)
		}
	}
	if got := vision.Marker("inbox/2026-11-29/cat.png", "image/png", 48213); got != "[image: inbox/2026-11-29/cat.png (image/png, 48213 bytes)]" {
		t.Errorf("Marker = %q", got)
	}
}

func TestParseMarkers(t *testing.T) {
	for _, tt := range []struct {
		name string
		text string
		want []vision.Ref
	}{
		{"two in order", "a [image: x.png (image/png, 1 bytes)] b [image: y.jpg (image/jpeg, 22 bytes)]",
			[]vision.Ref{{"x.png", "image/png", 1}, {"y.jpg", "image/jpeg", 22}}},
		{"old MCP note is not a marker", "[image: image/png, 33 bytes, not shown to the model]", nil},
		{"unknown type", "[image: x.svg (image/svg+xml, 10 bytes)]", nil},
		{"no size", "[image: x.png (image/png)]", nil},
		{"negative size", "[image: x.png (image/png, -1 bytes)]", nil},
		{"size past int64", "[image: x.png (image/png, 9999999999999999999 bytes)]", nil},
		{"path across lines", "[image: a\nb.png (image/png, 1 bytes)]", nil},
		{"empty path", "[image:  (image/png, 1 bytes)]", nil},
		{"no marker", "plain text", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := vision.ParseMarkers(tt.text)
			if len(got) != len(tt.want) || len(got) > 0 && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseMarkers(%q) = %+v, want %+v", tt.text, got, tt.want)
			}
		})
	}
}

func FuzzParseMarkers(f *testing.F) {
	f.Add("inbox/a.png", "image/png", int64(10), "prefix ")
	f.Add("weird (1) [x].jpg", "image/jpeg", int64(0), "")
	f.Add("[image: nested.png", "image/gif", int64(3_400_000), "[image: ")
	f.Add("a\nb", "image/webp", int64(1), "x")
	f.Fuzz(func(t *testing.T, path, mime string, size int64, prefix string) {
		_ = vision.ParseMarkers(prefix + path + mime) // never panics
		text := prefix + vision.Marker(path, mime, size)
		refs := vision.ParseMarkers(text)
		for _, r := range refs {
			if r.Size < 0 || strings.Contains(r.Path, "\n") || vision.Ext(r.MIME) == "" {
				t.Fatalf("ParseMarkers(%q) gave %+v", text, r)
			}
		}
		clean := path != "" && !strings.ContainsAny(path, "\n") && !strings.Contains(path, markerOpenForTest) &&
			!strings.Contains(path, " (image/") && !strings.Contains(prefix, markerOpenForTest) && size >= 0 && vision.Ext(mime) != ""
		if clean {
			want := []vision.Ref{{Path: path, MIME: mime, Size: size}}
			if !reflect.DeepEqual(refs, want) {
				t.Fatalf("round trip of %q: got %+v, want %+v", text, refs, want)
			}
		}
	})
}

const markerOpenForTest = "[image: "

func TestAttachPicksFourMostRecent(t *testing.T) {
	f := newFixture(t, vision.Options{})
	var msgs []model.Message
	msgs = append(msgs, model.Message{Role: model.RoleUser, Content: "look at the pictures"})
	var data [][]byte
	for i := range 6 {
		b := realPNG(t, 8, 8, uint8(i))
		data = append(data, b)
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: fmt.Sprint(i), Name: "read_file"}}})
		msgs = append(msgs, f.verified(fmt.Sprintf("img/%d.png", i), b))
	}
	// A repeat of an older reference does not count twice, and the turn
	// block after the history is left where it is.
	msgs = append(msgs, model.Message{Role: model.RoleUser, Content: "again: " + vision.Marker("img/5.png", "image/png", int64(len(data[5])))},
		model.Message{Role: model.RoleUser, Content: "<delta:turn>\nstep 2\n</delta:turn>"})
	before := clone(msgs)
	out := f.reg.Attach(context.Background(), "vision-1", msgs)
	if !reflect.DeepEqual(msgs, before) {
		t.Fatal("Attach modified the caller's messages")
	}
	if len(out) != len(msgs)+1 || !reflect.DeepEqual(out[:len(msgs)], msgs) {
		t.Fatalf("Attach returned %d messages, want the %d given plus one", len(out), len(msgs))
	}
	last := out[len(out)-1]
	if last.Role != model.RoleUser || !strings.HasPrefix(last.Content, vision.BlockPrefix) || !strings.HasSuffix(last.Content, "</delta:images>") {
		t.Fatalf("images message = %q", last.Content)
	}
	if len(last.Images) != vision.MaxImages {
		t.Fatalf("%d images attached, want %d", len(last.Images), vision.MaxImages)
	}
	for k, i := range []int{2, 3, 4, 5} { // oldest first
		if last.Images[k].MIME != "image/png" || !bytes.Equal(last.Images[k].Data, data[i]) {
			t.Errorf("image %d is not img/%d.png", k, i)
		}
		if line := fmt.Sprintf("%d. img/%d.png (image/png, %d bytes)", k+1, i, len(data[i])); !strings.Contains(last.Content, line) {
			t.Errorf("block lacks %q:\n%s", line, last.Content)
		}
	}
	if strings.Contains(last.Content, "img/1.png") || strings.Contains(last.Content, "img/0.png") {
		t.Errorf("older images named:\n%s", last.Content)
	}
}

func clone(msgs []model.Message) []model.Message {
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Images = append([]model.Image(nil), m.Images...)
	}
	return out
}

func TestAttachSizeLimit(t *testing.T) {
	f := newFixture(t, vision.Options{})
	atLimit := sized(vision.MaxImageBytes, 'a')
	over := sized(vision.MaxImageBytes+1, 'b')
	f.write("big.png", over)
	info, err := f.reg.Verify("big.png")
	if err != nil || info.Attachable() || info.Size != vision.MaxImageBytes+1 {
		t.Fatalf("Verify(over the limit) = %+v, %v", info, err)
	}
	if _, ok := f.reg.Lookup("big.png"); ok {
		t.Error("an image over the limit was recorded")
	}
	msgs := []model.Message{
		{Role: model.RoleTool, ToolCallID: "1", Content: info.Marker()},
		f.verified("exact.png", atLimit),
	}
	out := f.reg.Attach(context.Background(), "vision-1", msgs)
	if len(out) != 3 || len(out[2].Images) != 1 || len(out[2].Images[0].Data) != vision.MaxImageBytes {
		t.Fatalf("want exactly the %d-byte image attached, got %d messages", vision.MaxImageBytes, len(out))
	}
	if strings.Contains(out[2].Content, "big.png") {
		t.Errorf("the oversized image is named: %s", out[2].Content)
	}
}

func TestAttachRefusesChangedAndUnverified(t *testing.T) {
	f := newFixture(t, vision.Options{})
	orig := realPNG(t, 4, 4, 1)
	msgs := []model.Message{
		f.verified("a.png", orig),
		f.verified("b.png", realPNG(t, 4, 4, 2)),
	}
	// a.png changes after verification, same size: only the hash tells.
	changed := bytes.Clone(orig)
	changed[len(changed)-20] ^= 0xff
	f.write("a.png", changed)
	// c.png is a real image referenced by a marker Delta never made.
	c := realPNG(t, 4, 4, 3)
	f.write("c.png", c)
	msgs = append(msgs, model.Message{Role: model.RoleUser, Content: vision.Marker("c.png", "image/png", int64(len(c)))})

	out := f.reg.Attach(context.Background(), "vision-1", msgs)
	if len(out) != 4 {
		t.Fatalf("got %d messages, want 4", len(out))
	}
	block := out[3]
	if len(block.Images) != 1 || !strings.Contains(block.Content, "1. b.png") {
		t.Fatalf("want only b.png attached:\n%s", block.Content)
	}
	if !strings.Contains(block.Content, "Not attached: a.png: it changed after Delta verified it; read_file it again") {
		t.Errorf("the changed file is not explained:\n%s", block.Content)
	}
	if strings.Contains(block.Content, "c.png") {
		t.Errorf("an unverified path is named:\n%s", block.Content)
	}
	// Re-verifying the changed file restores it.
	if _, err := f.reg.Verify("a.png"); err != nil {
		t.Fatal(err)
	}
	if out := f.reg.Attach(context.Background(), "vision-1", msgs); len(out[3].Images) != 2 {
		t.Errorf("after re-reading, %d images attached, want 2", len(out[3].Images))
	}
	// Gone entirely.
	if err := os.Remove(filepath.Join(f.dir, "b.png")); err != nil {
		t.Fatal(err)
	}
	if out := f.reg.Attach(context.Background(), "vision-1", msgs); !strings.Contains(out[3].Content, "Not attached: b.png: it is gone") {
		t.Errorf("a deleted file is not explained:\n%s", out[3].Content)
	}
}

func TestAttachLeavesMessagesAlone(t *testing.T) {
	f := newFixture(t, vision.Options{})
	verified := f.verified("a.png", realPNG(t, 4, 4, 1))
	c := realPNG(t, 4, 4, 3)
	f.write("c.png", c)
	unverified := model.Message{Role: model.RoleTool, Content: vision.Marker("c.png", "image/png", int64(len(c)))}
	noVision := vision.New(f.ws, vision.Options{}) // no DELTA_VISION_MODELS
	if _, err := noVision.Verify("a.png"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		reg   *vision.Registry
		model string
		msgs  []model.Message
	}{
		{"model does not match", f.reg, "text-only-1", []model.Message{verified}},
		{"no vision models configured", noVision, "vision-1", []model.Message{verified}},
		{"nil registry", nil, "vision-1", []model.Message{verified}},
		{"nothing verified", f.reg, "vision-1", []model.Message{unverified}},
		{"marker only in an assistant message", f.reg, "vision-1", []model.Message{{Role: model.RoleAssistant, Content: verified.Content}}},
		{"no messages", f.reg, "vision-1", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.reg.Attach(context.Background(), tt.model, tt.msgs)
			if len(out) != len(tt.msgs) || len(out) > 0 && &out[0] != &tt.msgs[0] {
				t.Errorf("Attach changed the conversation: %d messages", len(out))
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := f.reg.Attach(ctx, "vision-1", []model.Message{verified}); len(out) != 1 {
		t.Error("Attach read files after its context ended")
	}
}

func TestRegistryForgetsOldest(t *testing.T) {
	f := newFixture(t, vision.Options{Remember: 2})
	for i := range 3 {
		f.verified(fmt.Sprintf("%d.png", i), realPNG(t, 2, 2, uint8(i)))
	}
	if _, ok := f.reg.Lookup("0.png"); ok {
		t.Error("the oldest verification was kept past the bound")
	}
	for _, p := range []string{"1.png", "2.png"} {
		if _, ok := f.reg.Lookup(p); !ok {
			t.Errorf("%s forgotten", p)
		}
	}
	// Re-verifying refreshes: 1.png is now the newest, 2.png the oldest.
	if _, err := f.reg.Verify("1.png"); err != nil {
		t.Fatal(err)
	}
	f.verified("3.png", realPNG(t, 2, 2, 9))
	if _, ok := f.reg.Lookup("2.png"); ok {
		t.Error("2.png should have been forgotten after 1.png was re-verified")
	}
	if _, ok := f.reg.Lookup("1.png"); !ok {
		t.Error("1.png forgotten despite being re-verified")
	}
}

func TestSaveMedia(t *testing.T) {
	day := time.Date(2026, 11, 29, 23, 30, 0, 0, time.UTC)
	f := newFixture(t, vision.Options{Now: func() time.Time { return day }})
	jpeg := []byte(jpegMagic + "\x00\x10JFIF body")
	for _, tt := range []struct {
		name, stem string
		data       []byte
		want       string
		err        error
	}{
		{"typed by the bytes", "bobby__screenshot-call_1-1", jpeg, ".delta/media/2026-11-29/bobby__screenshot-call_1-1.jpg", nil},
		{"name taken", "bobby__screenshot-call_1-1", jpeg, ".delta/media/2026-11-29/bobby__screenshot-call_1-1-2.jpg", nil},
		{"unsafe characters", "../../etc/pass wd", []byte(pngMagic + "x"), ".delta/media/2026-11-29/_.._etc_pass_wd.png", nil},
		{"hidden name", "..hidden", []byte(pngMagic + "y"), ".delta/media/2026-11-29/hidden.png", nil},
		{"not an image", "x", []byte("<svg/>"), "", vision.ErrNotImage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			info, err := f.reg.SaveMedia(tt.stem, tt.data)
			if !errors.Is(err, tt.err) || info.Path != tt.want {
				t.Fatalf("SaveMedia = %+v, %v; want %s, %v", info, err, tt.want, tt.err)
			}
			if tt.err != nil {
				return
			}
			got, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(tt.want)))
			if err != nil || !bytes.Equal(got, tt.data) {
				t.Errorf("file holds %q, %v", got, err)
			}
			if _, ok := f.reg.Lookup(tt.want); !ok {
				t.Error("a saved image was not recorded")
			}
		})
	}
}

func BenchmarkAttach(b *testing.B) {
	dir := b.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	reg := vision.New(ws, vision.Options{Models: regexp.MustCompile(`.`)})
	var msgs []model.Message
	for i := range 200 {
		msgs = append(msgs, model.Message{Role: model.RoleTool, Content: strings.Repeat("tool output line\n", 50)})
		if i%40 == 0 {
			rel := fmt.Sprintf("%d.png", i)
			if err := os.WriteFile(filepath.Join(dir, rel), sized(1_000_000, byte(i)), 0o644); err != nil {
				b.Fatal(err)
			}
			info, err := reg.Verify(rel)
			if err != nil {
				b.Fatal(err)
			}
			msgs = append(msgs, model.Message{Role: model.RoleTool, Content: info.Marker()})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := reg.Attach(context.Background(), "m", msgs); len(out[len(out)-1].Images) != 4 {
			b.Fatal("want 4 images")
		}
	}
}
