package langchaingo

import (
	"github.com/histrim/history"
	"github.com/tmc/langchaingo/llms"
)

// RecoverOverflow trims msgs, the messages of a request the provider
// rejected for its length, so that the request can be retried. It converts
// msgs as Trim does, calls history.RecoverOverflow with providerErr and
// attempt, and maps the decision back onto the caller's messages exactly as
// Trim does (the same helper: kept messages are the caller's values, cut
// down or elided ones new messages over the caller's parts, notices human
// messages with one text part). opts are the options the request was
// trimmed with; history.WithPin takes indices into msgs.
//
// attempt numbers the recoveries of one request: 1 after the first
// rejection, 2 after the retry was rejected too. A runtime retries a small,
// fixed number of times:
//
//	send, res, err := langchaingo.Trim(msgs, budget, opts...)
//	resp, err := llm.GenerateContent(ctx, send, callOpts...)
//	for attempt := 1; err != nil && attempt <= 2; attempt++ {
//		var rerr error
//		if send, res, rerr = langchaingo.RecoverOverflow(send, err, attempt, opts...); rerr != nil {
//			break // not an overflow, or nothing left to drop: surface err
//		}
//		resp, err = llm.GenerateContent(ctx, send, callOpts...)
//	}
//
// (NewModel wraps an llms.Model with this loop.)
//
// Errors are the core's. When providerErr is not a context overflow
// (history.IsContextOverflow; a nil error included), the error is
// history.ErrNotOverflow and msgs come back unchanged (msgs itself, clipped
// to its length). When nothing can be dropped, a *history.RecoverError
// wrapping history.ErrCannotRecover and providerErr comes with the smallest
// history, which the caller should not send again. A conversion error
// wraps ErrInvalidMessage and comes with an empty Result, and a pin that
// cannot be honoured is a *history.OptionError, as with Trim.
// RecoverOverflow never modifies msgs.
func RecoverOverflow(msgs []llms.MessageContent, providerErr error, attempt int, opts ...history.Option) ([]llms.MessageContent, history.Result, error) {
	return codec.RecoverOverflow(struct{}{}, msgs, providerErr, attempt, opts)
}
