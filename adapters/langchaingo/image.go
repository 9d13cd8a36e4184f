package langchaingo

import (
	"bytes"
	"image"
	_ "image/gif"  // register GIF headers for imageSizeBytes
	_ "image/jpeg" // register JPEG headers for imageSizeBytes
	_ "image/png"  // register PNG headers for imageSizeBytes
)

// imageSizeBytes returns the dimensions of a PNG, JPEG or GIF image from its
// header, without decoding the pixels; 0, 0 (unknown) for anything else.
func imageSizeBytes(data []byte) (width, height int) {
	if len(data) == 0 {
		return 0, 0
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}
