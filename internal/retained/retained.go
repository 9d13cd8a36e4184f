// Package retained checks, for the tests of package wire and of the
// adapters registered with it, that nothing a Transport keeps past a
// request (conversations, memos, caches, events) holds the bytes of the
// request's body once the request is done: the Transport reads the next
// request's body into that memory.
package retained

import (
	"runtime"
	"sync"
	"testing"
	"weak"

	"github.com/histrim/history/internal/wireapi"
)

// Watch has every request body a Transport is done with held weakly
// (wireapi.Released) instead of kept for reuse, until t ends, and returns
// check: it runs the collector and fails t for each of those bodies that
// is still reachable, then returns how many bodies it watched. Call it
// before any request, from a test that does not run in parallel.
func Watch(t testing.TB) (check func() int) {
	t.Helper()
	var (
		mu   sync.Mutex
		held []weak.Pointer[byte]
	)
	wireapi.Released = func(body []byte) {
		if cap(body) == 0 {
			return
		}
		mu.Lock()
		held = append(held, weak.Make(&body[:1][0]))
		mu.Unlock()
	}
	t.Cleanup(func() { wireapi.Released = nil })
	return func() int {
		t.Helper()
		runtime.GC()
		runtime.GC()
		mu.Lock()
		defer mu.Unlock()
		alive := 0
		for _, w := range held {
			if w.Value() != nil {
				alive++
			}
		}
		if alive > 0 {
			t.Errorf("%d of %d request bodies the Transport was done with are still reachable: something it keeps holds their bytes", alive, len(held))
		}
		return len(held)
	}
}
