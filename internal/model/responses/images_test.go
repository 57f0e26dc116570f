package responses_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/responses"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

var gifBytes = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// TestImagesWire: on both lanes a user message with images becomes one
// message item whose content is input_text then input_image parts (data:
// URL, detail auto). On a model with explicit prompt caching the images
// item never carries a breakpoint, and the breakpoints stay where they
// would be without it.
func TestImagesWire(t *testing.T) {
	for _, tt := range []struct {
		lane, model string
		breakpoints int
	}{
		{"plain", "gpt-5", 0},
		{"native", "gpt-5.6", 2}, // the opening request and the tool output
	} {
		t.Run(tt.lane, func(t *testing.T) {
			fake := modeltest.Serve(t, nil)
			c := responses.New(responses.Options{BaseURL: fake.URL()})
			if tt.lane == "native" {
				c = native(fake, responses.Options{})
			}
			req := wiretest.ImageRead(basicRequest(), "call_1", "spin.gif", []string{"spin.gif"}, model.Image{MIME: "image/gif", Data: gifBytes})
			req.Model = tt.model
			if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := fake.Requests()[0]
			input := wiretest.Items(t, got, "input")
			want := `{"role":"user","content":[` +
				`{"type":"input_text","text":"<delta:images>\nspin.gif\n</delta:images>"},` +
				`{"type":"input_image","detail":"auto","image_url":"data:image/gif;base64,` + base64.StdEncoding.EncodeToString(gifBytes) + `"}]}`
			last := input[len(input)-1]
			if g, w := wiretest.Canonical(t, last), wiretest.Canonical(t, []byte(want)); g != w {
				t.Errorf("images item on the wire:\n got %s\nwant %s", g, w)
			}
			if n := strings.Count(string(got.Raw), `"prompt_cache_breakpoint"`); n != tt.breakpoints {
				t.Errorf("%d breakpoints, want %d: %s", n, tt.breakpoints, got.Raw)
			}
			wiretest.CheckImages(t, got, model.Image{MIME: "image/gif", Data: gifBytes})
		})
	}
}
