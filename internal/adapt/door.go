package adapt

// The door of every adapter (issue 34 item 2), written once: Fit reads the
// request the SDK sends (the model's name, the output it asks for, what it
// sends besides its messages), takes the model's figures from the table
// (models.Lookup, cached per name), trims with the options of the fit
// package for that model (the exact counter when its tokenizer is public,
// the task preset, the cache policy) and a Calibration per model that the
// Trimmer owns, under the budget and margin of history.Trimmer.Fit, and
// writes the messages to send back into the request. Observe feeds that
// Calibration from the response's usage.

import (
	"context"
	"slices"
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
	"github.com/histrim/history/internal/policy"
	"github.com/histrim/history/models"
)

// Request is what the door reads of a request an SDK sends.
type Request[R, N any] struct {
	// Model is the model's name as the request names it, looked up with
	// models.Lookup.
	Model string
	// Output is the output the request asks room for (max_tokens,
	// max_completion_tokens, max_output_tokens); zero or less: the
	// model's output limit.
	Output int
	// System is what the SDK takes apart from the messages (a system
	// prompt), as the request sends it.
	System R
	// Messages is the whole transcript.
	Messages []N
	// Overhead returns what the request sends besides its messages and
	// system prompt (tools, a response schema), counted with c, as the
	// adapter's Overhead counts it; nil: nothing.
	Overhead func(c history.Counter) int
	// Err, when set, is why the request cannot be trimmed from the client
	// (a Responses request chained onto server-held state): Fit returns it.
	Err error
}

// Door is an adapter's part of the door for requests of its SDK of type
// P, whose responses report usage of type U. Each field is set.
type Door[P, U, R, N any] struct {
	// Read returns what the door reads of params.
	Read func(params P) Request[R, N]
	// Write returns params sending msgs as its messages, params' other
	// fields as they were, with what the adapter finishes a request with
	// (Anthropic: the cache breakpoint on the new prefix); opts are the
	// options of the trim. params is not modified.
	Write func(params P, msgs []N, opts []history.Option) P
	// Usage returns the input tokens the provider reports in usage: the
	// whole prompt, cached parts included.
	Usage func(usage U) int
}

// doorKey says what a core Trimmer made by the door was made for: the
// options that vary per request. A Trimmer made by Trim has the zero key.
type doorKey struct {
	model            string
	output, overhead int
}

// fitCall is what the last Fit trimmed with, for RecoverOverflow and for
// a state restored after it.
type fitCall[R any] struct {
	r    R
	opts []history.Option
	key  doorKey
}

// entry is a model's row with what the door derives from it once.
type entry struct {
	m       models.Model
	counter history.Counter
	opts    []history.Option // fit.Options(m) with counter
	// stateless and stateful are DoorOptions' (clipped).
	stateless, stateful []history.Option
}

// table caches the entries of the model names the door has read.
var table sync.Map // string -> *entry

// lookup returns the entry of the model name, or the error of
// models.Lookup for a name it does not know (never cached, never a
// guess).
func lookup(name string) (*entry, error) {
	if e, ok := table.Load(name); ok {
		return e.(*entry), nil
	}
	m, err := models.Lookup(name)
	if err != nil {
		return nil, err
	}
	c := fit.Counter(m)
	e := &entry{m: m, counter: c, opts: append(fit.Options(m), history.WithCounter(c)),
		stateless: []history.Option{history.WithModel(m), policy.Task()},
		stateful:  slices.Clip(append([]history.Option{history.WithModel(m)}, fit.Policy()...))}
	actual, _ := table.LoadOrStore(name, e)
	return actual.(*entry), nil
}

// Calibrations are the Calibrations a Trimmer, the Trimmers of a
// Conversations, or a wrapper's door own: one per model, since what a
// Calibration learns of one model's tokenizer is wrong for another's. The
// zero value is ready to use and safe for concurrent use; it holds at most
// maxLimits models (past it, a new name makes room by forgetting them
// all, as Limits does: a caller calls a few models).
type Calibrations struct {
	mu sync.Mutex
	m  map[string]*history.Calibration
}

// For returns the Calibration of the model named, made on first use.
func (cs *Calibrations) For(model string) *history.Calibration {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.m[model]; ok {
		return c
	}
	if cs.m == nil || len(cs.m) >= maxLimits {
		cs.m = make(map[string]*history.Calibration)
	}
	c := new(history.Calibration)
	cs.m[model] = c
	return c
}

// options returns the options, resolved once, of a Fit of req with the
// Trimmer's options raw (the caller's, which come last and override), and
// what the core Trimmer is made for: the fit package's options for the
// model, its Calibration from cals, the model's output room as the request
// asks for it, and the request's overhead counted with the model's
// counter.
func options[R, N any](req *Request[R, N], raw []history.Option, cals *Calibrations) ([]history.Option, doorKey, error) {
	e, err := lookup(req.Model)
	if err != nil {
		return nil, doorKey{}, err
	}
	m := e.m
	if req.Output > 0 {
		m.Output = req.Output
	}
	overhead := 0
	if req.Overhead != nil {
		overhead = max(req.Overhead(e.counter), 0)
	}
	opts := make([]history.Option, 0, len(e.opts)+3+len(raw))
	opts = append(opts, e.opts...)
	opts = append(opts, history.WithModel(m), history.WithCalibration(cals.For(req.Model)), history.WithOverhead(overhead))
	opts = append(opts, raw...)
	return Once(opts), doorKey{model: req.Model, output: m.Output, overhead: overhead}, nil
}

// Fit trims req's transcript for its model and returns the native messages
// to send, as history.Trimmer.Fit decides it (the model's window less the
// output the request asks room for, less a margin until the model's
// Calibration has observed a response; the request's overhead counted),
// mapped back as Trim maps a decision. The Trimmer's options come after
// the door's and override them. A model the table does not know returns
// the error of models.Lookup (wrapping models.ErrUnknownModel) and nil
// messages. After a context overflow, RecoverOverflow trims what Fit sent
// further with the same options; Observe feeds the model's Calibration.
func (t *Trimmer[R, N]) Fit(ctx context.Context, req Request[R, N]) ([]N, history.Result, error) {
	if req.Err != nil {
		return nil, history.Result{}, req.Err
	}
	opts, key, err := options(&req, t.raw, t.cals)
	if err != nil {
		return nil, history.Result{}, err
	}
	t.mu.Lock()
	t.fit = &fitCall[R]{r: req.System, opts: opts, key: key}
	t.mu.Unlock()
	return t.run(ctx, req.System, req.Messages, opts, key, 0, func(ctx context.Context, inner *history.Trimmer, hist []history.Message) (history.Result, error) {
		return inner.Fit(ctx, hist)
	})
}

// FitOptions returns the options the last Fit trimmed with (for the
// adapter's Write), nil before any.
func (t *Trimmer[R, N]) FitOptions() []history.Option {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fit == nil {
		return nil
	}
	return t.fit.opts
}

// Observe records reported, the provider's count of the input of the
// request the last Fit or Trim was sent as, in the Calibration that trim
// used (history.Trimmer.Observe), and returns its verdict:
// history.VerdictInvalid, recording nothing, before any trim, without a
// Calibration, or for a count of zero or less.
func (t *Trimmer[R, N]) Observe(reported int) history.Verdict {
	inner := t.current()
	if inner == nil {
		return history.VerdictInvalid
	}
	return inner.Observe(reported)
}

// FitParams is the door of an adapter's Trimmer: the transcript of params
// (Door.Read) trimmed by Fit and written back into it (Door.Write). On an
// error the params are returned as given, with the Result and error of
// Fit; on a *history.BudgetError (the latest turn alone is too large) the
// trimmed messages are written, as Trim returns them.
func FitParams[P, U, R, N any](ctx context.Context, t *Trimmer[R, N], d *Door[P, U, R, N], params P) (P, history.Result, error) {
	out, res, err := t.Fit(ctx, d.Read(params))
	if out == nil {
		return params, res, err
	}
	return d.Write(params, out, t.FitOptions()), res, err
}

// ObserveUsage is an adapter's Trimmer's Observe of a response's usage.
func ObserveUsage[P, U, R, N any](t *Trimmer[R, N], d *Door[P, U, R, N], usage U) history.Verdict {
	return t.Observe(d.Usage(usage))
}

// run trims transcript, with r, under opts (made for key) with decide on
// the core Trimmer for them, and maps the decision back. A conversion or
// pin error comes with a Result holding only budget.
func (t *Trimmer[R, N]) run(ctx context.Context, r R, transcript []N, opts []history.Option, key doorKey, budget int,
	decide func(ctx context.Context, inner *history.Trimmer, hist []history.Message) (history.Result, error)) ([]N, history.Result, error) {
	p, err := t.c.prepare(r, transcript, opts)
	if err != nil {
		return nil, history.Result{Budget: budget}, err
	}
	res, err := decide(ctx, t.trimmer(p.opts, key), p.v.Hist)
	out, res, _, err := p.finish(res, err)
	return out, res, err
}

// carry returns a core Trimmer made with opts holding old's state (its
// plan, summary, what a recovery learnt), so that a change of what the
// door's core Trimmer is made for (the request's output or overhead) keeps
// what was learnt: the plan is checked against the next transcript as a
// restored one is. It is a fresh one when old's state does not restore.
func carry(old *history.Trimmer, opts []history.Option) *history.Trimmer {
	n := history.NewTrimmer(opts...)
	if data, err := old.MarshalBinary(); err == nil && n.UnmarshalBinary(data) == nil {
		return n
	}
	return history.NewTrimmer(opts...)
}

// ModelBudget is the door for a wrapper that trims each call with the
// package functions (the framework modules' plugins and middleware): the
// input budget of a request to the model named that asks output tokens of
// room (zero or less: the model's output limit), by the rule of
// history.Trimmer.Fit: the window less the output room, less
// history.MarginShare of the window until cal has observed a response
// (always with a nil cal); and the model's counter (the exact one when its
// tokenizer is public, cached per model). A name the table does not know
// returns the error of models.Lookup: a budget is never guessed.
func ModelBudget(model string, output int, cal *history.Calibration) (int, history.Counter, error) {
	e, err := lookup(model)
	if err != nil {
		return 0, nil, err
	}
	b := history.Budget{Window: e.m.Window, Output: e.m.Output}
	if output > 0 {
		b.Output = output
	}
	warm := false
	if cal != nil {
		_, _, _, warm = cal.Model()
	}
	if !warm {
		b.Reserve = int(float64(e.m.Window) * history.MarginShare)
	}
	return max(b.Input(), 1), e.counter, nil
}

// DoorOptions returns the options the door of a wrapper that trims each
// call with the package functions (the framework modules, eino's
// ChatModel and langchaingo's Model without a Budget) trims a request to
// the model named with, before the wrapper's own (Config.Options, then
// the counter, Calibration and overhead it sets, which override them):
// fit.Options for the model less the counter and the Calibration, which
// the wrapper sets itself (ModelBudget's counter, a Calibration per
// model). That is history.WithModel with the model's row (its provider's
// cache retention decides a Trimmer's cold resume) and the default
// policy: with stateful (a Trimmer per conversation trims), fit.Policy
// whole, the task preset and the cache policy (the low-water mark);
// without (a stateless trim of the whole transcript at every request),
// the task preset alone: such a trim moves its cut at every request
// whatever it keeps, so a low-water mark would cost context without
// saving a rewrite (docs/prompt-caching.md). A name the table does not
// know returns the error of models.Lookup. The slice is shared and
// clipped: append to it, never write into it.
func DoorOptions(model string, stateful bool) ([]history.Option, error) {
	e, err := lookup(model)
	if err != nil {
		return nil, err
	}
	if stateful {
		return e.stateful, nil
	}
	return e.stateless, nil
}
