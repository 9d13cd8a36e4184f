package race

import (
	"slices"
	"testing"
)

func TestSample(t *testing.T) {
	ten := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	cases := []struct {
		name  string
		on    bool
		cases []int
		n     int
		want  []int
	}{
		{"plain run: every case", false, ten, 3, ten},
		{"race: first and last, evenly between", true, ten, 4, []int{0, 3, 6, 9}},
		{"race: two is first and last", true, ten, 2, []int{0, 9}},
		{"race: one is the first", true, ten, 1, []int{0}},
		{"race: n under one reads as one", true, ten, 0, []int{0}},
		{"race: no more cases than n, all of them", true, ten[:3], 3, ten[:3]},
		{"race: none", true, nil, 3, nil},
	}
	for _, tc := range cases {
		if got := sample(tc.on, tc.cases, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Sample(ten, 4); Enabled != (len(got) == 4) {
		t.Errorf("Sample under race=%v returned %d cases", Enabled, len(got))
	}
}
