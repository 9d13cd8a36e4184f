package race

// Sample returns the cases a single-goroutine sweep runs: all of them in
// the plain run; under the race detector, n of them (all when there are
// no more than n, and at least one), spread evenly over the slice, the
// first and the last included, in order. The choice depends only on
// len(cases) and n, so a sweep's race run checks the same cases every
// time. The plain run (the README's go test ./...) checks every case; the
// race run checks the calls, which are the same for every case.
func Sample[T any](cases []T, n int) []T {
	return sample(Enabled, cases, n)
}

func sample[T any](on bool, cases []T, n int) []T {
	n = max(n, 1)
	if !on || len(cases) <= n {
		return cases
	}
	if n == 1 {
		return cases[:1]
	}
	out := make([]T, 0, n)
	for i := range n {
		out = append(out, cases[i*(len(cases)-1)/(n-1)])
	}
	return out
}
