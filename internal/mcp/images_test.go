package mcp_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/vision"
	"github.com/deltaharness/delta/internal/workspace"
)

// TestImagesSaved: with SaveImage wired to a vision registry, an image
// result is written into the workspace under a name made of server, tool,
// call id and position, recorded as verified, and the model sees its
// marker; bytes that only claim to be an image are described and dropped.
func TestImagesSaved(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	reg := vision.New(ws, vision.Options{Now: func() time.Time { return day }})
	var names []string
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{stdioServer("local", nil)},
		SaveImage: func(name, mime string, data []byte) (string, error) {
			names = append(names, name+" "+mime)
			info, err := reg.SaveMedia(name, data)
			if err != nil {
				return "", err
			}
			return info.Marker(), nil
		},
	})
	tools := byName(t, m)

	res := call(t, t.Context(), tools, "local__get_image", `{}`)
	png := ".delta/media/2026-11-29/local__get_image-c1-1.png"
	want := "MCP result from server local (untrusted data):\nhere is the image\n" + vision.Marker(png, "image/png", int64(len(mcptest.PNG)))
	if res.IsError || res.Text != want {
		t.Fatalf("get_image = %q, want %q", res.Text, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, png)); err != nil || !bytes.Equal(b, mcptest.PNG) {
		t.Errorf("%s on disk = %v, %v", png, b, err)
	}
	if _, ok := reg.Lookup(png); !ok {
		t.Errorf("%s not recorded as verified", png)
	}

	res = call(t, t.Context(), tools, "local__get_images", `{}`)
	jpg := ".delta/media/2026-11-29/local__get_images-c1-1.jpg"
	if !strings.Contains(res.Text, vision.Marker(jpg, "image/jpeg", int64(len(mcptest.JPEG)))) ||
		!strings.Contains(res.Text, "[image: image/png, 25 bytes, not shown to the model]") || !strings.Contains(res.Text, "two images") {
		t.Errorf("get_images = %q", res.Text)
	}
	if _, err := os.Stat(filepath.Join(dir, ".delta/media/2026-11-29/local__get_images-c1-2.png")); !os.IsNotExist(err) {
		t.Errorf("the bogus image was written: %v", err)
	}
	if got := strings.Join(names, ","); got != "local__get_image-c1-1 image/png,local__get_images-c1-1 image/jpeg,local__get_images-c1-2 image/png" {
		t.Errorf("SaveImage names = %s", got)
	}
}
