package vision

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// markerOpen starts every marker; a cheap test before the expression runs.
const markerOpen = "[image: "

// Marker is the text the conversation holds for an image:
//
//	[image: inbox/2026-11-29/cat.png (image/png, 48213 bytes)]
//
// It names the workspace path, the sniffed type and the size. ParseMarkers
// reads it back.
func Marker(path, mime string, size int64) string {
	return fmt.Sprintf("%s%s (%s, %d bytes)]", markerOpen, path, mime, size)
}

// Ref is one marker found in text.
type Ref struct {
	Path string
	MIME string
	Size int64
}

// markerRE matches a marker. The path is the shortest run of characters
// on one line before " (<type>, <n> bytes)]", so a path may hold spaces,
// brackets or parentheses; only the four image types match, which keeps
// older "[image: image/png, 33 bytes, not shown to the model]" notes out.
var markerRE = regexp.MustCompile(`\[image: ([^\n]+?) \((image/(?:png|jpeg|gif|webp)), ([0-9]{1,19}) bytes\)\]`)

// ParseMarkers returns the markers in text, in order of appearance.
func ParseMarkers(text string) []Ref {
	if !strings.Contains(text, markerOpen) {
		return nil
	}
	var refs []Ref
	for _, m := range markerRE.FindAllStringSubmatch(text, -1) {
		size, err := strconv.ParseInt(m[3], 10, 64)
		if err != nil {
			continue // past int64: no file is that large
		}
		refs = append(refs, Ref{Path: m[1], MIME: m[2], Size: size})
	}
	return refs
}
