package adaptertest

import (
	"slices"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
)

func TestSeeds(t *testing.T) {
	fixed := [][]byte{{1, 2}, {3}}
	got := Seeds(fixed, 12)
	if len(got) != 14 || !slices.Equal(got[0], fixed[0]) || !slices.Equal(got[1], fixed[1]) {
		t.Fatalf("fixed seeds not first: %v", got[:2])
	}
	for i, s := range got[2:] {
		if len(s) != 8+i {
			t.Fatalf("derived seed %d has length %d, want %d", i, len(s), 8+i)
		}
	}
	if !slices.EqualFunc(got, Seeds(fixed, 12), slices.Equal) {
		t.Fatal("Seeds is not deterministic")
	}
	if got := Seeds(nil, 0); len(got) != 0 {
		t.Errorf("Seeds(nil, 0) = %v, want none", got)
	}
}

func TestBudgets(t *testing.T) {
	tests := []struct {
		total, steps int
		want         []int
		reason       string
	}{
		{40, 20, []int{1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34, 37, 40, 43}, "step 1+40/20 = 3, up to total+5"},
		{3, 20, []int{1, 2, 3, 4, 5, 6, 7, 8}, "a small total goes one by one"},
		{0, 0, []int{1, 2, 3, 4, 5}, "no steps counts as one"},
	}
	if race.Enabled {
		// A third of the steps: 1+40/6 = 7; the others have fewer than 7.
		tests[0].want, tests[0].reason = []int{1, 8, 15, 22, 29, 36, 43}, "under the race detector, step 1+40/6 = 7"
	}
	for _, tc := range tests {
		if got := Budgets(tc.total, tc.steps); !slices.Equal(got, tc.want) {
			t.Errorf("Budgets(%d, %d) = %v, want %v (%s)", tc.total, tc.steps, got, tc.want, tc.reason)
		}
	}
}

func TestSweep(t *testing.T) {
	sets := [][]history.Option{{history.WithStepTrim()}, nil}
	var calls []int
	Sweep(t, nil, 40, sets, func(t *testing.T, budget int, opts []history.Option) {
		calls = append(calls, budget)
	})
	want := slices.Concat(Budgets(40, 20), Budgets(40, 20))
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want the budgets of 40 for each of 2 option sets", calls)
	}
}
