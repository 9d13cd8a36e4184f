package eino

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/gif"  // register GIF headers for imageSize
	_ "image/jpeg" // register JPEG headers for imageSize
	_ "image/png"  // register PNG headers for imageSize
	"strings"
)

// headerLimit is how much base64 imageSize decodes: PNG and GIF headers
// are at the start, JPEG frame headers almost always within the first
// tens of kilobytes (after EXIF data).
const headerLimit = 64 << 10

// imageSize returns the dimensions of a base64 PNG, JPEG or GIF image from
// its header, without decoding the pixels or the whole payload; 0, 0
// (unknown) for anything else.
func imageSize(b64 string) (width, height int) {
	b64 = strings.TrimRight(b64, "=")
	if len(b64) > headerLimit {
		b64 = b64[:headerLimit]
	}
	b64 = b64[:len(b64)/4*4]
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(data) == 0 {
		return 0, 0
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}
