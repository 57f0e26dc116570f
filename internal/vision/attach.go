package vision

import (
	"context"
	"fmt"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

// Attach returns msgs with the most recently referenced verified images
// attached, for a model that matches Options.Models; otherwise msgs itself.
//
// It scans user and tool messages newest first for markers and takes up to
// MaxImages distinct paths that the registry verified. Each file is read
// again through the workspace and attached only if it is still the bytes
// verified (same size and SHA-256) and at most MaxImageBytes. The images
// ride in one user message appended at the end, after the per-turn blocks,
// whose text names them oldest first; a verified reference that could not
// be attached is named there too, with the reason. When nothing can be
// attached msgs is returned as it came. The caller's slice and its
// elements are never modified.
func (r *Registry) Attach(ctx context.Context, modelName string, msgs []model.Message) []model.Message {
	if !r.Vision(modelName) {
		return msgs
	}
	type pick struct {
		info Info
		data []byte
	}
	var (
		picked  []pick
		skipped []string
		seen    = map[string]bool{}
	)
scan:
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != model.RoleUser && m.Role != model.RoleTool || strings.HasPrefix(m.Content, BlockPrefix) {
			continue
		}
		refs := ParseMarkers(m.Content)
		for j := len(refs) - 1; j >= 0; j-- {
			if len(picked) == MaxImages || ctx.Err() != nil {
				break scan
			}
			p := refs[j].Path
			if seen[p] {
				continue
			}
			seen[p] = true
			info, ok := r.Lookup(p)
			if !ok {
				continue // never verified in this process: a file reference only
			}
			data, err := r.load(info)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %v; read_file it again to attach it", p, err))
				r.o.Logger.Debug("image not attached", "path", p, "reason", err)
				continue
			}
			picked = append(picked, pick{info, data})
		}
	}
	if len(picked) == 0 {
		return msgs
	}
	var b strings.Builder
	b.WriteString(BlockPrefix + "\nAttached below, oldest first, for the image references above:\n")
	images := make([]model.Image, 0, len(picked))
	for k := len(picked) - 1; k >= 0; k-- {
		p := picked[k]
		fmt.Fprintf(&b, "%d. %s (%s, %d bytes)\n", len(picked)-k, p.info.Path, p.info.MIME, p.info.Size)
		images = append(images, model.Image{MIME: p.info.MIME, Data: p.data})
	}
	for _, s := range skipped {
		fmt.Fprintf(&b, "Not attached: %s\n", s)
	}
	b.WriteString("</delta:images>")
	out := make([]model.Message, len(msgs), len(msgs)+1)
	copy(out, msgs)
	return append(out, model.Message{Role: model.RoleUser, Content: b.String(), Images: images})
}
