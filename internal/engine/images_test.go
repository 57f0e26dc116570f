package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/vision"
	"github.com/deltaharness/delta/internal/workspace"
)

// imagePNG sniffs as a PNG and carries a payload no other byte string in
// the test holds, so finding it anywhere proves the bytes leaked there.
var imagePNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR unique-image-payload-5d1c")

// visionHarness runs an agent that calls look (which verifies cat.png, as
// read_file does) and then answers, with a vision registry as Attach. It
// returns the harness and every request the model received.
func visionHarness(t *testing.T, models string, overflowWithImages bool) (*harness, func() []model.Request) {
	t.Helper()
	var reg *vision.Registry
	look := tool.Func("look", "verify cat.png", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		info, err := reg.Verify("cat.png")
		if err != nil {
			return tool.Result{}, err
		}
		return tool.Text(info.Marker()), nil
	})
	var (
		mu   sync.Mutex
		reqs []model.Request
	)
	base := toolThenAnswer(model.ToolCall{ID: "c1", Name: "look", Arguments: json.RawMessage(`{"text":""}`)})
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		for _, m := range req.Messages {
			if len(m.Images) > 0 && overflowWithImages {
				return model.Response{}, &model.Error{Status: 400, Message: "prompt is too long", Err: model.ErrContextOverflow}
			}
		}
		return base(ctx, req, s)
	})
	h := newHarnessWith(t, p, big, func(o *engine.Options) {
		ws, err := workspace.Open(o.WorkspaceDir)
		if err != nil {
			t.Fatal(err)
		}
		reg = vision.New(ws, vision.Options{Models: regexp.MustCompile(models)})
		o.Attach = reg.Attach
		o.TurnBlocks = func(context.Context, string) []string { return []string{"<delta:todo>\n- [doing] look\n</delta:todo>"} }
	}, look)
	if err := os.WriteFile(filepath.Join(h.dir, "cat.png"), imagePNG, 0o644); err != nil {
		t.Fatal(err)
	}
	return h, func() []model.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]model.Request(nil), reqs...)
	}
}

// lookAtTheCat runs the vision harness's agent, which must finish, and
// returns the run, its response and every request the model received.
func lookAtTheCat(t *testing.T, models string, overflowWithImages bool) (*harness, store.Run, engine.Response, []model.Request) {
	t.Helper()
	h, reqs := visionHarness(t, models, overflowWithImages)
	r, resp := h.run(t, "look at the cat")
	if r.Status != store.StatusDone {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	return h, r, resp, reqs()
}

// imagesMessage reports whether m is or carries the images message.
func imagesMessage(m model.Message) bool {
	return len(m.Images) > 0 || strings.HasPrefix(m.Content, vision.BlockPrefix)
}

// TestAttachReachesTheModelNotTheStore: after the tool verified an image,
// the next call carries it in one user message after the turn block; the
// conversation stored in SQLite holds the marker only, never the bytes.
func TestAttachReachesTheModelNotTheStore(t *testing.T) {
	h, r, resp, got := lookAtTheCat(t, `^primary$`, false)
	if len(got) != 2 {
		t.Fatalf("%d model calls, want 2", len(got))
	}
	for _, m := range got[0].Messages {
		if len(m.Images) > 0 {
			t.Fatal("the first call carried an image before anything was verified")
		}
	}
	msgs := got[1].Messages
	last, before := msgs[len(msgs)-1], msgs[len(msgs)-2]
	if last.Role != model.RoleUser || !strings.HasPrefix(last.Content, vision.BlockPrefix) || !strings.Contains(last.Content, "1. cat.png (image/png") ||
		len(last.Images) != 1 || !bytes.Equal(last.Images[0].Data, imagePNG) || last.Images[0].MIME != "image/png" {
		t.Fatalf("last message of the second call = %+v", last)
	}
	if !strings.HasPrefix(before.Content, "<delta:todo>") {
		t.Errorf("the images message does not follow the per-turn blocks: %q before it", before.Content)
	}
	if !strings.Contains(resp.OutputText, "[image: cat.png (image/png") {
		t.Errorf("answer %q does not carry the marker", resp.OutputText)
	}
	stored, err := h.st.Messages(context.Background(), r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stored {
		if imagesMessage(m) {
			t.Errorf("stored message carries the images block: %+v", m)
		}
	}
	var disk []byte
	for _, f := range []string{"delta.db", "delta.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(h.dir, f))
		disk = append(disk, b...)
	}
	if len(disk) == 0 {
		t.Fatal("no database file to inspect")
	}
	for _, leak := range [][]byte{[]byte("unique-image-payload"), []byte(base64.StdEncoding.EncodeToString(imagePNG))} {
		if bytes.Contains(disk, leak) {
			t.Errorf("the database holds the image bytes (%.20s…)", leak)
		}
	}
}

// TestAttachSkipsOtherModels: the model name Attach is given is the one
// the call is made with, so a pattern that does not match sends nothing.
func TestAttachSkipsOtherModels(t *testing.T) {
	_, _, _, got := lookAtTheCat(t, `^gpt-4o$`, false)
	for i, req := range got {
		for _, m := range req.Messages {
			if imagesMessage(m) {
				t.Errorf("call %d carried images for a model the pattern does not match", i+1)
			}
		}
	}
}

// TestContextOverflowDropsImagesFirst: when the call with images overflows,
// the one retry goes without them and the run completes.
func TestContextOverflowDropsImagesFirst(t *testing.T) {
	_, _, _, got := lookAtTheCat(t, `^primary$`, true)
	if len(got) != 3 {
		t.Fatalf("%d model calls, want 3 (tool turn, overflow with the image, retry without)", len(got))
	}
	for _, m := range got[2].Messages {
		if imagesMessage(m) {
			t.Fatalf("the retry still carries the images message")
		}
	}
	if n := len(got[1].Messages) - len(got[2].Messages); n != 1 {
		t.Errorf("the retry differs by %d messages, want exactly the images message dropped", n)
	}
}
