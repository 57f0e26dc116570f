package openai_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

var pngBytes, jpegBytes = wiretest.PNG, wiretest.JPEG

func imagesRequest() model.Request {
	return wiretest.ImageRead(basicRequest(), "call_1", "inbox/cat.png", []string{"inbox/cat.png"},
		model.Image{MIME: "image/png", Data: pngBytes}, model.Image{MIME: "image/jpeg", Data: jpegBytes})
}

// TestImagesWire: a user message with images is sent as content parts, text
// first, then one image_url part per image carrying a base64 data: URL;
// every other message keeps its plain string content.
func TestImagesWire(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	c := openai.New(openai.Options{BaseURL: fake.URL()})
	if _, err := c.Complete(context.Background(), imagesRequest(), model.Stream{}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got := fake.Requests()[0]
	msgs := wiretest.Items(t, got, "messages")
	last := msgs[len(msgs)-1]
	want := `{"role":"user","content":[{"type":"text","text":"<delta:images>\ninbox/cat.png\n</delta:images>"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(pngBytes) + `"}},` +
		`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,` + base64.StdEncoding.EncodeToString(jpegBytes) + `"}}]}`
	if g, w := wiretest.Canonical(t, last), wiretest.Canonical(t, []byte(want)); g != w {
		t.Errorf("images message on the wire:\n got %s\nwant %s", g, w)
	}
	if g := wiretest.Canonical(t, msgs[len(msgs)-2]); g != wiretest.Canonical(t, []byte(`{"role":"user","content":"<delta:turn step=2/>"}`)) {
		t.Errorf("the turn block is no longer a plain string: %s", g)
	}
	// What the model saw, as the fake recorded it.
	wiretest.CheckImages(t, got, model.Image{MIME: "image/png", Data: pngBytes}, model.Image{MIME: "image/jpeg", Data: jpegBytes})
	if m := got.LastMessage(); m.Role != "user" || m.Content != "<delta:images>\ninbox/cat.png\n</delta:images>" || len(m.Images) != 2 {
		t.Errorf("last message as decoded = %+v", m)
	}
}
