// Package mediapart builds the history.Part that stands for a piece of media
// in a native message, from what the SDK gives: raw bytes, base64 text or
// a URL. Every adapter reads media the same way: an image's dimensions
// from its header (PNG, JPEG, GIF), a file's decoded size, nothing from a
// remote URL (its size is unknown, 0). The payload is never carried.
package mediapart

import (
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/media"
)

// IsImage reports whether mime is an image media type ("image/...", in any
// case).
func IsImage(mime string) bool {
	return len(mime) >= len("image/") && strings.EqualFold(mime[:len("image/")], "image/")
}

// Blob describes media given as raw bytes of media type mime: an image
// when mime is an image type, with the dimensions its header gives, a file
// of len(data) bytes otherwise. nil data stands for media referenced, not
// inline: dimensions and size are then unknown (0).
func Blob(mime string, data []byte) history.Part {
	if IsImage(mime) {
		w, h := media.ImageSize(data)
		return history.Part{Type: history.PartImage, MIMEType: mime, Width: w, Height: h}
	}
	return history.Part{Type: history.PartFile, MIMEType: mime, Size: int64(len(data))}
}

// Base64 describes media given as standard base64 text b64: an image when
// image is true or mime is an image type, with detail and the dimensions
// its header gives, a file of the decoded size otherwise. Only as much of
// b64 as an image header needs is decoded.
func Base64(mime, b64, detail string, image bool) history.Part {
	if image || IsImage(mime) {
		w, h := media.ImageSizeBase64(b64)
		return history.Part{Type: history.PartImage, MIMEType: mime, Detail: detail, Width: w, Height: h}
	}
	return history.Part{Type: history.PartFile, MIMEType: mime, Size: media.Base64Size(b64)}
}

// URL describes media referenced by url: a base64 data URL is read as
// Base64 is, its own media type standing in for an empty mime; any other
// URL is remote, an image (when image is true or mime is an image type)
// or a file of unknown dimensions and size.
func URL(url, mime, detail string, image bool) history.Part {
	if b64, dataMIME, ok := media.DataURL(url); ok {
		if mime == "" {
			mime = dataMIME
		}
		return Base64(mime, b64, detail, image)
	}
	if image || IsImage(mime) {
		return history.Part{Type: history.PartImage, MIMEType: mime, Detail: detail}
	}
	return history.Part{Type: history.PartFile, MIMEType: mime}
}
