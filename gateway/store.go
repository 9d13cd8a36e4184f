package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/histrim/history"
)

// OpenStore opens the state store a URL names; the gateway calls it once,
// in [New]. When the store it returns has a Close() error method, the
// gateway calls it on [Gateway.Close].
type OpenStore func(ctx context.Context, u *url.URL) (history.StateStore, error)

// ErrUnknownStore is wrapped by [New]'s error for a store URL whose scheme
// no one registered.
var ErrUnknownStore = errors.New("history: gateway: no store is registered for the URL's scheme")

var stores = struct {
	sync.Mutex
	open map[string]OpenStore
}{open: map[string]OpenStore{
	"memory": func(context.Context, *url.URL) (history.StateStore, error) { return &history.MemoryStateStore{}, nil },
}}

// RegisterStore makes [New] open store URLs of scheme (without its colon)
// with open, replacing what was registered for it before; "memory" (a
// [history.MemoryStateStore], one process) is registered from the start.
// A nil open unregisters the scheme. It is safe for concurrent use.
func RegisterStore(scheme string, open OpenStore) {
	stores.Lock()
	defer stores.Unlock()
	if open == nil {
		delete(stores.open, scheme)
		return
	}
	stores.open[scheme] = open
}

// StoreSchemes returns the schemes registered, sorted.
func StoreSchemes() []string {
	stores.Lock()
	defer stores.Unlock()
	out := make([]string, 0, len(stores.open))
	for k := range stores.open {
		out = append(out, k+"://")
	}
	slices.Sort(out)
	return out
}

// openStore opens the store u names.
func openStore(ctx context.Context, u *url.URL) (history.StateStore, error) {
	stores.Lock()
	open := stores.open[u.Scheme]
	stores.Unlock()
	if open == nil {
		return nil, fmt.Errorf("%w: %q (registered: %v)", ErrUnknownStore, u.Scheme, StoreSchemes())
	}
	st, err := open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("history: gateway: opening the store %s: %w", u.Redacted(), err)
	}
	if st == nil {
		return nil, fmt.Errorf("history: gateway: opening the store %s: the %q opener returned no store", u.Redacted(), u.Scheme)
	}
	return st, nil
}
