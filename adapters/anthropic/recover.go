package anthropic

import (
	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
)

// RecoverOverflow trims a request the Messages API rejected as too long
// ("prompt is too long: N tokens > M maximum", or "input length and
// `max_tokens` exceed context limit"), so that the caller can retry it. It
// converts system and msgs as [Trim] does, calls
// [history.RecoverOverflow] with providerErr and attempt, and maps the
// decision back onto the caller's messages exactly as Trim does: kept
// messages are the caller's own values, changed ones rebuilt copies, the
// notice a user message. The system prompt is never dropped or changed.
//
// msgs must be the messages exactly as they were sent in the rejected
// request (the output of Trim, or of the previous RecoverOverflow), and
// opts the options of that trim (with the same history.WithCalibration,
// which then also learns the provider's count from the error). attempt is
// 1 for the first retry of a request and grows by one for each further
// rejection of it. Pins (history.WithPin) index msgs, the messages given
// here.
//
// A typical loop retries at most twice:
//
//	msgs, res, err := hanthropic.Trim(params.System, transcript, budget, opts...)
//	// (handle err as for Trim)
//	for attempt := 1; ; attempt++ {
//		params.Messages = msgs
//		reply, err = client.Messages.New(ctx, params)
//		if err == nil || attempt > 2 {
//			break
//		}
//		var rerr error
//		msgs, res, rerr = hanthropic.RecoverOverflow(params.System, msgs, err, attempt, opts...)
//		if rerr != nil {
//			break // not an overflow, or nothing left to drop: surface err
//		}
//	}
//
// Errors are the core's: history.ErrNotOverflow when providerErr is not a
// context overflow (a rate limit, an overload, a nil error...), with msgs
// itself, clipped to its length, and a Result describing it unchanged; a
// *history.RecoverError (wrapping history.ErrCannotRecover and
// providerErr) when only the system prompt and the latest turn are left,
// with those messages: surface it instead of retrying. A *MessageError when
// msgs cannot be converted, and the core's errors for invalid options,
// come with nil messages.
func RecoverOverflow(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, providerErr error, attempt int, opts ...history.Option) ([]anthropic.MessageParam, history.Result, error) {
	return codec.RecoverOverflow(system, msgs, providerErr, attempt, opts)
}
