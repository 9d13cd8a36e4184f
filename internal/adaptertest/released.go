package adaptertest

import (
	"runtime"
	"testing"

	"github.com/histrim/history/internal/race"
)

// ReleasedBytes is the live heap a request may leave behind, on average,
// in Released: far below what a request holds (its messages and their
// conversion), far above what the runtime's own caches leave.
const ReleasedBytes = 2 << 10

// Released checks that what a framework module keeps per request does not
// outlive the request when it fails: it runs request(i) for i from 0 to
// n (a fifth of that under the race detector), each a request through
// the framework that ends in an error (request fails t if it does not),
// and checks that afterwards held (when not nil: the module's own count
// of the requests it keeps state for) is 0, that the goroutines are no
// more than after the first quarter (give or take a few: idle
// connections), and that the live heap grew by less than ReleasedBytes
// per request between the two. It must not run in parallel with other
// tests, whose allocations it would count.
func Released(t *testing.T, n int, request func(i int), held func() int) {
	t.Helper()
	if race.Enabled {
		n /= 5
	}
	warm := max(n/4, 1)
	for i := range warm {
		request(i)
	}
	heap0, routines0 := live()
	for i := warm; i < n; i++ {
		request(i)
	}
	heap1, routines1 := live()
	grew := int64(heap1) - int64(heap0)
	t.Logf("%d failed requests: live heap %+d bytes (%.0f a request), goroutines %d -> %d", n-warm, grew, float64(grew)/float64(n-warm), routines0, routines1)
	if held != nil {
		if k := held(); k != 0 {
			t.Errorf("%d requests failed and ended, the module still keeps state for %d", n, k)
		}
	}
	if routines1 > routines0+8 {
		t.Errorf("goroutines grew from %d to %d over %d failed requests", routines0, routines1, n-warm)
	}
	if grew > int64(ReleasedBytes*(n-warm)) {
		t.Errorf("the live heap grew by %d bytes over %d failed requests, %d a request (bound %d)", grew, n-warm, grew/int64(n-warm), ReleasedBytes)
	}
}

// live returns the live heap after a collection, and the goroutines.
func live() (heap uint64, goroutines int) {
	runtime.GC()
	runtime.GC() // finalizers and cleanups queued by the first run
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, runtime.NumGoroutine()
}
