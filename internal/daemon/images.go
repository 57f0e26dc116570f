package daemon

import (
	"errors"
	"log/slog"

	"github.com/deltaharness/delta/internal/vision"
)

// saveImage keeps an MCP image result in the workspace (media/YYYY-MM-DD/)
// as a verified image and gives the tool result its marker. The type comes
// from the bytes; the server's claimed MIME type is not trusted.
func saveImage(images *vision.Registry) func(name, mime string, data []byte) (string, error) {
	return func(name, _ string, data []byte) (string, error) {
		info, err := images.SaveMedia(name, data)
		if err != nil {
			return "", err
		}
		return info.Marker(), nil
	}
}

// verifyUpload records an uploaded file as a verified image when its bytes
// are one; any other file is left alone.
func verifyUpload(images *vision.Registry, logger *slog.Logger) func(rel string) {
	return func(rel string) {
		if _, err := images.Verify(rel); err != nil && !errors.Is(err, vision.ErrNotImage) {
			logger.Warn("verify uploaded image", "path", rel, "err", err)
		}
	}
}
