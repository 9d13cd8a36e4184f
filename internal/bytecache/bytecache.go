// Package bytecache keeps values by the exact bytes they were made from,
// for the codecs that read and rewrite the messages a client resends on
// every request (package wire's, the adapters' registered with it): a
// bounded map whose key is the bytes themselves, so that a hit is equal
// bytes, never a hash collision.
package bytecache

import "sync"

// DefaultBound is the bound of a Cache whose Bound is 0: 64 MiB.
const DefaultBound = 64 << 20

// Cache keeps values of type T by the bytes they were made from, each
// counted at the size its Add says (its key's and what the value holds of
// its own); past Bound bytes it starts afresh, so that a client's
// messages are read once more, never an unbounded memory. The zero value
// is ready; it is safe for concurrent use. A value is shared by every
// caller that finds it: it must not be written to.
type Cache[T any] struct {
	// Bound is the most bytes kept; 0 is DefaultBound.
	Bound int

	mu    sync.Mutex
	m     map[string]T
	bytes int
}

// Get returns the value kept for key, if any.
func (c *Cache[T]) Get(key []byte) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[string(key)]
	return v, ok
}

// Add keeps v for key (a copy of key), counted as size bytes; a value
// larger than the bound is not kept.
func (c *Cache[T]) Add(key []byte, v T, size int) {
	bound := c.Bound
	if bound <= 0 {
		bound = DefaultBound
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if size < 0 || size > bound {
		return
	}
	if c.m == nil || c.bytes+size > bound {
		c.m, c.bytes = map[string]T{}, 0
	}
	c.m[string(key)] = v
	c.bytes += size
}

// Reset forgets every value.
func (c *Cache[T]) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.bytes = nil, 0
}
