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
	var sx, sy, sxx, sxy float64
	lo, hi := math.Inf(1), math.Inf(-1)
	f := calibrationFit{ok: true, rmin: math.Inf(1)}
	for _, o := range obs {
		x, y := float64(o.sent), float64(o.reported)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
		lo, hi = min(lo, x), max(hi, x)
		f.rmin, f.rmax = min(f.rmin, y/x), max(f.rmax, y/x)
		f.maxReported = max(f.maxReported, o.reported)
	}
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
	// will one day count more than any request seen.
	elo, ehi := math.Inf(1), math.Inf(-1)
	for i, o := range obs {
		under := float64(o.reported) - (f.scale*float64(o.sent) + f.overhead)
		age := len(obs) - 1 - i
		w := min(1, 2*float64(calibrationWindow-age)/calibrationWindow)
		f.margin = max(f.margin, under*w)
		e := under / float64(o.reported)
		elo, ehi = min(elo, e), max(ehi, e)
	}
	f.spread = ehi - elo
	return f
}
