//go:build !race

package adaptertest

// Race reports whether the tests run under the race detector; then the
// sweeps run fewer budgets (see Budgets).
const Race = false
