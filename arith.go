// This file owns the library's integer arithmetic on token counts: sums that
// saturate at the int range instead of wrapping, and the
// clamping of counts that come from callers (Counters, Part.Tokens, sizes).

package history

import "math"

// satAdd returns a+b, saturated to [math.MinInt, math.MaxInt].
func satAdd(a, b int) int {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt
	}
	return s
}

// clampCount returns n as a token count: negative values (a Counter that
// misbehaves) count as zero.
func clampCount(n int) int { return max(n, 0) }
