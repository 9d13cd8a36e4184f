// This file owns Conversations: one Trimmer per conversation, its state kept
// in a StateStore that every replica of a runtime shares, so that a
// conversation's next request trims the same wherever it lands.

package history

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/histrim/history/internal/conv"
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
// # Deadlines
//
// The ctx of a call bounds the store's calls, and the store costs a call
// at most one wait that ctx ends: when ctx is done before the load, the
// store is not called; when the load fails (the store down, or slower
// than its own timeout or ctx), nothing is saved; when ctx is done by the
// time the trim is made, the save is skipped. Each of these trims with
// what the replica has (a fresh trim when it has nothing) and reports
// [StateUnavailable]: the Result is as valid as any. The stores' calls
// must return when their ctx is done (the backends bound them by their
// own timeout too). A [MemoryStateStore] waits on nothing but another
// trim of the conversation, and is called whatever ctx says.
//
// # Lifecycle
//
// A replica keeps the Trimmers of the conversations it served lately: at
// most MaxConversations, the least recently used dropped first, and none
// idle for longer than IdleAfter when it is set. Dropping one costs only a
// decode of the state saved on the conversation's next request, and stops
// its background summary ([SummaryOptions.Background]) if one is in
// flight. [Conversations.Forget] drops a conversation's Trimmer at once,
// [Conversations.Reset] makes a conversation start afresh on every
// replica, and [Conversations.Close] stops every background summary in
// flight, at shutdown.
//
// It is safe for concurrent use; calls for one key are serialised within
// a replica. The zero value is not usable: use [NewConversations].
type Conversations struct {
	// OnState, when set, is called after every Trim and every
	// RecoverOverflow of an overflow with the conversation's key and where
	// its state came from (the values of [Event.State]), whether or not
	// the call made an event: most requests reuse a plan and make none,
	// and a store that is down should be seen on those too. Set it before
	// the first call; it runs without any lock held.
	OnState func(key, state string)
	// MaxConversations bounds the conversations whose Trimmer this replica
	// keeps between calls: beyond it, the least recently used that no call
	// is using is dropped (only the calls in progress can hold more). 0
	// means [DefaultMaxConversations]; a negative value sets no bound. Set
	// it before the first call.
	MaxConversations int
	// IdleAfter, when positive, drops the Trimmer of every conversation
	// that no call has used for that long (by the options' clock,
	// [WithClock]), at the next call of any conversation. 0 keeps them
	// until MaxConversations or Forget drops them. Set it before the first
	// call.
	IdleAfter time.Duration

	store     StateStore
	recall    Store // the options' ElideOptions.Store, unscoped
	opts      []Option
	onTrim    func(Event)
	clock     func() time.Time      // the options' WithClock; nil: time.Now
	newKeeper func([]Option) keeper // a conversation's Trimmer with these options
	settings  func() conv.Settings  // the exported fields, or an adapter's (nil: these)

	mu      sync.Mutex
	local   map[string]*conversation
	lru     list.List           // of *conversation, the most recently used first
	live    map[keeper]struct{} // every Trimmer made and not yet dropped
	closed  bool                // Close was called: new Trimmers start closed
	closing sync.WaitGroup      // the Close calls of Trimmers dropped
	once    sync.Once           // Close's
}

// DefaultMaxConversations is the number of conversations whose Trimmer a
// [Conversations] keeps when its MaxConversations is 0: a few KB each
// (their state, and the keys of their last prompt).
const DefaultMaxConversations = 4096

// keeper is what Conversations keeps per conversation: a *Trimmer, or an
// adapter's Trimmer (see internal/conv).
type keeper = conv.Keeper

// conversation is one conversation's Trimmer on this replica: the version
// of the state it saved or restored, and the event of the call in progress
// (guarded by mu); and its place in the replica's map (guarded by
// Conversations.mu): the calls using it, when it was last used, its
// element of the LRU list, and whether Forget dropped it while in use.
type conversation struct {
	key     string
	mu      sync.Mutex
	t       keeper
	version int64
	ev      *Event

	refs int
	used time.Time
	elem *list.Element
	gone bool
}

// NewConversations returns Conversations that keep their state in store
// and trim with opts (the options of [NewTrimmer]). opts is copied.
func NewConversations(store StateStore, opts ...Option) *Conversations {
	return newConversations(store, opts, func(opts []Option) keeper { return NewTrimmer(opts...) })
}

// newConversations returns Conversations whose Trimmers newKeeper returns.
func newConversations(store StateStore, opts []Option, newKeeper func([]Option) keeper) *Conversations {
	o := newOptions(opts)
	onTrim, clock := o.onTrim, o.clock
	var recall Store
	if o.elide != nil {
		recall = o.elide.Store
	}
	o.release()
	return &Conversations{store: store, recall: recall, opts: append([]Option(nil), opts...), onTrim: onTrim, clock: clock,
		newKeeper: newKeeper, local: map[string]*conversation{}, live: map[keeper]struct{}{}}
}

func init() {
	conv.New = func(store, opts any, newKeeper func(opts any) conv.Keeper, settings func() conv.Settings) any {
		st, _ := store.(StateStore)
		c := newConversations(st, opts.([]Option), func(opts []Option) keeper { return newKeeper(opts) })
		c.settings = settings
		return c
	}
	conv.Run = func(c any, ctx context.Context, key string, call func(conv.Keeper)) string {
		return c.(*Conversations).run(ctx, key, call)
	}
	conv.TakeRefusal = func(t any) bool {
		tr, ok := t.(*Trimmer)
		return ok && tr.takeRefusal() != nil
	}
	conv.AppendState = func(t any, b []byte) []byte {
		return t.(*Trimmer).appendState(b)
	}
	conv.StateSize = func(t any) int {
		tr := t.(*Trimmer)
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.stateSize
	}
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
// loaded from the store and saved back; ctx also bounds the store's calls
// (see Deadlines in the [Conversations] documentation).
func (c *Conversations) Trim(ctx context.Context, key string, msgs []Message, budget int) (Result, error) {
	var res Result
	var err error
	c.run(ctx, key, func(k keeper) { res, err = k.(*Trimmer).TrimContext(ctx, msgs, budget) })
	return res, err
}

// RecoverOverflow is [Trimmer.RecoverOverflow] for the conversation key,
// with its state loaded from the store and saved back; ctx bounds the
// store's calls (the recovery itself calls no Summarizer and does not
// block). An error that is no context overflow returns [ErrNotOverflow]
// with msgs at once, without the store.
func (c *Conversations) RecoverOverflow(ctx context.Context, key string, msgs []Message, providerErr error, attempt int) (Result, error) {
	if !IsContextOverflow(providerErr) {
		return Result{Messages: msgs[:len(msgs):len(msgs)], Kept: identity(len(msgs))}, ErrNotOverflow
	}
	var res Result
	var err error
	c.run(ctx, key, func(k keeper) { res, err = k.(*Trimmer).RecoverOverflow(msgs, providerErr, attempt) })
	return res, err
}

// Reset makes the conversation key start afresh, as a new conversation
// would: it forgets the plan, the summary and the share of the budget
// learnt from an overflow ([Trimmer.RecoverOverflow]), on this replica and
// in the store, so that the next trim on any replica plans afresh at the
// full budget. It saves a new Trimmer's state over the state saved (with
// compare-and-swap, again after a conflict), and stops this replica's
// background summary of the conversation, if any. ctx bounds the store's
// calls; the elided results kept for the recall tool stay.
//
// When the store fails, or ctx ends first, Reset returns that error: this
// replica's trims start afresh while the store cannot be reached, but the
// state saved stays, and every replica (this one too, once the store
// answers) goes on from it. Call Reset again until it returns nil.
func (c *Conversations) Reset(ctx context.Context, key string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cv := c.acquire(key)
	cv.mu.Lock()
	defer func() {
		c.release(cv)
		cv.mu.Unlock()
	}()
	fresh := c.newTrimmer(cv)
	data, err := fresh.MarshalBinary()
	c.keep(cv, fresh, 0) // whatever the store says, this replica starts afresh
	if err != nil {
		return err
	}
	for range 3 {
		if err = ctx.Err(); err != nil {
			return err
		}
		var version int64
		if _, version, err = c.store.Load(ctx, key); err != nil {
			return err
		}
		if version == 0 {
			return nil // nothing saved: nothing to forget
		}
		var next int64
		if next, err = c.store.Save(ctx, key, data, version); err == nil {
			cv.version = next
			return nil
		}
		if !errors.Is(err, ErrStateConflict) {
			return err
		}
	}
	return err
}

// Forget drops this replica's Trimmer for key (the state in the store
// stays), and stops its background summary, if any: for a conversation
// that ended, or moved away for good.
func (c *Conversations) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cv := c.local[key]; cv != nil {
		c.drop(cv)
	}
}

// Close stops the background summaries ([SummaryOptions.Background]) in
// flight of every conversation's Trimmer, and waits for their
// Summarizer's calls to return (see [Trimmer.Close]). The Conversations
// still trim after Close, but start no background summary. It returns
// nil, and is safe to call more than once, and concurrently with the
// other methods: a second call returns once the first has.
func (c *Conversations) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		live := c.live
		c.live = nil
		c.mu.Unlock()
		var wg sync.WaitGroup
		for k := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k.Close()
			}()
		}
		wg.Wait()
		c.closing.Wait()
	})
	return nil
}

// newTrimmer returns a Trimmer with the options, whose events go to cv and
// whose elided results are kept under cv's key; one made after Close is
// closed at once.
func (c *Conversations) newTrimmer(cv *conversation) keeper {
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
	t := c.newKeeper(opts)
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.live[t] = struct{}{}
	}
	c.mu.Unlock()
	if closed {
		t.Close() // nothing in flight: it returns at once
	}
	return t
}

// run loads key's state, runs call on the Trimmer it gives, and saves the
// Trimmer's new state; after a conflict it loads the newer state and runs
// call again (at most twice more: then the last result stands, unsaved).
// It returns what Event.State says of the call, and reports it to OnState.
func (c *Conversations) run(ctx context.Context, key string, call func(keeper)) string {
	if ctx == nil {
		ctx = context.Background()
	}
	cv := c.acquire(key)
	cv.mu.Lock()
	state := c.runLocked(ctx, key, cv, call)
	c.release(cv)
	cv.mu.Unlock()
	if on := c.limits().OnState; on != nil {
		on(key, state)
	}
	return state
}

// runLocked is run with cv held.
func (c *Conversations) runLocked(ctx context.Context, key string, cv *conversation, call func(keeper)) string {
	if m := c.memory(); m != nil {
		return c.runMemory(m, key, cv, call)
	}
	conflicted := false
	for range 3 {
		if conflicted && ctx.Err() != nil {
			break // the result of the last call stands, unsaved
		}
		t, version, state := c.load(ctx, key, cv)
		if conflicted {
			state = StateConflict
		}
		cv.ev = nil
		call(t)
		if refused(t) {
			state = StateRefused // the restored state failed its check against the transcript
		}
		if state == StateUnavailable {
			c.keep(cv, t, cv.version) // what this replica has; the store's version is unknown
			c.report(cv, state)
			return state
		}
		if ctx.Err() != nil {
			// The caller gave up meanwhile: a save would wait on the store
			// for nothing.
			c.keep(cv, t, 0) // saved nowhere: load again next time
			c.report(cv, StateUnavailable)
			return StateUnavailable
		}
		data, _ := t.MarshalBinary()
		next, serr := c.store.Save(ctx, key, data, version)
		switch {
		case serr == nil:
			c.keep(cv, t, next)
		case errors.Is(serr, ErrStateConflict):
			conflicted = true
			c.discard(cv, t)
			continue
		default:
			c.keep(cv, t, 0) // saved nowhere: load again next time
			state = StateUnavailable
		}
		c.report(cv, state)
		return state
	}
	state := StateConflict
	if ctx.Err() != nil {
		state = StateUnavailable
	}
	c.report(cv, state)
	return state
}

// load returns the Trimmer to trim key with, the version of the state it
// comes from, and what Event.State says of it. A done ctx is not waited
// on: the store is not called.
func (c *Conversations) load(ctx context.Context, key string, cv *conversation) (keeper, int64, string) {
	var data []byte
	var version int64
	err := ctx.Err()
	if err == nil {
		data, version, err = c.loadState(ctx, key)
	}
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
		return t, version, StateRefused // left as it was: fresh
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
