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
