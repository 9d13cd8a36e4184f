// Package bytecache keeps values by the exact bytes they were made from,
// for the codecs that read and rewrite the messages a client resends on
// every request (package wire's, the adapters' registered with it): a
// bounded map whose key is the bytes themselves, so that a hit is equal
// bytes, never a hash collision.
package bytecache

import "sync"

// DefaultBound is the bound of a Cache whose Bound is 0: 64 MiB.
const DefaultBound = 64 << 20

// Stable, set by package wire when it is initialised, reports whether b
// is a message of a request that lies in memory never written to while
// anyone holds it (the copy package wire keeps of a conversation's
// messages array, from which it gives a request the messages it resent as
// they came). A value kept for such bytes is also found by their address,
// without hashing and comparing them: a key that holds that address keeps
// the memory alive, and so the same bytes at it. Any other bytes (a
// request's own body, which is reused once the request is done) are not
// stable. Nil: none is.
var Stable func(b []byte) bool

// Cache keeps values of type T by the bytes they were made from, each
// counted at the size its Add says (its key's and what the value holds of
// its own); past Bound bytes it starts afresh, so that a client's
// messages are read once more, never an unbounded memory. A value kept
// for stable bytes (Stable) is found by their address too, the bytes that
// address keeps alive counted besides. The zero value is ready; it is
// safe for concurrent use. A value is shared by every caller that finds
// it: it must not be written to.
type Cache[T any] struct {
	// Bound is the most bytes kept; 0 is DefaultBound.
	Bound int

	mu    sync.Mutex
	m     map[string]T
	at    map[*byte]stableEntry[T]
	bytes int
}

// stableEntry is a value kept for the n stable bytes at an address.
type stableEntry[T any] struct {
	v T
	n int
}

// stableCost is what an address kept costs besides its bytes.
const stableCost = 48

// Get returns the value kept for key, if any.
func (c *Cache[T]) Get(key []byte) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(key) > 0 {
		if e, ok := c.at[&key[0]]; ok && e.n == len(key) {
			return e.v, true
		}
	}
	v, ok := c.m[string(key)]
	if ok {
		c.keepStable(key, v, false)
	}
	return v, ok
}

// Add keeps v for key (a copy of key), counted as size bytes; a value
// larger than the bound is not kept.
func (c *Cache[T]) Add(key []byte, v T, size int) {
	bound := c.bound()
	c.mu.Lock()
	defer c.mu.Unlock()
	if size < 0 || size > bound {
		return
	}
	if c.m == nil || c.bytes+size > bound {
		c.m, c.at, c.bytes = map[string]T{}, nil, 0
	}
	c.m[string(key)] = v
	c.bytes += size
	c.keepStable(key, v, true)
}

// keepStable keeps v by key's address too when key is stable and the
// bound leaves room for its bytes; an address kept already keeps its
// value unless replace is set (Add's new value for the same bytes). The
// caller holds c.mu.
func (c *Cache[T]) keepStable(key []byte, v T, replace bool) {
	if len(key) == 0 || Stable == nil {
		return
	}
	if e, ok := c.at[&key[0]]; ok {
		if replace && e.n == len(key) {
			c.at[&key[0]] = stableEntry[T]{v, len(key)}
		}
		return
	}
	if c.bytes+len(key)+stableCost > c.bound() || !Stable(key) {
		return
	}
	if c.at == nil {
		c.at = map[*byte]stableEntry[T]{}
	}
	c.at[&key[0]] = stableEntry[T]{v, len(key)}
	c.bytes += len(key) + stableCost
}

func (c *Cache[T]) bound() int {
	if c.Bound <= 0 {
		return DefaultBound
	}
	return c.Bound
}

// Reset forgets every value.
func (c *Cache[T]) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.at, c.bytes = nil, nil, 0
}
