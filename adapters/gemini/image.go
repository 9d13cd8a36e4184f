package gemini

import (
	"bytes"
	"image"
	_ "image/gif"  // register GIF headers for imageSize
	_ "image/jpeg" // register JPEG headers for imageSize
	_ "image/png"  // register PNG headers for imageSize
)

// imageSize returns the dimensions of a PNG, JPEG or GIF image from its
// header, without decoding the pixels; 0, 0 (unknown) for anything else.
func imageSize(data []byte) (width, height int) {
	if len(data) == 0 {
		return 0, 0
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}
