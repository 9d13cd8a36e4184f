package adapt

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/pins"
)

// Trimmer is an adapter's stateful trimmer: a history.Trimmer over the
// conversion of the caller's full native transcript, its decisions mapped
// back onto the native messages, so that the prompt only grows at its end
// between maintenance points and the provider's prompt cache survives
// (docs/prompt-caching.md). Pins (history.WithPin) are indices into the
// transcript, which only grows. The part of the request the SDK takes
// separately (a system prompt) is fixed at construction: it opens the
// cached prompt, so a new one starts a new Trimmer. It is safe for
// concurrent use; use one per conversation. Each adapter exports it as its
// Trimmer, made by its NewTrimmer.
type Trimmer[R, N any] struct {
	c    *Codec[R, N]
	r    R
	opts []history.Option // the caller's, resolved once

	mu    sync.Mutex
	inner *history.Trimmer
	pins  []int // the pins inner was made with, in the converted history
	// The last request, for RecoverOverflow while the core's Trimmer
	// cannot recover itself: what was sent and Kept into the transcript's
	// conversion.
	sent []history.Message
	kept []int
	// ceiling, when positive, is the budget the provider allowed by the
	// count of the last recovery (see RecoverOverflow): Trim aims at no
	// more until Reset.
	ceiling int
}

// NewTrimmer returns the Trimmer of c for requests with r (a system prompt
// the SDK takes separately) with opts, both fixed for its life (see
// history.NewTrimmer).
func (c *Codec[R, N]) NewTrimmer(r R, opts []history.Option) *Trimmer[R, N] {
	return &Trimmer[R, N]{c: c, r: r, opts: Once(slices.Clone(opts))}
}

// Trim returns the native messages to send for transcript, the caller's
// whole conversation, under budget, as history.Trimmer.Trim decides it,
// mapped back as the adapter's Trim maps a decision. The Result describes
// the transcript as the adapter's Trim describes its input. Call it once
// before every request.
func (t *Trimmer[R, N]) Trim(transcript []N, budget int) ([]N, history.Result, error) {
	return t.TrimContext(context.Background(), transcript, budget)
}

// TrimContext is Trim with a context for the summarizer of
// history.WithSummarizer (see history.Trimmer.TrimContext).
func (t *Trimmer[R, N]) TrimContext(ctx context.Context, transcript []N, budget int) ([]N, history.Result, error) {
	p, err := t.c.prepare(t.r, transcript, t.opts)
	if err != nil {
		return nil, history.Result{Budget: budget}, err
	}
	inner := t.trimmer(p.opts)
	t.mu.Lock()
	if t.ceiling > 0 {
		budget = min(budget, t.ceiling)
	}
	t.mu.Unlock()
	res, err := inner.TrimContext(ctx, p.v.Hist, budget)
	t.remember(res)
	out, res, _, err := p.finish(res, err)
	return out, res, err
}

// trimmer returns the history.Trimmer for a trim with opts (translated):
// the one kept, unless the translated pins differ from those it was made
// with (a transcript whose earlier messages converted anew), then a new
// one, which plans afresh.
func (t *Trimmer[R, N]) trimmer(opts []history.Option) *history.Trimmer {
	pinned := pins.Read(opts)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inner == nil || !slices.Equal(pinned, t.pins) {
		t.inner, t.pins = history.NewTrimmer(opts...), pinned
	}
	return t.inner
}

func (t *Trimmer[R, N]) remember(res history.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent, t.kept = res.Messages, res.Kept
}

// recoverer is the core Trimmer's own recovery, where the core has it:
// after it, the Trimmer's next plan fits what the provider said.
type recoverer interface {
	RecoverOverflow(msgs []history.Message, providerErr error, attempt int) (history.Result, error)
}

// RecoverOverflow trims what the last Trim sent for transcript further
// after the provider rejected it for its length (history.RecoverOverflow,
// providerErr read as the adapter reads it), and maps the decision back
// onto the transcript as Trim does. transcript must be that of the last
// Trim. Its results are those of the adapter's RecoverOverflow:
// history.ErrNotOverflow with nil messages (send what Trim returned, or
// give up), a *history.RecoverError with what is left.
//
// After a recovery the Trimmer's next plan fits what the provider said.
// Where the core's Trimmer can recover itself, it does; otherwise the
// recovery is the stateless one applied to what was sent, and until Reset
// every Trim aims at no more than the budget it derived (the provider's
// limit in the Counter's tokens, less a margin), planning afresh once.
func (t *Trimmer[R, N]) RecoverOverflow(transcript []N, providerErr error, attempt int) ([]N, history.Result, error) {
	p, err := t.c.prepare(t.r, transcript, t.opts)
	if err != nil {
		return nil, history.Result{}, err
	}
	read := t.c.read(providerErr)
	if !history.IsContextOverflow(read) {
		return nil, history.Result{}, history.ErrNotOverflow
	}
	inner := t.trimmer(p.opts)
	var res history.Result
	if rec, ok := any(inner).(recoverer); ok {
		res, err = rec.RecoverOverflow(p.v.Hist, read, attempt)
	} else {
		res, err = t.recoverSent(read, attempt, p.opts)
		inner.Reset()
		if res.Budget > 0 {
			t.mu.Lock()
			t.ceiling = res.Budget
			t.mu.Unlock()
		}
	}
	if err == nil || errors.As(err, new(*history.RecoverError)) {
		t.remember(res)
	}
	out, res, _, err := p.finish(res, err)
	return out, res, t.c.restore(err, providerErr)
}

// recoverSent is the stateless recovery of what the last Trim sent, its
// Result composed with that Trim's so that it describes the transcript.
func (t *Trimmer[R, N]) recoverSent(providerErr error, attempt int, opts []history.Option) (history.Result, error) {
	t.mu.Lock()
	sent, kept := t.sent, t.kept
	t.mu.Unlock()
	if sent == nil {
		return history.Result{}, errors.New("history: Trimmer.RecoverOverflow before Trim")
	}
	// The pins of opts index the transcript; carry them to what was sent.
	if pinned := pins.Read(opts); pinned != nil {
		opts = append(slices.Clip(opts), history.WithPin(Follow(kept, pinned)...))
	}
	res, err := history.RecoverOverflow(sent, providerErr, attempt, opts...)
	if res.Kept != nil {
		res.Kept = Compose(kept, res.Kept)
	}
	return res, err
}

// Reset forgets the plan: the next Trim plans afresh (see
// history.Trimmer.Reset).
func (t *Trimmer[R, N]) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inner != nil {
		t.inner.Reset()
	}
	t.sent, t.kept, t.ceiling = nil, nil, 0
}

// Conversation holds the Trimmer a wrapper model (eino's ChatModel,
// langchaingo's Model) keeps for the one conversation it serves under
// Config.Stateful. The zero value holds none.
type Conversation[R, N any] struct {
	mu       sync.Mutex
	tr       *Trimmer[R, N]
	overhead int
}

// Trimmer returns the conversation's Trimmer of c for requests with r,
// trimmed with opts, whose overhead (history.WithOverhead among opts) is
// overhead: the one kept, or a new one when there is none or the overhead
// changed (other tools), which plans afresh.
func (s *Conversation[R, N]) Trimmer(c *Codec[R, N], r R, overhead int, opts []history.Option) *Trimmer[R, N] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tr == nil || s.overhead != overhead {
		s.tr, s.overhead = c.NewTrimmer(r, opts), overhead
	}
	return s.tr
}
