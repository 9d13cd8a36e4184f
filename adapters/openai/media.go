package openai

import "github.com/histrim/history/internal/media"

// imageInfo returns the size and media type of an image given as a base64
// data URL ("data:image/png;base64,..."), reading only as much of the
// payload as the image header needs. For other URLs, or formats without a
// registered decoder (WebP), the size is 0x0: unknown.
func imageInfo(url string) (w, h int, mime string) {
	data, mime, ok := media.DataURL(url)
	if !ok {
		return 0, 0, ""
	}
	w, h = media.ImageSizeBase64(data)
	return w, h, mime
}

// dataInfo returns the media type and decoded size of a file given as a
// data URL or as bare base64. An empty s (a file referenced by ID) has an
// unknown size, 0.
func dataInfo(s string) (mime string, size int64) {
	if data, m, ok := media.DataURL(s); ok {
		return m, media.Base64Size(data)
	}
	return "", media.Base64Size(s)
}
