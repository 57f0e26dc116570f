package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/vision"
)

// TestReadImages: with a vision registry, read_file answers an image (known
// by its bytes) with its marker and the note, and records it as verified;
// everything that is not an image reads exactly as before.
func TestReadImages(t *testing.T) {
	e := newEnv(t)
	reg := vision.New(e.ws, vision.Options{})
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
	jpeg := "\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01"
	e.write(t, "inbox/cat.png", png)
	e.write(t, "photo.txt", jpeg)                   // an image whatever its name
	e.write(t, "fake.png", "plain text\n")          // text whatever its name
	e.write(t, "archive.bin", "PK\x03\x04\x00\x00") // other binary: still refused
	e.write(t, "huge.gif", "GIF89a"+strings.Repeat("\x00", vision.MaxImageBytes))
	e.write(t, "linked/.keep", "")
	if err := os.Symlink("../inbox/cat.png", filepath.Join(e.dir, "linked", "cat.png")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		isErr      bool
		exact      string
		want       []string
		recorded   string // the registry key it must be verified under
	}{
		{name: "png", path: "inbox/cat.png", exact: "[image: inbox/cat.png (image/png, 20 bytes)]\n" + ImageNote, recorded: "inbox/cat.png"},
		{name: "path made canonical", path: "./notes/../inbox/cat.png", exact: "[image: inbox/cat.png (image/png, 20 bytes)]\n" + ImageNote, recorded: "inbox/cat.png"},
		{name: "through a symlink: the real file", path: "linked/cat.png", exact: "[image: inbox/cat.png (image/png, 20 bytes)]\n" + ImageNote, recorded: "inbox/cat.png"},
		{name: "jpeg named .txt", path: "photo.txt", exact: "[image: photo.txt (image/jpeg, 12 bytes)]\n" + ImageNote, recorded: "photo.txt"},
		{name: "text named .png", path: "fake.png", exact: "plain text\n"},
		{name: "other binary refused", path: "archive.bin", isErr: true, want: []string{"binary file"}},
		{name: "too large to attach", path: "huge.gif", want: []string{"[image: huge.gif (image/gif, 3400006 bytes)]", "too large to attach", "3400000 bytes"}},
		{name: "missing", path: "inbox/dog.png", isErr: true, want: []string{"it does not exist"}},
		{name: "outside", path: "../outside/secret.txt", isErr: true, want: []string{"outside the workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, ReadImages(e.ws, reg), m{"path": tt.path})
			if tt.exact != "" {
				if res.IsError || res.Text != tt.exact {
					t.Fatalf("read_file(%s) = %q (error %v), want %q", tt.path, clip(res.Text), res.IsError, tt.exact)
				}
			} else {
				expect(t, res, tt.isErr, tt.want...)
			}
			if tt.recorded != "" {
				if _, ok := reg.Lookup(tt.recorded); !ok {
					t.Errorf("%s was not recorded as verified", tt.recorded)
				}
			}
		})
	}
	for _, p := range []string{"fake.png", "huge.gif", "archive.bin"} {
		if _, ok := reg.Lookup(p); ok {
			t.Errorf("%s recorded as an attachable image", p)
		}
	}
	// Without a registry an image is refused as before.
	expect(t, call(t, Read(e.ws), m{"path": "inbox/cat.png"}), true, "binary file (image/png")
}
