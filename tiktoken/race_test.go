//go:build race

package tiktoken

// raceEnabled reports whether the tests run under the race detector: then
// the corpus-wide checks run on a share of the corpus (the plain run covers
// all of it; the detector finds a race on a few sessions as on all, at some
// ten times the cost).
const raceEnabled = true
