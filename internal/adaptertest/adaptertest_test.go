package adaptertest

import (
	"slices"
	"testing"

	"github.com/histrim/history"
)

func TestSeeds(t *testing.T) {
	fixed := [][]byte{{1, 2}, {3}}
	got := Seeds(fixed)
	if len(got) != 14 || !slices.Equal(got[0], fixed[0]) || !slices.Equal(got[1], fixed[1]) {
		t.Fatalf("fixed seeds not first: %v", got[:2])
	}
	for i, s := range got[2:] {
		if len(s) != 8+i {
			t.Fatalf("derived seed %d has length %d, want %d", i, len(s), 8+i)
		}
	}
	if !slices.EqualFunc(got, Seeds(fixed), slices.Equal) {
		t.Fatal("Seeds is not deterministic")
	}
}

func TestSweep(t *testing.T) {
	sets := [][]history.Option{{history.WithStepTrim()}, nil}
	var calls []int
	Sweep(t, nil, 40, sets, func(t *testing.T, budget int, opts []history.Option) {
		calls = append(calls, budget)
	})
	// budgets 1, 4, 7, ..., 43 (step 1+40/20 = 3) for each of 2 option sets
	want := 2 * len(slices.Collect(func(yield func(int) bool) {
		for b := 1; b <= 45; b += 3 {
			if !yield(b) {
				return
			}
		}
	}))
	if len(calls) != want || calls[0] != 1 || calls[len(calls)-1] < 40 {
		t.Fatalf("calls %v, want %d budgets from 1 to above 40", calls, want)
	}
}
