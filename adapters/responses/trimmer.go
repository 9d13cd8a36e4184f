package responses

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// Trimmer is the stateful trimmer of a conversation's messages: a
// history.Trimmer (maintenance points, cold resume, summaries, the plan
// kept between requests so that the provider's prompt cache survives)
// over the caller's whole transcript, its decisions mapped back onto the
// caller's messages as [Trim] maps them. Its methods are
// Trim(transcript, budget), TrimContext(ctx, transcript, budget),
// RecoverOverflow(transcript, providerErr, attempt) and Reset; pins
// (history.WithPin) index the transcript. See docs/adapters.md, "The
// stateful trimmer".
type Trimmer = adapt.Trimmer[struct{}, Item]

// NewTrimmer returns a Trimmer for one conversation that trims with opts
// (history.WithLowWater, history.WithTrigger, history.WithElision, ...),
// fixed for its life.
func NewTrimmer(opts ...history.Option) *Trimmer { return codec.NewTrimmer(struct{}{}, opts) }

// Positions returns where msgs[i], for each index i, landed in the output
// of the Trim or RecoverOverflow of msgs that returned res: the index to
// pin it at (history.WithPin) when that output is trimmed again; -1 for a
// message the output does not hold.
func Positions(msgs []Item, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}
