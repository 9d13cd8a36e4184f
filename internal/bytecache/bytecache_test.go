package bytecache

import (
	"fmt"
	"sync"
	"testing"
)

// TestCache: a value is found by equal bytes (not the same slice), a key
// changed after Add finds nothing changed, the bound starts the cache
// afresh and refuses a value larger than itself, Reset forgets.
func TestCache(t *testing.T) {
	var c Cache[int]
	c.Bound = 100
	key := []byte("abc")
	c.Add(key, 1, 10)
	key[0] = 'X' // the cache holds a copy
	if v, ok := c.Get([]byte("abc")); !ok || v != 1 {
		t.Fatalf("Get(abc) = %d, %v; want 1, true", v, ok)
	}
	if _, ok := c.Get(key); ok {
		t.Fatal("Get(Xbc) found a value never added")
	}
	c.Add([]byte("big"), 2, 101)
	if _, ok := c.Get([]byte("big")); ok {
		t.Fatal("a value over the bound was kept")
	}
	c.Add([]byte("d"), 3, 95) // 10 + 95 > 100: afresh
	if _, ok := c.Get([]byte("abc")); ok {
		t.Fatal("past the bound, an old value was kept")
	}
	if v, ok := c.Get([]byte("d")); !ok || v != 3 {
		t.Fatalf("Get(d) = %d, %v; want 3, true", v, ok)
	}
	c.Reset()
	if _, ok := c.Get([]byte("d")); ok {
		t.Fatal("Reset kept a value")
	}
}

// TestCacheConcurrent is run under -race.
func TestCacheConcurrent(t *testing.T) {
	var c Cache[string]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := []byte(fmt.Sprint(i % 17))
				if v, ok := c.Get(k); ok && v != string(k) {
					t.Errorf("goroutine %d: Get(%s) = %s", g, k, v)
				}
				c.Add(k, string(k), len(k))
			}
		}()
	}
	wg.Wait()
}
