// Package adaptertest drives the property tests that every SDK adapter
// runs against the degradation ladder, so that each adapter's test keeps
// only what is specific to its SDK: the conversation generators and the
// checks on native values.
package adaptertest

import (
	"testing"

	"github.com/histrim/history"
)

// Seeds returns fixed followed by 12 derived seeds of growing length, so a
// test covers hand-picked shapes and a spread of generated ones.
func Seeds(fixed [][]byte) [][]byte {
	seeds := append([][]byte(nil), fixed...)
	for s := range 12 {
		b := make([]byte, 8+s)
		for i := range b {
			b[i] = byte((s*37 + i*13 + i*i*s) % 253)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// Sweep runs check as a subtest for every option set and for budgets from 1
// to a little above total (the conversation's size) in about 20 steps. A
// failing subtest logs the seed and the option set's index.
func Sweep(t *testing.T, seed []byte, total int, optSets [][]history.Option, check func(t *testing.T, budget int, opts []history.Option)) {
	t.Helper()
	for o, opts := range optSets {
		for budget := 1; budget <= total+5; budget += 1 + total/20 {
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
