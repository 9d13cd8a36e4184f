// Package wireapi is where an adapter module registers the raw codec of
// an API whose rules it holds (adapt.Raw over its SDK's types), for
// package wire to read requests of that API: the core module does not
// import the SDKs, so package wire trims those requests only in a program
// that linked the adapter and registered its codec (for OpenAI
// Responses, adapters/responses' RegisterWire).
package wireapi

import (
	"encoding/json"
	"sync"

	"github.com/histrim/history/internal/adapt"
)

// Codec is a registered API's raw codec: its native messages are the
// items of the body as they came, its other part the body with an
// empty items array (the request's parameters).
type Codec = adapt.Codec[json.RawMessage, json.RawMessage]

var (
	mu     sync.RWMutex
	codecs = map[string]*Codec{}
)

// Register makes c the codec of the API named api (wire.API's String);
// a later call replaces it, and a nil c removes it.
func Register(api string, c *Codec) {
	mu.Lock()
	defer mu.Unlock()
	if c == nil {
		delete(codecs, api)
		return
	}
	codecs[api] = c
}

// Lookup returns the codec registered for api, or nil.
func Lookup(api string) *Codec {
	mu.RLock()
	defer mu.RUnlock()
	return codecs[api]
}

// JSON read and rewritten over its raw bytes, for a codec that rewrites
// part of a message and keeps every other byte as it came. Package wire
// fills them in when it is initialised (its scanner); a codec runs only
// through package wire, so they are set whenever a codec runs, but a
// codec falls back to its SDK's encoding when one is nil.
var (
	// Member returns the value of the member name of the JSON object obj
	// (the last such member, the one encoding/json reads), or false when
	// obj is no object or has none.
	Member func(obj []byte, name string) ([]byte, bool)
	// Elements returns the elements of the JSON array arr, each as it
	// came, or false when arr is no array.
	Elements func(arr []byte) ([][]byte, bool)
	// WithMember returns a copy of the JSON object obj with the value of
	// its member name replaced by val (the member removed when val is
	// nil), every other byte as it came, or false when obj is no object
	// or has no such member.
	WithMember func(obj []byte, name string, val []byte) ([]byte, bool)
)

// Released, when set (a test sets it before any request), is given each
// request body package wire's Transport is done with, in place of keeping
// it for a later request's read: a test holds it weakly and checks that
// nothing the Transport keeps holds it once the collector ran.
var Released func(body []byte)
