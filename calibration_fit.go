// This file owns the Calibration's fit: the scale, overhead and spread of
// the provider's count against ours, over the observations it holds, and
// the tests that tell a new scale from noise.

package history

import "math"

// calibrationFit is the fitted model: P = scale×S + overhead; margin, the
// largest under-estimate of the window (tokens); rmin and rmax, the
// smallest and largest ratio P/S in the window.
type calibrationFit struct {
	ok                      bool
	scale, overhead, margin float64
	rmin, rmax              float64
	spread                  float64 // the range of the relative errors of the fit
	maxReported             int
}

// scales reports whether held observations look like a real count rather
// than a truncated one: sizes at least 10% apart, ratios within 5%.
func scales(obs []observation) bool {
	slo, shi := math.Inf(1), 0.0
	rlo, rhi := math.Inf(1), 0.0
	for _, o := range obs {
		s, r := float64(o.sent), float64(o.reported)/float64(o.sent)
		slo, shi = min(slo, s), max(shi, s)
		rlo, rhi = min(rlo, r), max(rhi, r)
	}
	return shi >= 1.1*slo && rhi <= 1.05*rlo
}

// spans reports whether the sizes of obs span affineSpread, so that they
// can tell a scale from an overhead.
func spans(obs []observation) bool {
	lo, hi := math.MaxInt, 0
	for _, o := range obs {
		lo, hi = min(lo, o.sent), max(hi, o.sent)
	}
	return float64(hi) >= affineSpread*float64(lo)
}

// fitCalibration fits P = scale×S + overhead to obs by least squares and
// measures the margin (the largest amount by which the fit under-estimates
// an observation) and the range of ratios. The overhead is fitted only
// when the sizes span affineSpread, and kept only when it is sane: the
// scale positive, and predictions over the observed sizes above half of
// the scaled size; otherwise the fit goes through the origin.
func fitCalibration(obs []observation) calibrationFit {
	if len(obs) == 0 {
		return calibrationFit{}
	}
	// Plain comparisons rather than min and max, which order NaNs and
	// signed zeros: an observation is positive and finite (Observe).
	// The ratios are compared by cross-multiplication and divided once.
	var sx, sy, sxx, sxy float64
	lo, hi := math.Inf(1), math.Inf(-1)
	minY, minX := float64(obs[0].reported), float64(obs[0].sent) // rmin = minY/minX
	maxY, maxX := minY, minX
	f := calibrationFit{ok: true}
	for _, o := range obs {
		x, y := float64(o.sent), float64(o.reported)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
		if x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
		if y*minX < minY*x {
			minY, minX = y, x
		}
		if y*maxX > maxY*x {
			maxY, maxX = y, x
		}
		if o.reported > f.maxReported {
			f.maxReported = o.reported
		}
	}
	f.rmin, f.rmax = minY/minX, maxY/maxX
	n := float64(len(obs))
	if hi >= affineSpread*lo {
		den := n*sxx - sx*sx
		f.scale = (n*sxy - sx*sy) / den
		f.overhead = (sy - f.scale*sx) / n
	}
	if !(f.scale > 0) || math.IsNaN(f.overhead) || f.overhead < -0.5*f.scale*lo {
		f.scale, f.overhead = sxy/sxx, 0
	}
	// The margin is the largest under-estimate, the older half of the
	// window fading out linearly, so that an observation leaving the
	// window does not move the budget at once. The spread is the range of
	// the relative errors: a provider whose count varies with the content
	// will one day count more than any request seen. The relative errors,
	// under/reported, are compared by cross-multiplication.
	loU, loR, hiU, hiR, margin := 0.0, 1.0, 0.0, 1.0, 0.0
	for i, o := range obs {
		under := float64(o.reported) - (f.scale*float64(o.sent) + f.overhead)
		w := 1.0
		if age := len(obs) - 1 - i; 2*(calibrationWindow-age) < calibrationWindow {
			w = 2 * float64(calibrationWindow-age) / calibrationWindow
		}
		if m := under * w; m > margin {
			margin = m
		}
		rep := float64(o.reported)
		if i == 0 || under*loR < loU*rep {
			loU, loR = under, rep
		}
		if i == 0 || under*hiR > hiU*rep {
			hiU, hiR = under, rep
		}
	}
	f.margin, f.spread = margin, hiU/hiR-loU/loR
	return f
}
