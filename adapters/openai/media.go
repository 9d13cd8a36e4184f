package openai

import (
	"encoding/base64"
	"image"
	_ "image/gif" // register decoders for image.DecodeConfig
	_ "image/jpeg"
	_ "image/png"
	"strings"
)

// imageInfo returns the size and media type of an image given as a base64
// data URL ("data:image/png;base64,..."), reading only as much of the
// payload as the image header needs. For other URLs, or formats without a
// registered decoder (WebP), the size is 0x0: unknown.
func imageInfo(url string) (w, h int, mime string) {
	mime, data, ok := parseDataURL(url)
	if !ok {
		return 0, 0, ""
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)))
	if err != nil || cfg.Width < 0 || cfg.Height < 0 {
		return 0, 0, mime
	}
	return cfg.Width, cfg.Height, mime
}

// dataInfo returns the media type and decoded size of a file given as a
// data URL or as bare base64. An empty s (a file referenced by ID) has an
// unknown size, 0.
func dataInfo(s string) (mime string, size int64) {
	if m, data, ok := parseDataURL(s); ok {
		return m, base64Size(data)
	}
	return "", base64Size(s)
}

// parseDataURL splits "data:<mime>;base64,<data>".
func parseDataURL(s string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(s, "data:")
	if !found {
		return "", "", false
	}
	head, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mime, isBase64 := strings.CutSuffix(head, ";base64")
	if !isBase64 {
		return "", "", false
	}
	return mime, data, true
}

// base64Size returns the decoded length of base64 text s, without decoding.
func base64Size(s string) int64 {
	n := int64(len(s)) * 3 / 4
	switch {
	case strings.HasSuffix(s, "=="):
		n -= 2
	case strings.HasSuffix(s, "="):
		n--
	}
	return max(n, 0)
}
