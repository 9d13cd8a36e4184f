// This file owns NewCache, the memoizing Counter.

package history

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"unsafe"
)

// DefaultCacheCapacity is the number of messages a cache made by [NewCache]
// holds when it is given a capacity of zero or less.
const DefaultCacheCapacity = 8192

// NewCache returns a [Counter] that memoizes c's per-message counts, so that a
// runtime which trims its history before every request tokenizes each
// message once, not once per request: with an exact counter, re-trimming a
// history with one new message costs one tokenization plus a lookup of
// each message, by the address of its text when it is the very string
// counted before (a runtime that keeps its transcript resends those), by
// a hash of every field otherwise.
//
// Entries are keyed by message content, not by position: every field of the
// [Message] (role, content, name, kind, tool-call ID, every tool call and every
// part) takes part in the key, so the same message anywhere in any history
// hits, and a changed message misses. A hit is verified by comparing the
// stored message with the one asked about, field by field, so a hash
// collision can never return another message's count. To make that
// comparison possible the cache keeps each cached message's strings
// reachable (it does not copy them; Parts and ToolCalls slices are cloned so
// later changes by the caller cannot alter a stored key).
//
// The cache holds at most capacity messages and evicts the least recently
// used one beyond that. A capacity of zero or less means
// [DefaultCacheCapacity]. Size it above the number of messages a trim
// counts (summed over the conversations sharing it): a trim counts newest
// first and stops at its cut, so that is the kept part and the newest
// dropped turns, not the whole history, and the kept tail, read on every
// trim, stays cached however long the history grows. Only a trim that counts
// everything (a history that fits, [WithFullCount], [RecoverOverflow]) over
// more messages than the capacity cycles through the cache in the same order
// every time, which least-recently-used eviction serves badly: size the
// capacity for those. A nil c means [Heuristic] (which is
// already cheaper than a cache lookup: caching pays off for exact counters).
// Pass the cache to every trim with [WithCounter].
//
// The returned Counter is safe for concurrent use if c is. c is called
// without the cache's lock held, so concurrent misses on different messages
// tokenize in parallel (two goroutines missing on the same message may both
// call c; they store the same count). Hits do not allocate. The hash seed is
// random per cache, which affects no result.
func NewCache(c Counter, capacity int) Counter {
	if c == nil {
		c = heuristic{}
	}
	if capacity <= 0 {
		capacity = DefaultCacheCapacity
	}
	return &cache{
		counter:  c,
		seed:     maphash.MakeSeed(),
		capacity: capacity,
		entries:  make(map[uint64]*cacheEntry, min(capacity, 1024)),
		byText:   make(map[*byte]*cacheEntry, min(capacity, 1024)),
	}
}

type cache struct {
	counter  Counter
	seed     maphash.Seed
	capacity int

	mu      sync.Mutex
	entries map[uint64]*cacheEntry
	// byText finds an entry by the memory of its message's text (see
	// textAddress): a runtime resends the very messages it sent before, whose
	// strings are the ones the entry keeps, so that a hit compares them
	// in constant time without hashing them.
	byText map[*byte]*cacheEntry
	// head is the most recently used entry, tail the least; the list is
	// intrusive so that a hit only relinks pointers.
	head, tail *cacheEntry
}

// cacheEntry is immutable after it is published in entries, except for its
// list links and alias, which only change under cache.mu.
type cacheEntry struct {
	key        uint64
	msg        Message // the key material, compared on every hit
	tokens     int
	prev, next *cacheEntry
	// alias is the text address of the latest equal message found by its
	// hash whose text lies elsewhere than msg's (a copy the core made
	// again, as an elided result's placeholder after a new plan), listed
	// in byText too, so that the next lookup of that message is by
	// address; nil when none.
	alias *byte
}

// CountMessage returns the count of m from the cache, or from the wrapped
// Counter on a miss.
func (c *cache) CountMessage(m Message) int {
	if p := textAddress(&m); p != nil {
		c.mu.Lock()
		e := c.byText[p]
		if e != nil {
			c.toFront(e)
		}
		c.mu.Unlock()
		// e.msg is immutable, and keeps the memory at p alive: no other
		// text can be there. The comparison is exact all the same (the
		// same memory may start a longer or shorter text).
		if e != nil && equal(&e.msg, &m) {
			return e.tokens
		}
	}
	return c.count(&m, c.hash(&m))
}

// textAddress returns the address of the first byte of m's text (its
// content, else its first part's, else its first call's arguments), or
// nil when it has none.
func textAddress(m *Message) *byte {
	switch {
	case m.Content != "":
		return unsafe.StringData(m.Content)
	case len(m.Parts) > 0 && m.Parts[0].Text != "":
		return unsafe.StringData(m.Parts[0].Text)
	case len(m.ToolCalls) > 0 && m.ToolCalls[0].Arguments != "":
		return unsafe.StringData(m.ToolCalls[0].Arguments)
	}
	return nil
}

func (c *cache) count(m *Message, key uint64) int {
	c.mu.Lock()
	e := c.entries[key]
	if e != nil {
		c.toFront(e)
	}
	c.mu.Unlock()
	// The comparison runs outside the lock: e.msg is immutable. For the
	// same message from the same history the strings share memory and
	// compare in constant time.
	if e != nil && equal(&e.msg, m) {
		if p := textAddress(m); p != nil && p != textAddress(&e.msg) {
			c.mu.Lock()
			if c.entries[key] == e && e.alias != p { // not evicted meanwhile; alias is c.mu's
				c.setAlias(e, p)
			}
			c.mu.Unlock()
		}
		return e.tokens
	}

	n := c.counter.CountMessage(*m)

	ne := &cacheEntry{key: key, msg: *m, tokens: n}
	ne.msg.Parts = slices.Clone(m.Parts)
	ne.msg.ToolCalls = slices.Clone(m.ToolCalls)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[key]; old != nil {
		if equal(&old.msg, m) {
			// Another goroutine stored it meanwhile.
			c.toFront(old)
			return n
		}
		// A different message with the same hash: the newer one replaces
		// it (either way, lookups stay exact).
		c.unlink(old)
		c.forgetText(old)
	}
	c.entries[key] = ne
	c.pushFront(ne)
	if p := textAddress(&ne.msg); p != nil {
		c.byText[p] = ne
	}
	for len(c.entries) > c.capacity {
		t := c.tail
		c.unlink(t)
		delete(c.entries, t.key)
		c.forgetText(t)
	}
	return n
}

// forgetText removes e from byText, where it is listed (by its text and
// its alias). The caller holds c.mu.
func (c *cache) forgetText(e *cacheEntry) {
	if p := textAddress(&e.msg); p != nil && c.byText[p] == e {
		delete(c.byText, p)
	}
	c.setAlias(e, nil)
}

// setAlias makes p e's alias in byText (nil: none), in place of the one it
// had. A key in byText keeps the memory at p alive (no other text can be
// there while it is listed), and a hit still compares the message whole.
// The caller holds c.mu.
func (c *cache) setAlias(e *cacheEntry, p *byte) {
	if e.alias != nil && c.byText[e.alias] == e {
		delete(c.byText, e.alias)
	}
	e.alias = p
	if p != nil {
		c.byText[p] = e
	}
}

func (c *cache) toFront(e *cacheEntry) {
	if c.head == e {
		return
	}
	c.unlink(e)
	c.pushFront(e)
}

func (c *cache) pushFront(e *cacheEntry) {
	e.prev, e.next = nil, c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}

func (c *cache) unlink(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// hash digests every field of m. Each string is preceded by its length and
// each variable-length list by its element count, so that different
// messages cannot produce the same byte stream by shifting text between
// fields.
func (c *cache) hash(m *Message) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	hashString(&h, string(m.Role))
	hashString(&h, m.Content)
	hashString(&h, m.Name)
	hashString(&h, string(m.Kind))
	hashString(&h, m.ToolCallID)
	hashInt(&h, uint64(len(m.ToolCalls)))
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		hashString(&h, tc.ID)
		hashString(&h, tc.Name)
		hashString(&h, tc.Arguments)
	}
	hashInt(&h, uint64(len(m.Parts)))
	for i := range m.Parts {
		p := &m.Parts[i]
		hashString(&h, string(p.Type))
		hashString(&h, p.Text)
		hashInt(&h, uint64(p.Tokens))
		hashInt(&h, uint64(p.Width))
		hashInt(&h, uint64(p.Height))
		hashString(&h, p.Detail)
		hashString(&h, p.MIMEType)
		hashInt(&h, uint64(p.Size))
	}
	return h.Sum64()
}

func hashString(h *maphash.Hash, s string) {
	hashInt(h, uint64(len(s)))
	h.WriteString(s)
}

func hashInt(h *maphash.Hash, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	h.Write(b[:])
}
