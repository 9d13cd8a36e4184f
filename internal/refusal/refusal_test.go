package refusal

import "testing"

func TestRatio(t *testing.T) {
	half := func(b int) int { return b / 2 } // a provider counting 2x
	zero := func(int) int { return 0 }
	tests := []struct {
		name                string
		used, sent, planned int
		budget              func(int) int
		want                float64
	}{
		{"the count the provider stated, over what was sent", 1500, 1000, 800, half, 1.5},
		{"a stated count without what was sent: the Calibration's conversion", 1500, 0, 800, half, 2},
		{"no stated count: the Calibration's conversion of the planned budget", 0, 1000, 800, half, 2},
		{"a conversion of zero: the most a provider may count", 0, 1000, 800, zero, MaxRatio},
		{"neither: 1", 0, 1000, 0, half, 1},
		{"a stated count far above what was sent: bounded", 100_000, 10, 0, half, MaxRatio},
		{"a stated count far below what was sent: bounded", 1, 1000, 0, half, MinRatio},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Ratio(tt.used, tt.sent, tt.planned, tt.budget); got != tt.want {
				t.Errorf("Ratio(%d, %d, %d) = %v, want %v", tt.used, tt.sent, tt.planned, got, tt.want)
			}
		})
	}
}

func TestAllowed(t *testing.T) {
	tests := []struct {
		name       string
		target     int
		ratio      float64
		limit      int
		calibrated bool
		want       float64
	}{
		{"calibrated, a stated limit: the limit, with no margin of its own", 900, 2, 1000, true, 1000},
		{"calibrated, no stated limit: the target in the provider's units", 900, 2, 0, true, 1800},
		{"not calibrated: the target, whatever the provider stated", 900, 1, 1000, false, 900},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Allowed(tt.target, tt.ratio, tt.limit, tt.calibrated); got != tt.want {
				t.Errorf("Allowed(%d, %v, %d, %v) = %v, want %v", tt.target, tt.ratio, tt.limit, tt.calibrated, got, tt.want)
			}
		})
	}
}
