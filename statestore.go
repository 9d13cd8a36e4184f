// This file owns StateStore, the contract of a store of conversations'
// state that replicas share; what an Event says of the state a
// Conversations trim started from; and MemoryStateStore.

package history

import (
	"context"
	"errors"
	"sync"
)

// StateStore keeps state per conversation (a [Trimmer]'s, saved with
// [Trimmer.MarshalBinary]) where every replica of a runtime reads and
// writes it, with compare-and-swap so that two replicas racing on one
// conversation cannot lose an update. The backends in
// github.com/histrim/history/stores (Redis, Postgres) implement it;
// implementations must be safe for concurrent use.
type StateStore interface {
	// Load returns the state saved under key and its version; a nil state
	// and version 0 when none is saved. When what is saved under key
	// cannot be read as a state and a version (a version that is not a
	// positive integer, a value of another type or shape, written by
	// something else), it returns nil, version -1 and an error wrapping
	// [ErrInvalidState]: [Conversations] reports that as [StateRefused]
	// and replaces it with its next save. Any other error means the store
	// could not answer.
	Load(ctx context.Context, key string) (state []byte, version int64, err error)
	// Save saves state under key if the version saved there is still
	// version (0: none saved yet; -1: what is saved is still unreadable,
	// as Load reported it), and returns the new version, which is always
	// positive. When another save came first (or, for -1, the value is no
	// longer unreadable) it saves nothing and returns an error wrapping
	// [ErrStateConflict]; any other error means the store could not
	// answer.
	Save(ctx context.Context, key string, state []byte, version int64) (int64, error)
}

// ErrStateConflict is wrapped by [StateStore.Save]'s error when the state
// was saved by someone else since it was loaded.
var ErrStateConflict = errors.New("history: the state was saved by another writer meanwhile")

// What [Event.State] says of the state a [Conversations] trim started from.
const (
	// StateNew: no state was saved for the conversation yet.
	StateNew = "new"
	// StateLocal: the state saved is this replica's own, used as it is.
	StateLocal = "local"
	// StateRestored: the state saved was another replica's, restored.
	StateRestored = "restored"
	// StateUnavailable: the store failed; the trim used what this replica
	// had (a fresh trim when it had nothing) and saved nothing.
	StateUnavailable = "unavailable"
	// StateRefused: the state saved could not be read, was saved under
	// other options, or failed its check against the transcript
	// ([StateError], see [Trimmer.UnmarshalBinary]), or the store could
	// not read what it holds under the key ([ErrInvalidState]); the trim
	// planned afresh, and its save replaces it.
	StateRefused = "refused"
	// StateConflict: another replica saved the conversation's state while
	// this one trimmed; the trim was made again from that state.
	StateConflict = "conflict"
)

// MemoryStateStore is a [StateStore] in memory, for one process (tests, a
// single replica, a cache in front of nothing). The zero value is ready;
// it is safe for concurrent use and keeps every state for its lifetime.
type MemoryStateStore struct {
	mu sync.Mutex
	m  map[string]memoryState
}

type memoryState struct {
	data    []byte
	version int64
}

// Load returns a copy of the state saved under key, and its version.
func (s *MemoryStateStore) Load(ctx context.Context, key string) ([]byte, int64, error) {
	data, version := s.load(key)
	return append([]byte(nil), data...), version, nil
}

// load returns the state saved under key itself, not a copy, and its
// version: for Conversations, which only reads it (the slice saved is
// never written to: a save replaces it).
func (s *MemoryStateStore) load(key string) ([]byte, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.m[key]
	return st.data, st.version
}

// Save saves a copy of state under key if its version is still version.
func (s *MemoryStateStore) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	return s.save(key, append([]byte(nil), state...), version)
}

// save is Save keeping state itself, not a copy: for Conversations, which
// hands over a state it made for the save and never touches again.
func (s *MemoryStateStore) save(key string, state []byte, version int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]memoryState{}
	}
	if s.m[key].version != version {
		return 0, ErrStateConflict
	}
	next := version + 1
	s.m[key] = memoryState{state, next}
	return next, nil
}

// loadState is c.store.Load, without the copy a MemoryStateStore makes
// for other callers: a state is only read here (UnmarshalBinary copies
// what it keeps), and most often not at all (StateLocal).
func (c *Conversations) loadState(ctx context.Context, key string) ([]byte, int64, error) {
	if m, ok := c.store.(*MemoryStateStore); ok && m != nil {
		data, version := m.load(key)
		return data, version, nil
	}
	return c.store.Load(ctx, key)
}

// save is c.store.Save of a state made for it (MarshalBinary's, never
// touched again), without the copy a MemoryStateStore makes for other
// callers.
func (c *Conversations) save(ctx context.Context, key string, data []byte, version int64) (int64, error) {
	if m, ok := c.store.(*MemoryStateStore); ok && m != nil {
		return m.save(key, data, version)
	}
	return c.store.Save(ctx, key, data, version)
}
