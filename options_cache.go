// This file owns the options of prompt caching: the compact trigger, the
// low-water mark, the provider's cache retention and prices, the clock,
// and the arithmetic of the sizes they set (target, limit).

package history

import (
	"math"
	"strconv"
	"time"
)

// DefaultLowWaterShare is where a trim past a trigger set alone goes down
// to, as a share of the trigger: WithTrigger(0.6) alone trims to 0.36 of the
// budget, the policy docs/prompt-caching.md measures.
const DefaultLowWaterShare = 0.6

// WithTrigger sets the compact trigger: a trim starts only once the
// history exceeds fraction*budget, not the budget itself, and then goes
// down to the low-water mark ([WithLowWater], a share of the budget that
// must lie below the trigger, or else an *[OptionError]), by default
// [DefaultLowWaterShare] of the trigger. Below the trigger the history is
// sent as it is. The budget stays the hard limit: a latest turn larger
// than the trigger but within the budget is sent, and [ErrLatestTurnTooLarge]
// means the budget itself cannot be met.
//
// A trigger below the context window is what keeps a long session cheap
// under prompt caching: every request re-reads the whole prompt at the
// cache-read price, so the prompt's mean size sets most of the bill, and
// the trigger caps it (docs/prompt-caching.md measures it). fraction must
// lie in (0, 1]; 1 is the default, any other value (0, negative, above 1,
// NaN) makes the call return an *[OptionError].
func WithTrigger(fraction float64) Option {
	var err error
	if !(fraction > 0 && fraction <= 1) { // also catches NaN
		err = &OptionError{Option: "WithTrigger", Reason: "fraction " + strconv.FormatFloat(fraction, 'g', -1, 64) + " is outside (0, 1]"}
	}
	return checked(err, func(o *options) { o.trigger = fraction })
}

// WithLowWater adds hysteresis for prompt caching: when a trim is needed
// (the history exceeds the budget), it trims down to fraction*budget instead
// of just under the budget, so the next requests fit without another trim
// and the provider's cached prefix survives them. Histories that fit the
// budget are still returned untouched. fraction must lie in the open
// interval (0, 1); any other value (0, 1, negative, NaN) makes the call
// return an *[OptionError]. A [Trimmer] built with it holds its plan until the
// history grows back to the budget. See docs/prompt-caching.md.
func WithLowWater(fraction float64) Option {
	var err error
	if !(fraction > 0 && fraction < 1) { // also catches NaN
		err = &OptionError{Option: "WithLowWater", Reason: "fraction " + strconv.FormatFloat(fraction, 'g', -1, 64) + " is outside (0, 1)"}
	}
	return checked(err, func(o *options) { o.lowWater = fraction })
}

// DefaultColdAfter is the idle time after which a [Trimmer] takes the
// provider's prompt cache to be gone ([WithColdAfter]).
const DefaultColdAfter = 24 * time.Hour

// WithColdAfter sets how long the provider keeps a prompt cached after the
// last request: after an idle gap longer than d, a [Trimmer] treats the next
// request as a cold resume. The cached prefix is gone, so rewriting it costs
// no extra cache misses and shrinks the full-price first request: with
// [WithElision], the Trimmer elides every eligible tool result (outside the
// [ElideOptions.KeepRecent] tail, at least [ElideOptions.MinTokens], tools
// not excluded), even when the history fits, and reports it in an [Event]
// with [ReasonColdResume]; warm requests are never rewritten for it.
//
// The default is [DefaultColdAfter] (24 hours), longer than any provider's
// retention, so that a live cache is never burnt by mistake; set the
// provider's value (see docs/prompt-caching.md: 5 minutes for Anthropic's
// default cache, 1 hour for its extended one, up to 24 hours for OpenAI's
// extended retention). d must be positive, otherwise the call returns an
// *[OptionError]. Only a Trimmer reads it; it needs WithElision to act.
func WithColdAfter(d time.Duration) Option {
	var err error
	if d <= 0 {
		err = &OptionError{Option: "WithColdAfter", Reason: "duration " + d.String() + " is not positive"}
	}
	return checked(err, func(o *options) { o.coldAfter = d })
}

// WithClock replaces the clock a [Trimmer] reads to measure idle gaps
// ([WithColdAfter]); the default, and what a nil now means, is time.Now.
// For tests and simulations.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// WithPrices gives a [Trimmer] the provider's prompt-cache prices, so that
// the [Event] of each maintenance point states what the request is
// expected to bill ([Event.Billed]) besides the tokens it rewrites
// ([Event.Rewritten], reported with or without prices). Both prices must be
// finite and non-negative, otherwise the call returns an *[OptionError].
// See [Prices] for presets.
func WithPrices(p Prices) Option {
	var err error
	if !(p.Read >= 0 && p.Write >= 0) || math.IsInf(p.Read, 0) || math.IsInf(p.Write, 0) {
		err = &OptionError{Option: "WithPrices", Reason: "prices must be finite and non-negative"}
	}
	return checked(err, func(o *options) { o.prices = &p })
}

// now returns the time by the Trimmer's clock (WithClock).
func (o *options) now() time.Time {
	if o.clock != nil {
		return o.clock()
	}
	return time.Now()
}

// retention returns how long the provider keeps a prompt cached
// (WithColdAfter).
func (o *options) retention() time.Duration {
	switch {
	case o.coldAfter > 0:
		return o.coldAfter
	case o.model != nil && o.model.CacheRetention > 0:
		return o.model.CacheRetention // WithModel's, when WithColdAfter is not given
	}
	return DefaultColdAfter
}

// target returns the budget a trim aims for once it has to trim: the
// trigger (see limit), or the low-water share of the budget below it.
func (o *options) target(budget int) int {
	return min(share(budget, o.lowWater), o.limit(budget))
}

// limit returns the size above which a history is trimmed: the budget, or
// the trigger's share of it.
func (o *options) limit(budget int) int {
	return share(budget, o.trigger)
}

// share returns fraction*budget, at least 1 and at most budget; budget
// itself for a fraction of 0 (off).
func share(budget int, fraction float64) int {
	if fraction == 0 {
		return budget
	}
	t := float64(budget) * fraction
	if !(t < float64(math.MaxInt)) { // float rounding near MaxInt
		return budget - 1
	}
	return min(max(int(t), 1), budget)
}
