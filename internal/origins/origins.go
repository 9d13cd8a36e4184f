// Package origins records which backend wrote each opaque item of a
// conversation (an Anthropic thinking signature or compaction block, a
// Responses reasoning or compaction item), for the adapters' Retarget:
// only the backend that wrote an opaque item can read it back, so a
// request to another backend must go without it.
package origins

import (
	"crypto/sha256"
	"sync"
)

// Origin names the backend that wrote an opaque item: the provider
// ("anthropic", "bedrock", "vertex", "openai", "azure", a gateway's name)
// and the model.
type Origin struct {
	Provider, Model string
}

// Origins records which backend wrote each opaque item a conversation
// holds. The zero value is ready to use; an Origins is safe for concurrent
// use. It keeps a 32-byte digest per item, never the item.
type Origins struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]Origin
}

// Set records that origin wrote the opaque payload.
func (o *Origins) Set(payload string, origin Origin) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[[sha256.Size]byte]Origin)
	}
	o.m[sha256.Sum256([]byte(payload))] = origin
}

// Get returns who wrote payload, if it was recorded.
func (o *Origins) Get(payload string) (Origin, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	origin, ok := o.m[sha256.Sum256([]byte(payload))]
	return origin, ok
}

// Foreign reports whether payload was recorded as written by a backend
// other than to.
func (o *Origins) Foreign(payload string, to Origin) bool {
	origin, ok := o.Get(payload)
	return ok && origin != to
}

// Len returns the number of opaque items recorded.
func (o *Origins) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m)
}
