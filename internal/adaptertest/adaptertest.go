// Package adaptertest drives the tests that every SDK adapter runs: the
// degradation ladder, repeated trims, and the budget sweeps of its
// property tests, so that each adapter's tests keep only what is specific
// to its SDK: the conversation generators and the checks on native values.
package adaptertest

import (
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
)

// Seeds returns fixed followed by n derived seeds of growing length, so a
// test covers hand-picked shapes and a spread of generated ones.
func Seeds(fixed [][]byte, n int) [][]byte {
	seeds := append([][]byte(nil), fixed...)
	for s := range n {
		b := make([]byte, 8+s)
		for i := range b {
			b[i] = byte((s*37 + i*13 + i*i*s) % 253)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// Budgets returns budgets from 1 to a little above total (a conversation's
// size) in about steps steps; a third as many under the race detector:
// the sweeps are single-goroutine logic that the plain test run covers in
// full, and the detector finds a race in any of their trims, at some ten
// times the cost.
func Budgets(total, steps int) []int {
	if race.Enabled && steps > 6 {
		steps /= 3
	}
	var out []int
	for budget := 1; budget <= total+5; budget += 1 + total/max(steps, 1) {
		out = append(out, budget)
	}
	return out
}

// Sweep runs check as a subtest for every option set and for the Budgets
// of total in about 20 steps. A failing subtest logs the seed and the
// option set's index.
func Sweep(t *testing.T, seed []byte, total int, optSets [][]history.Option, check func(t *testing.T, budget int, opts []history.Option)) {
	t.Helper()
	for o, opts := range optSets {
		for _, budget := range Budgets(total, 20) { // 6 under the race detector
			t.Run("", func(t *testing.T) {
				defer func() {
					if t.Failed() {
						t.Logf("seed %v, options %d", seed, o)
					}
				}()
				check(t, budget, opts)
			})
		}
	}
}
