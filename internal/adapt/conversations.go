package adapt

// An adapter's Conversations: history.Conversations (the state of each
// conversation in a history.StateStore shared by a runtime's replicas)
// over native messages. The core's Conversations does the work (load,
// trim, compare-and-swap save, retries, its map of Trimmers and their
// lifecycle, through internal/conv) with the adapter's Trimmer in place
// of the core's, so a conversation saved by one replica's adapter
// Trimmer restores, pins included, on another's.

import (
	"context"
	"slices"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/conv"
)

// convs is what Conversations and SystemConversations share: the core's
// Conversations over c's Trimmers.
type convs[R, N any] struct {
	c    *Codec[R, N]
	core *history.Conversations
}

func newConvs[R, N any](c *Codec[R, N], store history.StateStore, opts []history.Option, settings func() conv.Settings) convs[R, N] {
	var zero R // each call gives its own
	mk := func(opts any) conv.Keeper { return c.NewTrimmer(zero, opts.([]history.Option)) }
	return convs[R, N]{c, conv.New(store, slices.Clone(opts), mk, settings).(*history.Conversations)}
}

func (s convs[R, N]) trim(ctx context.Context, key string, r R, transcript []N, budget int) ([]N, history.Result, error) {
	var out []N
	var res history.Result
	var err error
	conv.Run(s.core, ctx, key, func(k conv.Keeper) { out, res, err = k.(*Trimmer[R, N]).trim(ctx, r, transcript, budget) })
	return out, res, err
}

func (s convs[R, N]) recover(ctx context.Context, key string, r R, transcript []N, providerErr error, attempt int) ([]N, history.Result, error) {
	if !s.c.IsOverflow(providerErr) {
		return nil, history.Result{}, history.ErrNotOverflow // no state changes: the store is not called
	}
	var out []N
	var res history.Result
	var err error
	conv.Run(s.core, ctx, key, func(k conv.Keeper) { out, res, err = k.(*Trimmer[R, N]).recover(r, transcript, providerErr, attempt) })
	return out, res, err
}

// Conversations is an adapter's history.Conversations, for an SDK whose
// system prompt is among its messages: one stateful Trimmer (the
// adapter's, see Trimmer) per conversation, whose state (MarshalBinary)
// is loaded from a history.StateStore shared by a runtime's replicas
// before every trim and saved after it with compare-and-swap, so that a
// conversation's requests send byte for byte the prompts of one process
// wherever they land. Everything history.Conversations says holds: the
// options must be the same on every replica, state that cannot be used
// falls back to a fresh trim (never to an error), ctx bounds the store,
// and the Trimmers a replica keeps are bounded. Each adapter exports it
// as its Conversations, made by its NewConversations. It is safe for
// concurrent use.
type Conversations[R, N any] struct {
	// OnState, MaxConversations and IdleAfter are those of
	// history.Conversations. Set them before the first call.
	OnState          func(key, state string)
	MaxConversations int
	IdleAfter        time.Duration

	r R // what every request passes besides its messages, fixed
	s convs[R, N]
}

// NewConversations returns c's Conversations for requests with r (what
// the adapter's NewTrimmer fixes besides the messages) that keep their
// state in store and trim with opts (the adapter's NewTrimmer options,
// pins into the transcript). opts is copied.
func NewConversations[R, N any](c *Codec[R, N], r R, store history.StateStore, opts []history.Option) *Conversations[R, N] {
	cs := &Conversations[R, N]{r: r}
	cs.s = newConvs(c, store, opts, func() conv.Settings {
		return conv.Settings{OnState: cs.OnState, MaxConversations: cs.MaxConversations, IdleAfter: cs.IdleAfter}
	})
	return cs
}

// Trim is the Trimmer's TrimContext for the conversation key, with its
// state loaded from the store and saved back (history.Conversations.Trim):
// the native messages to send for transcript, the conversation's whole
// transcript, under budget. ctx bounds the store's calls and the
// Summarizer's.
func (cs *Conversations[R, N]) Trim(ctx context.Context, key string, transcript []N, budget int) ([]N, history.Result, error) {
	return cs.s.trim(ctx, key, cs.r, transcript, budget)
}

// RecoverOverflow is the Trimmer's RecoverOverflow for the conversation
// key, with its state loaded from the store and saved back, so that every
// replica's next plans fit what the provider said. An error that is no
// overflow returns history.ErrNotOverflow at once, without the store.
func (cs *Conversations[R, N]) RecoverOverflow(ctx context.Context, key string, transcript []N, providerErr error, attempt int) ([]N, history.Result, error) {
	return cs.s.recover(ctx, key, cs.r, transcript, providerErr, attempt)
}

// Reset makes the conversation key start afresh on every replica
// (history.Conversations.Reset).
func (cs *Conversations[R, N]) Reset(ctx context.Context, key string) error {
	return cs.s.core.Reset(ctx, key)
}

// Forget drops this replica's Trimmer for key (history.Conversations.Forget).
func (cs *Conversations[R, N]) Forget(key string) { cs.s.core.Forget(key) }

// Close stops every background summary in flight and waits for them
// (history.Conversations.Close).
func (cs *Conversations[R, N]) Close() error { return cs.s.core.Close() }

// RecallStore returns the Store of the elided results of the conversation
// key, for its recall tool (history.Conversations.RecallStore).
func (cs *Conversations[R, N]) RecallStore(key string) history.Store {
	return cs.s.core.RecallStore(key)
}

// SystemConversations is Conversations for an SDK that takes the system
// prompt apart from the messages (of type R): each call passes the
// request's system prompt, which is read on every call as Trim reads it.
// Each such adapter exports it as its Conversations.
type SystemConversations[R, N any] struct {
	// OnState, MaxConversations and IdleAfter are those of
	// history.Conversations. Set them before the first call.
	OnState          func(key, state string)
	MaxConversations int
	IdleAfter        time.Duration

	s convs[R, N]
}

// NewSystemConversations returns c's SystemConversations that keep their
// state in store and trim with opts. opts is copied.
func NewSystemConversations[R, N any](c *Codec[R, N], store history.StateStore, opts []history.Option) *SystemConversations[R, N] {
	cs := &SystemConversations[R, N]{}
	cs.s = newConvs(c, store, opts, func() conv.Settings {
		return conv.Settings{OnState: cs.OnState, MaxConversations: cs.MaxConversations, IdleAfter: cs.IdleAfter}
	})
	return cs
}

// Trim is Conversations.Trim for requests with the system prompt system.
func (cs *SystemConversations[R, N]) Trim(ctx context.Context, key string, system R, transcript []N, budget int) ([]N, history.Result, error) {
	return cs.s.trim(ctx, key, system, transcript, budget)
}

// RecoverOverflow is Conversations.RecoverOverflow for requests with the
// system prompt system.
func (cs *SystemConversations[R, N]) RecoverOverflow(ctx context.Context, key string, system R, transcript []N, providerErr error, attempt int) ([]N, history.Result, error) {
	return cs.s.recover(ctx, key, system, transcript, providerErr, attempt)
}

// Reset makes the conversation key start afresh on every replica
// (history.Conversations.Reset).
func (cs *SystemConversations[R, N]) Reset(ctx context.Context, key string) error {
	return cs.s.core.Reset(ctx, key)
}

// Forget drops this replica's Trimmer for key (history.Conversations.Forget).
func (cs *SystemConversations[R, N]) Forget(key string) { cs.s.core.Forget(key) }

// Close stops every background summary in flight and waits for them
// (history.Conversations.Close).
func (cs *SystemConversations[R, N]) Close() error { return cs.s.core.Close() }

// RecallStore returns the Store of the elided results of the conversation
// key, for its recall tool (history.Conversations.RecallStore).
func (cs *SystemConversations[R, N]) RecallStore(key string) history.Store {
	return cs.s.core.RecallStore(key)
}
