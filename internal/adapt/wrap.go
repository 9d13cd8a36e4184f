package adapt

import (
	"slices"

	"github.com/histrim/history"
)

// The parts every wrapper model shares (fantasy's Model, Genkit's
// Middleware, ADK's Callbacks, trpc-agent-go's Wrap): the options of a
// call, the number of resends, and the observation of the provider's
// count.

// CallOptions returns opts, a wrapper's Config.Options, with what the
// wrapper sets from its Config for one call: history.WithCounter(c) and
// history.WithCalibration(cal) when they are set (a nil one leaves opts'
// own alone), then history.WithOverhead(overhead) when it is positive.
// opts is not written to.
func CallOptions(opts []history.Option, c history.Counter, cal *history.Calibration, overhead int) []history.Option {
	opts = slices.Clip(opts)
	if c != nil {
		opts = append(opts, history.WithCounter(c))
	}
	if cal != nil {
		opts = append(opts, history.WithCalibration(cal))
	}
	if overhead > 0 {
		opts = append(opts, history.WithOverhead(overhead))
	}
	return opts
}

// Retries returns how many times a wrapper resends a request rejected for
// its length, for a Config.MaxRetries of n: def when n is 0, none when n
// is negative.
func Retries(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// Observe feeds reported, the provider's count of a request whose trim
// counted sent tokens, to cal, and reports the verdict to on when it is
// set; it does nothing when cal is nil or reported is not positive.
func Observe(cal *history.Calibration, sent, reported int, on func(sent, reported int, v history.Verdict)) {
	if cal == nil || reported <= 0 {
		return
	}
	v := cal.Observe(sent, reported)
	if on != nil {
		on(sent, reported, v)
	}
}
