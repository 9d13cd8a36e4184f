// Package conv lets the SDK adapters' Conversations reuse the core's
// history.Conversations: its load, trim, compare-and-swap save and retry
// loop, its map of Trimmers and their lifecycle, with the adapter's own
// stateful Trimmer in place of the core's. The history package fills in New
// and Run when it is initialised; adapters import history, so they are
// always set for them. The values are typed any where they are the history
// package's, which this package cannot import.
package conv

import (
	"context"
	"time"
)

// Keeper is what a Conversations keeps per conversation: a Trimmer whose
// state it saves and restores, and whose background summary it stops
// when the Trimmer is dropped. history.Trimmer and the adapters' Trimmer
// are Keepers.
type Keeper interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary(data []byte) error
	Close() error
	SummaryDone() <-chan struct{}
}

// Settings are a Conversations' exported fields, read on every call (see
// history.Conversations).
type Settings struct {
	OnState          func(key, state string)
	MaxConversations int
	IdleAfter        time.Duration
}

// New returns a *history.Conversations (as an any) that keeps its state
// in store (a history.StateStore) and trims with opts (a
// []history.Option), whose Trimmers newKeeper returns from the options of
// one conversation (opts with that conversation's event callback and
// recall scope, a []history.Option), and whose settings are those
// settings returns on each call, not its own fields.
var New func(store, opts any, newKeeper func(opts any) Keeper, settings func() Settings) any

// Run runs call on the Keeper of conversation key of c (a
// *history.Conversations made by New), its state loaded from the store
// before and saved after, as history.Conversations.Trim does (call may run
// up to three times after conflicts: the last run's results stand). It
// returns what history.Event.State says of the call.
var Run func(c any, ctx context.Context, key string, call func(Keeper)) string

// Refuser is a Keeper that wraps a *history.Trimmer (an adapter's
// Trimmer): Refused reports, and forgets, whether the state restored into
// it failed its check against the transcript during the call just run
// (see TakeRefusal), so that Run reports the state refused, as it does
// for the core's own Trimmer.
type Refuser interface {
	Keeper
	Refused() bool
}

// TakeRefusal reports, and forgets, whether the state restored into t (a
// *history.Trimmer) failed its check against the transcript of its last
// trim. The history package fills it in when it is initialised.
var TakeRefusal func(t any) bool

// AppendState appends the state t (a *history.Trimmer) saves
// (history.Trimmer.MarshalBinary) to b and returns the extended slice, so
// that an adapter's Trimmer writes its own header and the core's state
// into one buffer. The history package fills it in when it is initialised.
var AppendState func(t any, b []byte) []byte

// StateSize returns the size of the last state t (a *history.Trimmer)
// saved, 0 before the first: the room an adapter's Trimmer makes for the
// next. The history package fills it in when it is initialised.
var StateSize func(t any) int
