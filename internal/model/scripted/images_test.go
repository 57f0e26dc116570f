package scripted

import (
	"context"
	"encoding/base64"
	"io"
	"strings"
	"testing"
)

// png1 is a PNG signature and header: enough for every content sniffer.
var png1 = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"

// TestImagesDecoded: each wire's image shape is checked as the real
// endpoint checks it and recorded; malformed images are 400s naming the
// problem, never a panic or a silently dropped image.
func TestImagesDecoded(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte(png1))
	anth := map[string]string{"anthropic-version": "2023-06-01"}
	tests := []struct {
		name, path, body string
		header           map[string]string
		status           int
		msg              string // in the error body
		images           int
	}{
		{"chat image_url", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]}]}`, nil, 200, "", 1},
		{"chat remote url", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`, nil, 400, "data: URL", 0},
		{"chat bad base64", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,!!!"}}]}]}`, nil, 400, "base64", 0},
		{"chat type mismatch", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,` + b64 + `"}}]}]}`, nil, 400, "does not match", 0},
		{"chat image in a system message", "/chat/completions", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]}]}`, nil, 400, "only valid in user", 0},
		{"responses input_image", "/responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,` + b64 + `"}]}]}`, nil, 200, "", 1},
		{"responses file_id", "/responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","detail":"auto","file_id":"file_1"}]}]}`, nil, 400, "file_id", 0},
		{"responses svg", "/responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/svg+xml;base64,PHN2Zy8+"}]}]}`, nil, 400, "unsupported image media type", 0},
		{"anthropic image block", "/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}}]}]}`, anth, 200, "", 1},
		{"anthropic url source", "/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`, anth, 400, "base64 sources only", 0},
		{"anthropic no source", "/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, anth, 400, "source", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			res := post(t, context.Background(), s.URL()+tt.path, tt.body, tt.header)
			raw, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status || !strings.Contains(string(raw), tt.msg) {
				t.Fatalf("status %d body %s, want %d containing %q", res.StatusCode, raw, tt.status, tt.msg)
			}
			var got []ChatImage
			for _, r := range s.Requests() {
				got = append(got, r.Images()...)
			}
			if len(got) != tt.images {
				t.Fatalf("recorded %d images, want %d", len(got), tt.images)
			}
			if tt.images == 1 && (got[0].MIME != "image/png" || got[0].Bytes != len(png1) || len(got[0].SHA256) != 64) {
				t.Errorf("recorded %+v", got[0])
			}
			if tt.status == 200 {
				if m := s.Requests()[0].LastMessage(); m.Content != "look" || len(m.Images) != 1 {
					t.Errorf("the image did not join its user message: %+v", m)
				}
			}
		})
	}
}

// FuzzImageParts: any content array and any Anthropic image source is
// decoded or refused with an error, and a recorded image always has a
// known type, some bytes and a full digest.
func FuzzImageParts(f *testing.F) {
	b64 := base64.StdEncoding.EncodeToString([]byte(png1))
	for _, seed := range []string{
		`[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]`,
		`[{"type":"input_image","image_url":"data:image/png;base64,` + b64 + `"}]`,
		`[{"type":"input_image","image_url":"data:image/png;base64,"}]`,
		`[{"type":"image_url","image_url":"not an object"}]`,
		`[{"type":"image_url","image_url":{"url":"data:;base64,"}}]`,
		`{"type":"base64","media_type":"image/png","data":"` + b64 + `"}`,
		`{"type":"base64","media_type":"image/gif","data":"R0lGODlh"}`,
		`null`, `"text"`, ``,
	} {
		f.Add([]byte(seed))
	}
	check := func(t *testing.T, ims ...ChatImage) {
		for _, im := range ims {
			if !imageTypes[im.MIME] || im.Bytes == 0 || len(im.SHA256) != 64 {
				t.Fatalf("recorded %+v", im)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, ims, err := contentParts(raw); err == nil {
			check(t, ims...)
		}
		if im, err := anthImage(raw); err == nil {
			check(t, im)
		}
	})
}
