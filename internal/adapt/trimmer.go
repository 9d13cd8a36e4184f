package adapt

import (
	"context"
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
// concurrent use; use one per conversation. Its state saves and restores
// (MarshalBinary, UnmarshalBinary), which Conversations does for a
// runtime's replicas. Each adapter exports it as its Trimmer, made by its
// NewTrimmer.
type Trimmer[R, N any] struct {
	c    *Codec[R, N]
	r    R
	opts []history.Option // the caller's, resolved once
	raw  []history.Option // the caller's, for the door's options to come before
	cals *Calibrations    // the door's, one per model (a Conversations' are shared)

	mu      sync.Mutex
	inner   *history.Trimmer
	pins    []int          // the pins inner was made with, in the converted history
	key     doorKey        // what the door made inner for; zero: Trim's options
	fit     *fitCall[R]    // the last Fit's, nil when the last call was Trim
	pending *pendingState  // a state restored under other options, for the next call
	closed  bool           // Close was called: no background summary starts
	retired sync.WaitGroup // the Close calls of the core Trimmers replaced
}

// NewTrimmer returns the Trimmer of c for requests with r (a system prompt
// the SDK takes separately) with opts, both fixed for its life (see
// history.NewTrimmer).
func (c *Codec[R, N]) NewTrimmer(r R, opts []history.Option) *Trimmer[R, N] {
	raw := slices.Clone(opts)
	return &Trimmer[R, N]{c: c, r: r, opts: Once(raw), raw: raw, cals: new(Calibrations)}
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
	return t.trim(ctx, t.r, transcript, budget)
}

// trim is TrimContext for requests with r (a Conversations' Trimmers take
// the system prompt of each call).
func (t *Trimmer[R, N]) trim(ctx context.Context, r R, transcript []N, budget int) ([]N, history.Result, error) {
	t.mu.Lock()
	t.fit = nil
	t.mu.Unlock()
	return t.run(ctx, r, transcript, t.opts, doorKey{}, budget, func(ctx context.Context, inner *history.Trimmer, hist []history.Message) (history.Result, error) {
		return inner.TrimContext(ctx, hist, budget)
	})
}

// trimmer returns the history.Trimmer for a trim with opts (translated),
// made for key: the one kept, unless the translated pins differ from those
// it was made with (a transcript whose earlier messages converted anew),
// then a new one, which plans afresh; or, when it was made for another
// key (the door's options changed, or Trim follows Fit), a new one that
// carries its state.
func (t *Trimmer[R, N]) trimmer(opts []history.Option, key doorKey) *history.Trimmer {
	pinned := pins.Read(opts)
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.pending; p != nil {
		t.pending = nil
		if slices.Equal(pinned, p.pinned) {
			if n := history.NewTrimmer(opts...); n.UnmarshalBinary(p.core) == nil {
				t.installLocked(n, pinned)
				t.key = key
				return t.inner
			}
		}
	}
	switch {
	case t.inner == nil || !slices.Equal(pinned, t.pins):
		t.installLocked(history.NewTrimmer(opts...), pinned)
	case t.key != key:
		t.installLocked(carry(t.inner, opts), pinned)
	default:
		return t.inner
	}
	t.key = key
	return t.inner
}

// Close stops the background summary in flight, if any
// (history.SummaryOptions.Background), and waits for the Summarizer's call
// to return (see history.Trimmer.Close), that of a plan the Trimmer
// replaced too. The Trimmer still trims after Close, but starts no
// background summary. It returns nil, and is safe to call more than once,
// and concurrently with Trim.
func (t *Trimmer[R, N]) Close() error {
	t.mu.Lock()
	t.closed = true
	inner := t.inner
	t.mu.Unlock()
	if inner != nil {
		inner.Close()
	}
	t.retired.Wait()
	return nil
}

// SummaryDone returns a channel closed when the background summary in
// flight has finished, or already closed when there is none (see
// history.Trimmer.SummaryDone).
func (t *Trimmer[R, N]) SummaryDone() <-chan struct{} {
	inner := t.current()
	if inner == nil {
		return history.NewTrimmer().SummaryDone()
	}
	return inner.SummaryDone()
}

// Summary returns the summary the last prompt holds and what it covers
// (history.Trimmer.Summary): the summary as a core message, with the
// turns, messages and tokens it stands for; false when the prompt holds
// none. A runtime can persist it or show it. From and UpTo index the
// converted transcript (ToHistory of it, with a system prompt the SDK
// takes separately at 0), which is the native transcript's own indexing
// only where the adapter converts one for one.
func (t *Trimmer[R, N]) Summary() (history.SummaryInfo, bool) {
	inner := t.current()
	if inner == nil {
		return history.SummaryInfo{}, false
	}
	return inner.Summary()
}

// current returns the history.Trimmer in use, nil before the first trim.
func (t *Trimmer[R, N]) current() *history.Trimmer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inner
}

// RecoverOverflow trims what the last Trim sent for transcript further
// after the provider rejected it for its length (history.RecoverOverflow,
// providerErr read as the adapter reads it), and maps the decision back
// onto the transcript as Trim does. transcript must be that of the last
// Trim. Its results are those of the adapter's RecoverOverflow:
// history.ErrNotOverflow with nil messages (send what Trim returned, or
// give up), a *history.RecoverError with what is left.
//
// After a recovery the Trimmer's next plans fit what the provider said
// (history.Trimmer.RecoverOverflow).
//
// After Fit, it recovers with the options and system prompt of that Fit.
func (t *Trimmer[R, N]) RecoverOverflow(transcript []N, providerErr error, attempt int) ([]N, history.Result, error) {
	return t.recover(t.r, transcript, providerErr, attempt)
}

// recover is RecoverOverflow for requests with r (the last Fit's system
// prompt replaces it after a Fit).
func (t *Trimmer[R, N]) recover(r R, transcript []N, providerErr error, attempt int) ([]N, history.Result, error) {
	opts, key := t.opts, doorKey{}
	t.mu.Lock()
	if f := t.fit; f != nil {
		r, opts, key = f.r, f.opts, f.key
	}
	t.mu.Unlock()
	p, err := t.c.prepare(r, transcript, opts)
	if err != nil {
		return nil, history.Result{}, err
	}
	read := t.c.read(providerErr)
	if !history.IsContextOverflow(read) {
		return nil, history.Result{}, history.ErrNotOverflow
	}
	res, err := t.trimmer(p.opts, key).RecoverOverflow(p.v.Hist, read, attempt)
	out, res, _, err := p.finish(res, err)
	return out, res, t.c.restore(err, providerErr)
}

// Reset forgets the plan: the next Trim plans afresh (see
// history.Trimmer.Reset).
func (t *Trimmer[R, N]) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inner != nil {
		t.inner.Reset()
	}
}

// Conversation holds the Trimmers a wrapper model (eino's ChatModel,
// langchaingo's Model) keeps for the one conversation it serves under
// Config.Stateful: one per model the calls name, since a Trimmer is made
// with its model's options (the counter, the Calibration, the door's
// policy), which another model's calls must not trim with. The zero value
// holds none and is safe for concurrent use; it holds at most maxLimits
// models (past it, a new name makes room by forgetting them all, as
// Limits does: a caller calls a few models).
type Conversation[R, N any] struct {
	mu sync.Mutex
	m  map[string]*convTrimmer[R, N]
}

// convTrimmer is a model's Trimmer in a Conversation and the overhead it
// was made for.
type convTrimmer[R, N any] struct {
	tr       *Trimmer[R, N]
	overhead int
}

// Trimmer returns the conversation's Trimmer of c for requests to model
// ("" for a wrapper with a fixed budget, which names none) with r,
// trimmed with opts, whose overhead (history.WithOverhead among opts) is
// overhead: the one kept for model, or a new one when there is none or
// the overhead changed (other tools), which plans afresh.
func (s *Conversation[R, N]) Trimmer(c *Codec[R, N], r R, model string, overhead int, opts []history.Option) *Trimmer[R, N] {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[model]
	if ok && e.overhead == overhead {
		return e.tr
	}
	if s.m == nil || (!ok && len(s.m) >= maxLimits) {
		s.m = make(map[string]*convTrimmer[R, N])
	}
	e = &convTrimmer[R, N]{tr: c.NewTrimmer(r, opts), overhead: overhead}
	s.m[model] = e
	return e.tr
}
