package vision

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// maxStem bounds a media file's name before its extension.
const maxStem = 120

// SaveMedia writes an image Delta received from outside the workspace (an
// MCP tool result) to media/YYYY-MM-DD/<name><ext> and records it as
// verified. The type comes from the bytes, never the sender's claim, and
// data that is not an image is refused with ErrNotImage. name is reduced
// to letters, digits, '_', '-' and '.'; a name already taken gets -2, -3, ….
func (r *Registry) SaveMedia(name string, data []byte) (Info, error) {
	mime := Sniff(data)
	if mime == "" {
		return Info{}, ErrNotImage
	}
	dir := path.Join(MediaDir, r.o.Now().UTC().Format("2006-01-02"))
	stem := safeStem(name)
	for i := 1; i <= 1000; i++ {
		rel := path.Join(dir, stem+Ext(mime))
		if i > 1 {
			rel = path.Join(dir, stem+"-"+strconv.Itoa(i)+Ext(mime))
		}
		taken, err := r.ws.Exists(rel)
		if err != nil {
			return Info{}, fmt.Errorf("save image %s: %w", rel, err)
		}
		if taken {
			continue
		}
		if err := r.ws.WriteFile(rel, data); err != nil {
			return Info{}, fmt.Errorf("save image %s: %w", rel, err)
		}
		return r.Verify(rel)
	}
	return Info{}, fmt.Errorf("save image %s: too many files with that name", path.Join(dir, stem))
}

// safeStem keeps a file name stem plain: other characters become '_', a
// leading dot is dropped (no hidden files), and the length is bounded.
func safeStem(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= maxStem {
			break
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" {
		s = "image"
	}
	return s
}
