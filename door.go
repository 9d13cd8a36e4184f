// This file owns the door: a Trimmer that knows the model it trims for
// (WithModel), so that a request's budget is the model's window less its
// reply's room, with one margin until the provider's count is learnt
// (Fit), and the provider's usage feeds the Trimmer's own Calibration
// (Observe). The package fit builds such a Trimmer from a model's name.

package history

import (
	"context"
	"strconv"

	"github.com/histrim/history/models"
)

// MarginShare is the share of the model's window that [Trimmer.Fit] keeps
// free until the Trimmer's [Calibration] has seen a response (or always,
// without one): the first requests can only be sized by the library's own
// count, which the [Heuristic] puts within about 4% of the provider's on
// the corpus's conversations (an exact counter is closer, but the request
// carries what neither counts: the provider's framing of tools and
// roles). Once the Calibration is warm it aims at the provider's count,
// and the margin goes.
const MarginShare = 0.05

// WithModel makes a [Trimmer] trim for the model m (see
// github.com/histrim/history/models: [models.Lookup] and [models.Discover]
// give one): [Trimmer.Fit] takes each request's budget from m.Window less
// m.Output (the room the reply keeps; lower it to what the request asks
// for, max_tokens, by setting m.Output), and the cache retention of
// [WithColdAfter] is m.CacheRetention when positive and WithColdAfter is
// not given. Other entry points ignore it. A model with no window, or an
// output room that is negative or leaves no input, makes the call return
// an *[OptionError].
func WithModel(m models.Model) Option {
	var err error
	switch {
	case m.Window <= 0:
		err = &OptionError{Option: "WithModel", Reason: "model " + strconv.Quote(m.Name) + " has no window"}
	case m.Output < 0 || m.Output >= m.Window:
		err = &OptionError{Option: "WithModel", Reason: "model " + strconv.Quote(m.Name) + ": output room " + strconv.Itoa(m.Output) +
			" leaves no input in a window of " + strconv.Itoa(m.Window)}
	}
	return func(o *options) {
		if err != nil {
			o.fail(err)
			return
		}
		o.model = &m
	}
}

// Fit is [Trimmer.TrimContext] with the budget of the model [WithModel]
// names: its window less its output room, less [MarginShare] of the window
// until the Trimmer's [Calibration] ([WithCalibration]) has observed a
// response, and always without one. What the request sends besides its
// messages (tools, a response schema) counts through [WithOverhead]; a
// Calibration learns it too. After a context overflow, call
// [Trimmer.RecoverOverflow]: its later plans stay below what the provider
// said. Without WithModel, Fit returns an *[OptionError]: a budget is
// never guessed.
func (t *Trimmer) Fit(ctx context.Context, msgs []Message) (Result, error) {
	budget, err := t.modelBudget()
	if err != nil {
		return Result{}, err
	}
	return t.TrimContext(ctx, msgs, budget)
}

// modelBudget returns the input budget of the Trimmer's model (see Fit).
func (t *Trimmer) modelBudget() (int, error) {
	o := newOptions(t.opts)
	defer o.release()
	if o.err != nil {
		return 0, o.err
	}
	if o.model == nil {
		return 0, &OptionError{Option: "WithModel", Reason: "Fit needs the model: no WithModel among the Trimmer's options"}
	}
	b := Budget{Window: o.model.Window, Output: o.model.Output}
	if _, _, _, warm := calibModel(o.calib); !warm {
		b.Reserve = int(float64(o.model.Window) * MarginShare)
	}
	return max(b.Input(), 1), nil
}

// Observe records what the provider reported as the input of the request
// the Trimmer's last Result was sent as (the usage's prompt or input
// tokens: OpenAI's prompt_tokens or input_tokens; Anthropic's input_tokens
// plus both cache figures; Gemini's promptTokenCount) in the Trimmer's
// [Calibration] ([WithCalibration]), against what that Result sent, and
// returns its [Verdict]: [Calibration.Observe] of the two. It returns
// [VerdictInvalid] and records nothing without a Calibration, before any
// trim, or for a reported count of zero or less.
func (t *Trimmer) Observe(reported int) Verdict {
	o := newOptions(t.opts)
	cal := o.calib
	o.release()
	t.mu.Lock()
	sent := t.sent
	t.mu.Unlock()
	if cal == nil || sent <= 0 || reported <= 0 {
		return VerdictInvalid
	}
	return cal.Observe(sent, reported)
}

// calibModel is cal.Model, and not warm for a nil cal.
func calibModel(cal *Calibration) (scale, overhead, margin float64, ok bool) {
	if cal == nil {
		return 0, 0, 0, false
	}
	return cal.Model()
}
