package history

// This file owns what a part costs: an image by its size and detail, a
// file by its size and type, text by the Counter's rule (PartTokens).

import (
	"math"
	"strings"
)

// Image and file cost rules (see docs/tokens.md).
const (
	// imageLowDetail is the flat cost of a low-detail image, and the base
	// cost added to the tiles of a high-detail one (OpenAI's published rule).
	imageLowDetail = 85
	imageTile      = 170
	imageTileSide  = 512 // pixels
	// imageUnknown is the cost of an image whose size is unknown: a
	// 1024x1024 high-detail image (4 tiles).
	imageUnknown = imageLowDetail + 4*imageTile
	// fileUnknown is the cost of a file whose size is unknown.
	fileUnknown = 1000
	// textFileBytesPerToken and binaryFileBytesPerToken turn a file's
	// size into tokens: text-like files are read as text; other files
	// (PDF, office documents) are dominated by compressed payload that
	// providers turn into far fewer tokens per byte.
	textFileBytesPerToken   = 4
	binaryFileBytesPerToken = 32
)

// PartTokens returns the token cost of one part, using text to count text
// and reasoning. The rules, shared by [Heuristic] and the exact counters:
//   - Tokens > 0: exactly Tokens, whatever the type, up to math.MaxInt.
//     Zero or less means unknown: the rules below apply.
//   - text, reasoning: text(p.Text); a negative count from text is treated
//     as zero.
//   - image: [ImageTokens](p.Width, p.Height, p.Detail).
//   - file: Size/4 for text-like media types (text/*, JSON, XML, YAML, CSV),
//     Size/32 otherwise, rounded up, and saturated at math.MaxInt; 1000
//     when Size is zero or less (unknown).
//
// A nil text means [EstimateText]. Unknown types cost 0. The result is never
// negative.
func PartTokens(p Part, text func(string) int) int {
	if p.Tokens > 0 {
		return p.Tokens
	}
	if text == nil {
		text = EstimateText
	}
	switch p.Type {
	case PartText, PartReasoning:
		return clampCount(text(p.Text))
	case PartImage:
		return ImageTokens(p.Width, p.Height, p.Detail)
	case PartFile:
		return fileTokens(p.Size, p.MIMEType)
	}
	return 0
}

// ImageTokens returns the cost of an image of width x height pixels at the
// given detail, by OpenAI's published tile rule. "low" detail (in any case)
// is a flat 85 tokens. Any other detail ("high", "auto", "") is high: the
// image is scaled down, keeping its aspect ratio, to fit within 2048x2048,
// then so that its shorter side is at most 768 pixels; each side is rounded
// to the nearest pixel, and never below 1; the image costs 85 plus 170 for
// every 512x512 tile needed to cover it.
//
// A high-detail image costs from 255 (one tile: any image up to 512x512,
// down to 1x1) to 1445 (4x2 tiles, 2048x768 once scaled). A huge image costs
// what its scaled-down copy costs (math.MaxInt x math.MaxInt: 765), and an
// extreme aspect ratio keeps at least one tile across its thin side (10000x1
// scales to 2048x1: 765, never less than 1x1). A width or height of zero or
// less means unknown and costs 765, the price of a 1024x1024 image.
func ImageTokens(width, height int, detail string) int {
	if strings.EqualFold(detail, "low") {
		return imageLowDetail
	}
	if width <= 0 || height <= 0 {
		return imageUnknown
	}
	// float64 holds any int to within a part in 2^53, and every product
	// below stays within [0, 2048], so nothing overflows.
	w, h := float64(width), float64(height)
	if w > 2048 || h > 2048 {
		s := 2048 / max(w, h)
		w, h = w*s, h*s
	}
	if short := min(w, h); short > 768 {
		s := 768 / short
		w, h = w*s, h*s
	}
	// A side scaled below half a pixel still covers a tile.
	tw := max(int(w+0.5), 1)
	th := max(int(h+0.5), 1)
	tiles := ceilDiv(tw, imageTileSide) * ceilDiv(th, imageTileSide)
	return imageLowDetail + imageTile*tiles
}

// fileTokens is the size rule of PartTokens: ceil(size/per), computed
// without overflow and saturated at math.MaxInt (an int64 size exceeds int
// on 32-bit platforms).
func fileTokens(size int64, mime string) int {
	if size <= 0 {
		return fileUnknown
	}
	per := int64(binaryFileBytesPerToken)
	if textLike(mime) {
		per = textFileBytesPerToken
	}
	n := size / per
	if size%per != 0 {
		n++
	}
	if n > math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}

// textLike reports whether a media type is read as text. It ignores ASCII
// case without allocating (the Heuristic never allocates), in time linear in
// len(mime).
func textLike(mime string) bool {
	if len(mime) >= 5 && strings.EqualFold(mime[:5], "text/") {
		return true
	}
	for _, s := range [...]string{"json", "xml", "yaml", "csv", "javascript", "x-sh", "x-python"} {
		for i := 0; i+len(s) <= len(mime); i++ {
			if mime[i]|0x20 == s[0] && strings.EqualFold(mime[i:i+len(s)], s) {
				return true
			}
		}
	}
	return false
}

// ceilDiv returns ceil(a/b) for a >= 0 and b > 0, without overflow.
func ceilDiv(a, b int) int { return a/b + min(a%b, 1) }
