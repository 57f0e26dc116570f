package vision

import "bytes"

// sniffLen is how much of a file Sniff needs.
const sniffLen = 16

// Sniff names the image type of b by its magic bytes: image/png,
// image/jpeg, image/gif or image/webp, or "" for anything else. These are
// the four types every wire accepts; the file name plays no part.
func Sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 16 && bytes.HasPrefix(b, []byte("RIFF")) && string(b[8:15]) == "WEBPVP8" &&
		(b[15] == ' ' || b[15] == 'L' || b[15] == 'X'):
		// RIFF, a length, then WEBP and the first chunk: VP8 (lossy),
		// VP8L (lossless) or VP8X (extended).
		return "image/webp"
	}
	return ""
}

// Ext is the file extension for a sniffed type, with its dot.
func Ext(mime string) string {
	switch mime {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	}
	return ""
}
