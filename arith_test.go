package history

import (
	"math"
	"testing"
)

func TestSaturatingArithmetic(t *testing.T) {
	tests := []struct {
		name      string
		got, want int
		reason    string
	}{
		{"add small", satAdd(2, 3), 5, "ordinary sums are exact"},
		{"add max", satAdd(math.MaxInt, 1), math.MaxInt, "overflow saturates at MaxInt"},
		{"add max+max", satAdd(math.MaxInt, math.MaxInt), math.MaxInt, "never wraps negative"},
		{"add min", satAdd(math.MinInt, -1), math.MinInt, "underflow saturates at MinInt"},
		{"add mixed", satAdd(math.MaxInt, math.MinInt), -1, "mixed signs cannot overflow"},
		{"clamp negative", clampCount(-7), 0, "a negative count is zero"},
		{"clamp positive", clampCount(7), 7, "a positive count is kept"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d (%s)", tc.name, tc.got, tc.want, tc.reason)
		}
	}
}
