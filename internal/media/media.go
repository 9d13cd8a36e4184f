// Package media reads what token counting needs from inline media (image
// dimensions, decoded sizes) without decoding payloads. It is shared by the
// command-line tool and the SDK adapters, which all meet base64 images and
// data URLs.
package media

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/gif"  // register GIF for image.DecodeConfig
	_ "image/jpeg" // register JPEG for image.DecodeConfig
	_ "image/png"  // register PNG for image.DecodeConfig
	"io"
	"strings"
)

// ImageSize returns the dimensions of a PNG, JPEG or GIF image from its
// header, without decoding the pixels; 0, 0 (unknown) for anything else.
func ImageSize(data []byte) (width, height int) {
	return imageSize(bytes.NewReader(data))
}

// ImageSizeBase64 is ImageSize for standard base64 text (padding optional).
// Only as much of s as the header needs is decoded.
func ImageSizeBase64(s string) (width, height int) {
	s = strings.TrimRight(s, "=")
	return imageSize(base64.NewDecoder(base64.RawStdEncoding, strings.NewReader(s)))
}

func imageSize(r io.Reader) (width, height int) {
	cfg, _, err := image.DecodeConfig(r)
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}

// DataURL splits an RFC 2397 base64 data URL ("data:image/png;base64,...")
// into its payload and media type; ok is false for any other URL, including
// data URLs that are not base64.
func DataURL(url string) (b64, mime string, ok bool) {
	rest, found := strings.CutPrefix(url, "data:")
	if !found {
		return "", "", false
	}
	meta, payload, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mime, isBase64 := strings.CutSuffix(meta, ";base64")
	if !isBase64 {
		return "", "", false
	}
	mime, _, _ = strings.Cut(mime, ";")
	return payload, mime, true
}

// Base64Size returns the decoded length of standard base64 text s, without
// decoding it.
func Base64Size(s string) int64 {
	n := int64(len(s)) * 3 / 4
	switch {
	case strings.HasSuffix(s, "=="):
		n -= 2
	case strings.HasSuffix(s, "="):
		n--
	}
	return max(n, 0)
}
