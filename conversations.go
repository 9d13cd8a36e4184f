// This file owns Conversations: one Trimmer per conversation, its state kept
// in a StateStore that every replica of a runtime shares, so that a
// conversation's next request trims the same wherever it lands.

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

// Conversations trims many conversations, each with its own [Trimmer],
// whose state it keeps in a [StateStore] shared by the runtime's replicas:
// each call loads the conversation's state, trims, and saves the new state
// with compare-and-swap. A replica keeps the Trimmers it used, and reuses
// one as it is when the state saved is still the one it saved, so a
// conversation served by one replica costs a load and a save per request,
// not a decode.
//
// State only buys a stable cache prefix and a summary not written twice:
// a trim is always valid from the history alone. State that is missing,
// unreadable, saved under other options, or written by another replica
// meanwhile falls back to a fresh trim (or a trim again from the newer
// state), never to an error; a store that fails is reported the same way.
// The [Event] of each trim says where its state came from ([Event.State]),
// and reaches the options' [WithOnTrim] once, after the state is saved.
//
// The elided results of each conversation are kept apart: the
// [ElideOptions.Store] of the options is scoped by the conversation's key
// ([ScopeStore]), so the recall tool of conversation key reads them with
// [Conversations.RecallStore](key).
//
// It is safe for concurrent use; calls for one key are serialised within
// a replica. The zero value is not usable: use [NewConversations].
type Conversations struct {
	// OnState, when set, is called after every Trim and RecoverOverflow
	// with the conversation's key and where its state came from (the
	// values of [Event.State]), whether or not the call made an event:
	// most requests reuse a plan and make none, and a store that is down
	// should be seen on those too. Set it before the first call; it runs
	// without any lock held.
	OnState func(key, state string)

	store  StateStore
	recall Store // the options' ElideOptions.Store, unscoped
	opts   []Option
	onTrim func(Event)

	mu    sync.Mutex
	local map[string]*conversation
}

// conversation is one conversation's Trimmer on this replica: the version
// of the state it saved or restored, and the event of the call in progress.
type conversation struct {
	key     string
	mu      sync.Mutex
	t       *Trimmer
	version int64
	ev      *Event
}

// NewConversations returns Conversations that keep their state in store
// and trim with opts (the options of [NewTrimmer]). opts is copied.
func NewConversations(store StateStore, opts ...Option) *Conversations {
	o := newOptions(opts)
	onTrim := o.onTrim
	var recall Store
	if o.elide != nil {
		recall = o.elide.Store
	}
	o.release()
	return &Conversations{store: store, recall: recall, opts: append([]Option(nil), opts...), onTrim: onTrim, local: map[string]*conversation{}}
}

// RecallStore returns the Store that holds the elided results of the
// conversation key: the options' [ElideOptions.Store] scoped by key
// ([ScopeStore]), for [RecallContext] in that conversation's recall tool.
// It is nil when the options keep no Store.
func (c *Conversations) RecallStore(key string) Store {
	if c.recall == nil {
		return nil
	}
	return ScopeStore(c.recall, key)
}

// Trim is [Trimmer.TrimContext] for the conversation key, with its state
// loaded from the store and saved back; ctx also bounds the store's calls.
func (c *Conversations) Trim(ctx context.Context, key string, msgs []Message, budget int) (Result, error) {
	res, state, err := c.run(ctx, key, func(t *Trimmer) (Result, error) { return t.TrimContext(ctx, msgs, budget) })
	if c.OnState != nil {
		c.OnState(key, state)
	}
	return res, err
}

// RecoverOverflow is [Trimmer.RecoverOverflow] for the conversation key,
// with its state loaded from the store and saved back.
func (c *Conversations) RecoverOverflow(ctx context.Context, key string, msgs []Message, providerErr error, attempt int) (Result, error) {
	res, state, err := c.run(ctx, key, func(t *Trimmer) (Result, error) { return t.RecoverOverflow(msgs, providerErr, attempt) })
	if c.OnState != nil {
		c.OnState(key, state)
	}
	return res, err
}

// Forget drops this replica's Trimmer for key (the state in the store
// stays): for a conversation that ended, or moved away for good.
func (c *Conversations) Forget(key string) {
	c.mu.Lock()
	delete(c.local, key)
	c.mu.Unlock()
}

// conversation returns this replica's entry for key, made on first use.
func (c *Conversations) conversation(key string) *conversation {
	c.mu.Lock()
	defer c.mu.Unlock()
	cv := c.local[key]
	if cv == nil {
		cv = &conversation{key: key}
		c.local[key] = cv
	}
	return cv
}

// newTrimmer returns a Trimmer with the options, whose events go to cv and
// whose elided results are kept under cv's key.
func (c *Conversations) newTrimmer(cv *conversation) *Trimmer {
	opts := append(c.opts[:len(c.opts):len(c.opts)], WithOnTrim(func(e Event) { cv.ev = &e }))
	if c.recall != nil {
		scoped := ScopeStore(c.recall, cv.key)
		opts = append(opts, func(o *options) {
			if o.elide != nil && o.elide.Store != nil {
				e := *o.elide
				e.Store = scoped
				o.elide = &e
			}
		})
	}
	return NewTrimmer(opts...)
}

// run loads key's state, runs call on the Trimmer it gives, and saves the
// Trimmer's new state; after a conflict it loads the newer state and runs
// call again (at most twice more: then the last result stands, unsaved).
// It returns what Event.State says of the call.
func (c *Conversations) run(ctx context.Context, key string, call func(*Trimmer) (Result, error)) (Result, string, error) {
	cv := c.conversation(key)
	cv.mu.Lock()
	defer cv.mu.Unlock()
	var res Result
	var err error
	conflicted := false
	for range 3 {
		t, version, state := c.load(ctx, key, cv)
		if conflicted {
			state = StateConflict
		}
		cv.ev = nil
		res, err = call(t)
		if t.takeRefusal() != nil {
			state = StateRefused // the restored state failed its check against the transcript
		}
		data, _ := t.MarshalBinary()
		if state == StateUnavailable {
			cv.t = t // what this replica has; the store's version is unknown
			c.report(cv, state)
			return res, state, err
		}
		next, serr := c.store.Save(ctx, key, data, version)
		switch {
		case serr == nil:
			cv.t, cv.version = t, next
		case errors.Is(serr, ErrStateConflict):
			conflicted = true
			continue
		default:
			cv.t, cv.version = t, 0 // saved nowhere: load again next time
			state = StateUnavailable
		}
		c.report(cv, state)
		return res, state, err
	}
	c.report(cv, StateConflict)
	return res, StateConflict, err
}

// load returns the Trimmer to trim key with, the version of the state it
// comes from, and what Event.State says of it.
func (c *Conversations) load(ctx context.Context, key string, cv *conversation) (*Trimmer, int64, string) {
	data, version, err := c.store.Load(ctx, key)
	switch {
	case errors.Is(err, ErrInvalidState):
		return c.newTrimmer(cv), version, StateRefused // replaced by this trim's save (version -1)
	case err != nil:
		if cv.t != nil {
			return cv.t, 0, StateUnavailable
		}
		return c.newTrimmer(cv), 0, StateUnavailable
	case version == 0:
		return c.newTrimmer(cv), 0, StateNew
	case cv.t != nil && version == cv.version:
		return cv.t, version, StateLocal
	}
	t := c.newTrimmer(cv)
	if err := t.UnmarshalBinary(data); err != nil {
		return c.newTrimmer(cv), version, StateRefused
	}
	return t, version, StateRestored
}

// report hands the call's event, if any, to the options' WithOnTrim, with
// the state it started from.
func (c *Conversations) report(cv *conversation, state string) {
	if cv.ev != nil && c.onTrim != nil {
		e := *cv.ev
		e.State = state
		c.onTrim(e)
	}
	cv.ev = nil
}

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
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.m[key]
	return append([]byte(nil), st.data...), st.version, nil
}

// Save saves a copy of state under key if its version is still version.
func (s *MemoryStateStore) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]memoryState{}
	}
	if s.m[key].version != version {
		return 0, ErrStateConflict
	}
	next := version + 1
	s.m[key] = memoryState{append([]byte(nil), state...), next}
	return next, nil
}
