// This file owns StateStore, the contract of a store of conversations'
// state that replicas share; what an Event says of the state a
// Conversations trim started from; and MemoryStateStore, with the
// Conversations' run over it.

package history

import (
	"context"
	"errors"
	"sync"

	"github.com/histrim/history/internal/conv"
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
//
// A [Conversations] over it saves a conversation's state as the Trimmer
// that holds it, and writes its bytes only when someone reads them (a
// Load, another Conversations over the same store, the same one once it
// dropped the Trimmer): a conversation served by one Conversations is not
// written out after every trim. While such a Trimmer trims again, a Load
// of its conversation waits for the state that trim saves. Its calls
// never wait on anything else, so a Conversations makes them whatever
// its ctx says.
type MemoryStateStore struct {
	mu sync.Mutex
	m  map[string]memoryState
}

type memoryState struct {
	data    []byte
	version int64
	// lazy, when set, holds the state instead of data: the Trimmer that
	// has it, written when it is first read.
	lazy *lazyState
}

// lazyState is a state saved as the Trimmer that holds it (t), written
// into data the first time it is read. mu serialises that write with the
// Trimmer's next trim, which claims it (MemoryStateStore.claim) until
// its own state replaces this one.
type lazyState struct {
	mu   sync.Mutex
	t    keeper // nil once written
	data []byte
}

// Load returns a copy of the state saved under key, and its version.
func (s *MemoryStateStore) Load(ctx context.Context, key string) ([]byte, int64, error) {
	data, version := s.load(key)
	return append([]byte(nil), data...), version, nil
}

// load returns the state saved under key itself, not a copy, and its
// version: for Conversations, which only reads it (the slice saved is
// never written to: a save replaces it). A state saved as a Trimmer is
// written first; while that Trimmer trims again, load waits for the state
// its trim saves.
func (s *MemoryStateStore) load(key string) ([]byte, int64) {
	for {
		st := s.entry(key)
		lz := st.lazy
		if lz == nil {
			return st.data, st.version
		}
		lz.mu.Lock()
		if !s.current(key, lz) {
			lz.mu.Unlock() // replaced meanwhile: read what replaced it
			continue
		}
		if lz.t != nil {
			lz.data, _ = lz.t.MarshalBinary()
			lz.t = nil
		}
		data := lz.data
		lz.mu.Unlock()
		return data, st.version
	}
}

// entry returns what is saved under key.
func (s *MemoryStateStore) entry(key string) memoryState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// current reports whether lz is what is saved under key.
func (s *MemoryStateStore) current(key string, lz *lazyState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key].lazy == lz
}

// Save saves a copy of state under key if its version is still version.
func (s *MemoryStateStore) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	return s.save(key, memoryState{data: append([]byte(nil), state...)}, version)
}

// save saves st (its data or its Trimmer, which Conversations hands over
// for the save) under key if its version is still version.
func (s *MemoryStateStore) save(key string, st memoryState, version int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]memoryState{}
	}
	if s.m[key].version != version {
		return 0, ErrStateConflict
	}
	st.version = version + 1
	s.m[key] = st
	return st.version, nil
}

// claim returns, locked, the state saved under key when it is t's, not
// yet written, at version: t is about to trim again, and whoever reads
// the state meanwhile waits for the one it saves (release). nil when the
// state saved is anything else.
func (s *MemoryStateStore) claim(key string, t keeper, version int64) *lazyState {
	st := s.entry(key)
	lz := st.lazy
	if lz == nil || st.version != version || t == nil {
		return nil
	}
	lz.mu.Lock()
	if !s.current(key, lz) || lz.t != t {
		lz.mu.Unlock()
		return nil
	}
	return lz
}

// release ends a claim. When the state claimed is still the one saved
// under key (the trim did not save: it panicked), the Trimmer has moved
// on from it and cannot write it: it is dropped, and its reader plans
// afresh (an empty state is refused).
func (s *MemoryStateStore) release(key string, lz *lazyState) {
	s.mu.Lock()
	if st := s.m[key]; st.lazy == lz {
		s.m[key] = memoryState{version: st.version}
	}
	s.mu.Unlock()
	lz.t = nil
	lz.mu.Unlock()
}

// memory returns c's store when it is a MemoryStateStore.
func (c *Conversations) memory() *MemoryStateStore {
	m, _ := c.store.(*MemoryStateStore)
	return m
}

// loadState is c.store.Load, without the copy a MemoryStateStore makes
// for other callers: a state is only read here (UnmarshalBinary copies
// what it keeps), and most often not at all (StateLocal).
func (c *Conversations) loadState(ctx context.Context, key string) ([]byte, int64, error) {
	if m := c.memory(); m != nil {
		data, version := m.load(key)
		return data, version, nil
	}
	return c.store.Load(ctx, key)
}

// runMemory is runLocked over a MemoryStateStore, which never waits on
// anything but another trim of the conversation and never fails: the
// state is saved as the Trimmer that holds it (written when someone reads
// it), and a Trimmer whose state is the one saved claims it while it
// trims again, so that a reader waits for the state that trim saves
// rather than read one the trim is changing. A conflict (a Save by
// someone else) is handled as runLocked handles it.
func (c *Conversations) runMemory(m *MemoryStateStore, key string, cv *conversation, call func(keeper)) string {
	conflicted := false
	for range 3 {
		var t keeper
		var version int64
		var state string
		claim := m.claim(key, cv.t, cv.version)
		if claim != nil {
			t, version, state = cv.t, cv.version, StateLocal
		} else {
			t, version, state = c.load(context.Background(), key, cv)
		}
		if conflicted {
			state = StateConflict
		}
		next, serr := func() (int64, error) {
			if claim != nil {
				defer m.release(key, claim) // after the save, or a panic
			}
			cv.ev = nil
			call(t)
			if refused(t) {
				state = StateRefused // the restored state failed its check against the transcript
			}
			return m.save(key, memoryState{lazy: &lazyState{t: t}}, version)
		}()
		if serr != nil { // a conflict: nothing else fails
			conflicted = true
			c.discard(cv, t)
			continue
		}
		c.keep(cv, t, next)
		c.report(cv, state)
		return state
	}
	c.report(cv, StateConflict)
	return StateConflict
}

// refused reports, and forgets, whether the state restored into t failed
// its check against the transcript of the call just run: the core's
// Trimmer's own refusal, or an adapter's (conv.Refuser).
func refused(t keeper) bool {
	switch t := t.(type) {
	case *Trimmer:
		return t.takeRefusal() != nil
	case conv.Refuser:
		return t.Refused()
	}
	return false
}
