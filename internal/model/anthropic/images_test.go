package anthropic_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/anthropic"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

var (
	pngBytes  = wiretest.PNG
	webpBytes = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
)

// TestImagesWire: the images ride in the last user turn as image blocks
// with a base64 source, after the message's text block; the text block
// takes the rolling breakpoint, the image blocks never carry one.
func TestImagesWire(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL(), APIKey: "sk-ant-test"})
	req := wiretest.ImageRead(basicRequest(), "toolu_1", "a.png", []string{"a.png", "b.webp"},
		model.Image{MIME: "image/png", Data: pngBytes}, model.Image{MIME: "image/webp", Data: webpBytes})
	if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got := fake.Requests()[0]
	msgs := wiretest.Items(t, got, "messages")
	if len(msgs) != 3 {
		t.Fatalf("%d turns on the wire, want 3 (user, assistant, user)", len(msgs))
	}
	want := `{"role":"user","content":[` +
		`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"[image: a.png (image/png, 29 bytes)]"}]},` +
		`{"type":"text","text":"<delta:turn step=2/>"},` +
		`{"type":"text","text":"<delta:images>\na.png\nb.webp\n</delta:images>","cache_control":{"type":"ephemeral"}},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + base64.StdEncoding.EncodeToString(pngBytes) + `"}},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"` + base64.StdEncoding.EncodeToString(webpBytes) + `"}}]}`
	if g, w := wiretest.Canonical(t, msgs[2]), wiretest.Canonical(t, []byte(want)); g != w {
		t.Errorf("last turn on the wire:\n got %s\nwant %s", g, w)
	}
	wiretest.CheckImages(t, got, model.Image{MIME: "image/png", Data: pngBytes}, model.Image{MIME: "image/webp", Data: webpBytes})
	if m := got.LastMessage(); m.Role != "user" || len(m.Images) != 2 {
		t.Errorf("images joined %+v, want the images text message", m)
	}
}

// TestImageWithoutText: a user message of images alone is image blocks
// only (the API refuses an empty text block).
func TestImageWithoutText(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL()})
	req := basicRequest()
	req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Images: []model.Image{{MIME: "image/png", Data: pngBytes}}})
	if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if ims := fake.Requests()[0].Images(); len(ims) != 1 || ims[0].SHA256 != wiretest.SHA256(pngBytes) {
		t.Errorf("fake recorded images %+v", ims)
	}
}
