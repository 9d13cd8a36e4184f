//go:build race

// Package race reports whether the binary is built with the race detector,
// for the tests that run fewer cases under it: their property sweeps and
// corpus checks are single-goroutine logic that the plain run covers in
// full, and the detector finds a race in any of their trims, at some ten
// times the cost.
package race

// Enabled reports whether the race detector is on.
const Enabled = true
