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

// TestCacheConcurrent is run under -race, with every key stable too (each
// a new slice: a value is kept by many addresses, within the bound).
func TestCacheConcurrent(t *testing.T) {
	for _, stable := range []bool{false, true} {
		if stable {
			was := Stable
			Stable = func([]byte) bool { return true }
			defer func() { Stable = was }()
		}
		cacheConcurrent(t)
	}
}

func cacheConcurrent(t *testing.T) {
	c := Cache[string]{Bound: 4 << 10}
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
	if c.bytes > c.Bound {
		t.Fatalf("%d bytes kept, over the bound %d", c.bytes, c.Bound)
	}
}

// TestCacheStable: a value kept for stable bytes is found by their
// address (an entry placed at it answers), bytes equal to them elsewhere
// and a shorter run at the address by their bytes; a new value Added for
// the same bytes replaces the one at the address; the address is counted
// against the bound and forgotten with the rest.
func TestCacheStable(t *testing.T) {
	frozen := []byte(`{"role":"user","content":"kept"}`) // the wire's copy of an array, say
	was := Stable
	Stable = func(b []byte) bool { return len(b) == len(frozen) && &b[0] == &frozen[0] }
	defer func() { Stable = was }()

	var c Cache[string]
	c.Add(frozen, "v1", len(frozen))
	if e, ok := c.at[&frozen[0]]; !ok || e.v != "v1" || c.bytes != 2*len(frozen)+stableCost {
		t.Fatalf("stable bytes added: at %+v, %d bytes counted", c.at, c.bytes)
	}
	c.at[&frozen[0]] = stableEntry[string]{"by address", len(frozen)}
	if v, _ := c.Get(frozen); v != "by address" {
		t.Fatalf("Get(stable bytes) = %q, found by their bytes", v)
	}
	for _, b := range [][]byte{[]byte(string(frozen)), frozen[:len(frozen)-1]} {
		if v, _ := c.Get(b); v == "by address" {
			t.Fatalf("Get(%s) found the value at the stable address", b)
		}
	}
	c.Add(frozen, "v2", len(frozen))
	if v, _ := c.Get(frozen); v != "v2" {
		t.Fatalf("after a new value for the same bytes, Get = %q", v)
	}
	if len(c.at) != 1 {
		t.Fatalf("%d addresses kept, want the stable one alone", len(c.at))
	}

	var g Cache[string] // stable bytes found first by their bytes, then by their address
	g.Add([]byte(string(frozen)), "v", len(frozen))
	if v, ok := g.Get(frozen); !ok || v != "v" || len(g.at) != 1 {
		t.Fatalf("Get(stable bytes) = %q, %v; %d addresses kept", v, ok, len(g.at))
	}

	small := Cache[string]{Bound: len(frozen) + 10} // room for the value, not for the address
	small.Add(frozen, "v", len(frozen))
	if len(small.at) != 0 || small.bytes > small.Bound {
		t.Fatalf("past the bound: %d addresses, %d bytes", len(small.at), small.bytes)
	}
	c.Reset()
	if _, ok := c.Get(frozen); ok || c.at != nil {
		t.Fatal("Reset kept the value at the stable address")
	}
}
