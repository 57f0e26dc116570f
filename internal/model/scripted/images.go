package scripted

// Images on the three wires. The fake checks an image the way the real
// endpoints do (the bytes must decode, the declared type must be one of
// the four they take and must match the bytes) and records what it saw, so
// tests can assert exactly which images reached the model.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ChatImage is one image a request carried, as the fake decoded it.
type ChatImage struct {
	MIME   string // the declared media type
	Bytes  int    // decoded length
	SHA256 string // hex digest of the decoded bytes
}

// Images returns every image of the request, in message order.
func (r ChatRequest) Images() []ChatImage {
	var out []ChatImage
	for _, m := range r.Messages {
		out = append(out, m.Images...)
	}
	return out
}

// imageTypes are the media types every wire accepts.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// decodeImage checks base64 image data declared as mime and records it.
func decodeImage(mime, b64 string) (ChatImage, error) {
	if !imageTypes[mime] {
		return ChatImage{}, fmt.Errorf("unsupported image media type %q: use image/jpeg, image/png, image/gif or image/webp", mime)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return ChatImage{}, fmt.Errorf("image data is not valid base64: %v", err)
	}
	if len(data) == 0 {
		return ChatImage{}, errors.New("image data is empty")
	}
	if got := http.DetectContentType(data); got != mime {
		return ChatImage{}, fmt.Errorf("image does not match the provided media type %s (the bytes are %s)", mime, got)
	}
	sum := sha256.Sum256(data)
	return ChatImage{MIME: mime, Bytes: len(data), SHA256: hex.EncodeToString(sum[:])}, nil
}

// decodeDataURL checks a data:<mime>;base64,<data> URL. The fake never
// fetches a remote image, and Delta never sends one.
func decodeDataURL(url string) (ChatImage, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return ChatImage{}, errors.New("image URL must be a data: URL (the fake fetches nothing)")
	}
	mime, b64, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return ChatImage{}, errors.New("image data URL must be data:<media type>;base64,<data>")
	}
	return decodeImage(mime, b64)
}

// contentParts flattens a Chat Completions or Responses message content: a
// string, null, or an array of parts whose text fields are joined and
// whose image parts (image_url objects, input_image URLs) are decoded.
func contentParts(raw json.RawMessage) (string, []ChatImage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
		FileID   string          `json:"file_id"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, errors.New("content must be a string or an array of parts")
	}
	var b strings.Builder
	var images []ChatImage
	for i, p := range parts {
		switch p.Type {
		case "image_url": // Chat Completions: {"url": "..."}
			var u struct {
				URL string `json:"url"`
			}
			if err := json.Unmarshal(p.ImageURL, &u); err != nil || u.URL == "" {
				return "", nil, fmt.Errorf("content[%d].image_url: an object with a url is required", i)
			}
			im, err := decodeDataURL(u.URL)
			if err != nil {
				return "", nil, fmt.Errorf("content[%d].image_url: %v", i, err)
			}
			images = append(images, im)
		case "input_image": // Responses: "image_url": "..."
			var u string
			if err := json.Unmarshal(p.ImageURL, &u); err != nil || u == "" {
				return "", nil, fmt.Errorf("content[%d]: input_image needs an image_url string (file_id is not supported here)", i)
			}
			im, err := decodeDataURL(u)
			if err != nil {
				return "", nil, fmt.Errorf("content[%d].image_url: %v", i, err)
			}
			images = append(images, im)
		default:
			b.WriteString(p.Text)
		}
	}
	return b.String(), images, nil
}

// anthImage checks an Anthropic image block's source and records it.
func anthImage(raw json.RawMessage) (ChatImage, error) {
	var src struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
	if err := json.Unmarshal(raw, &src); err != nil {
		return ChatImage{}, errors.New("an object with type, media_type and data is required")
	}
	if src.Type != "base64" {
		return ChatImage{}, fmt.Errorf("the fake takes base64 sources only, not %q", src.Type)
	}
	return decodeImage(src.MediaType, src.Data)
}
