package anthropicmsg

import "math"

// Image cost rule of the Messages API: an image costs about
// width*height/750 tokens after the API scales it down so that its long
// edge is at most 1568 pixels and its area at most about 1.15 megapixels;
// so no image costs more than about 1600 tokens. An image of unknown size
// (a URL or file reference, or a format without a registered decoder, such
// as WebP) is charged that maximum.
const (
	imagePixelsPerToken = 750
	imageMaxEdge        = 1568
	imageMaxPixels      = 1_192_464 // 1092 x 1092
	ImageMaxTokens      = (imageMaxPixels + imagePixelsPerToken - 1) / imagePixelsPerToken
)

// ImageTokens returns the cost of a w x h image (0 x 0: unknown).
func ImageTokens(w, h int) int {
	if w <= 0 || h <= 0 {
		return ImageMaxTokens
	}
	fw, fh := float64(w), float64(h)
	if long := max(fw, fh); long > imageMaxEdge {
		fw, fh = fw*imageMaxEdge/long, fh*imageMaxEdge/long
	}
	if px := fw * fh; px > imageMaxPixels {
		s := math.Sqrt(imageMaxPixels / px)
		fw, fh = fw*s, fh*s
	}
	return min(max(int(math.Ceil(fw*fh/imagePixelsPerToken)), 1), ImageMaxTokens)
}
