package race

// CorpusFile reports whether a test reads a file of the shared corpus of
// size bytes: every file in the plain run; under the race detector, only
// the files under 64 KiB (48 of the 61 sessions, a fifth of the
// corpus's bytes). A corpus test's calls are the same on a short session
// as on a long one, and the detector checks the calls; the plain run (the
// README's go test ./...) checks every session's numbers.
func CorpusFile(size int64) bool {
	return !Enabled || size < 64<<10
}
