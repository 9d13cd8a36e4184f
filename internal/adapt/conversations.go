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
	cals *Calibrations // the door's, one per model, shared by the conversations
}

func newConvs[R, N any](c *Codec[R, N], store history.StateStore, opts []history.Option, settings func() conv.Settings) convs[R, N] {
	var zero R // each call gives its own
	cals := new(Calibrations)
	mk := func(opts any) conv.Keeper {
		tr := c.NewTrimmer(zero, opts.([]history.Option))
		tr.cals = cals
		return tr
	}
	return convs[R, N]{c, conv.New(store, slices.Clone(opts), mk, settings).(*history.Conversations), cals}
}

// fit is the door's Fit for the conversation key, its state loaded and
// saved as trim does; it returns the options of the trim too.
func (s convs[R, N]) fit(ctx context.Context, key string, req Request[R, N]) ([]N, history.Result, []history.Option, error) {
	var out []N
	var res history.Result
	var opts []history.Option
	var err error
	if req.Err != nil {
		return nil, history.Result{}, nil, req.Err // no state changes: the store is not called
	}
	conv.Run(s.core, ctx, key, func(k conv.Keeper) {
		tr := k.(*Trimmer[R, N])
		out, res, err = tr.Fit(ctx, req)
		opts = tr.FitOptions()
	})
	return out, res, opts, err
}

// observe feeds reported, the provider's count of the request a Fit for
// model returned res for, to the conversations' Calibration of model.
func (s convs[R, N]) observe(model string, res history.Result, reported int) history.Verdict {
	if res.TokensAfter <= 0 || reported <= 0 {
		return history.VerdictInvalid
	}
	return s.cals.For(model).Observe(res.TokensAfter, reported)
}

// FitConversation is the door of an adapter's Conversations over cs (a
// *Conversations or *SystemConversations): the transcript of params
// (Door.Read) trimmed for the conversation key by its Trimmer's Fit, its
// state loaded from the store and saved back, and written back into
// params (Door.Write). Errors are those of FitParams.
func FitConversation[P, U, R, N any](ctx context.Context, cs interface{ convs() convs[R, N] }, d *Door[P, U, R, N], key string, params P) (P, history.Result, error) {
	out, res, opts, err := cs.convs().fit(ctx, key, d.Read(params))
	if out == nil {
		return params, res, err
	}
	return d.Write(params, out, opts), res, err
}

// ObserveConversation is an adapter's Conversations' Observe: the usage of
// the response to params (as Fit returned it, with res) fed to the
// conversations' Calibration of the model params names, shared by every
// conversation of cs on this replica.
func ObserveConversation[P, U, R, N any](cs interface{ convs() convs[R, N] }, d *Door[P, U, R, N], params P, res history.Result, usage U) history.Verdict {
	return cs.convs().observe(d.Read(params).Model, res, d.Usage(usage))
}

// ObserveModel is ObserveConversation for an adapter without a request
// type: reported, the provider's count of the request to model a Fit
// returned res for.
func ObserveModel[R, N any](cs interface{ convs() convs[R, N] }, model string, res history.Result, reported int) history.Verdict {
	return cs.convs().observe(model, res, reported)
}

// FitModel is FitConversation for an adapter without a request type: req
// trimmed for the conversation key, the native messages to send.
func FitModel[R, N any](ctx context.Context, cs interface{ convs() convs[R, N] }, key string, req Request[R, N]) ([]N, history.Result, error) {
	out, res, _, err := cs.convs().fit(ctx, key, req)
	return out, res, err
}

// control holds the calls Conversations and SystemConversations pass
// straight to their history.Conversations.
type control struct{ core *history.Conversations }

// Reset makes the conversation key start afresh on every replica
// (history.Conversations.Reset).
func (c control) Reset(ctx context.Context, key string) error { return c.core.Reset(ctx, key) }

// Forget drops this replica's Trimmer for key (history.Conversations.Forget).
func (c control) Forget(key string) { c.core.Forget(key) }

// Close stops every background summary in flight and waits for them
// (history.Conversations.Close).
func (c control) Close() error { return c.core.Close() }

// RecallStore returns the Store of the elided results of the conversation
// key, for its recall tool (history.Conversations.RecallStore).
func (c control) RecallStore(key string) history.Store { return c.core.RecallStore(key) }

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
	control
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
	cs.control = control{cs.s.core}
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

func (cs *Conversations[R, N]) convs() convs[R, N] { return cs.s }

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
	control
}

// NewSystemConversations returns c's SystemConversations that keep their
// state in store and trim with opts. opts is copied.
func NewSystemConversations[R, N any](c *Codec[R, N], store history.StateStore, opts []history.Option) *SystemConversations[R, N] {
	cs := &SystemConversations[R, N]{}
	cs.s = newConvs(c, store, opts, func() conv.Settings {
		return conv.Settings{OnState: cs.OnState, MaxConversations: cs.MaxConversations, IdleAfter: cs.IdleAfter}
	})
	cs.control = control{cs.s.core}
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

func (cs *SystemConversations[R, N]) convs() convs[R, N] { return cs.s }
