package openai

import (
	"github.com/histrim/history"
	"github.com/openai/openai-go/v3"
)

// RecoverOverflow trims msgs after the API rejected them for their length
// (context_length_exceeded), so that the request can be retried: it
// converts msgs as [Trim] does, calls [history.RecoverOverflow] with
// providerErr, attempt and opts, and maps the decision back onto the
// caller's messages exactly as Trim does (the caller's own values, notices
// rendered natively, elided results and stripped or cleared calls rebuilt
// as copies).
//
// msgs is what the rejected request sent (the output of the Trim before
// it), providerErr the client's error, as returned by
// client.Chat.Completions.New (wrapped or not: the *openai.Error's body is
// read through its RawJSON, so the sizes OpenAI states are used), and
// attempt numbers the recoveries of one request: 1 after the first
// rejection, 2 after the retried request was rejected again. Pass the
// options of the Trim (counter, calibration, overhead, elision, pins):
// with [history.WithCalibration], the sizes in the error teach the
// calibration too.
//
// A request with at most two retries (opts as for the Trim that built
// params.Messages):
//
//	completion, err := client.Chat.Completions.New(ctx, params)
//	for attempt := 1; err != nil && attempt <= 2; attempt++ {
//		var rerr error
//		params.Messages, res, rerr = hopenai.RecoverOverflow(params.Messages, err, attempt, opts...)
//		if rerr != nil {
//			break // not an overflow, or nothing left to drop: handle err
//		}
//		completion, err = client.Chat.Completions.New(ctx, params)
//	}
//
// Results, as the core's:
//
//   - providerErr is not a context overflow ([history.IsContextOverflow] is
//     false: a rate limit, an auth error, nil): msgs itself, clipped to its
//     length, and [history.ErrNotOverflow];
//   - the history shrank (turns, steps or tool results went, or the orphan
//     sweep repaired a pair): the trimmed messages, res and a nil error:
//     retry with them;
//   - nothing more can be dropped (only the leading system messages and the
//     latest turn are left): what is left, res, and a *history.RecoverError
//     wrapping [history.ErrCannotRecover] and providerErr; do not retry;
//   - msgs cannot be converted: nil and a *MessageError; an invalid option
//     (a pin on a tool message, for one): nil and the core's
//     *history.OptionError.
//
// RecoverOverflow never modifies msgs. The output converts back
// ([ToHistory]) to res.Messages, as Trim's does.
func RecoverOverflow(msgs []openai.ChatCompletionMessageParamUnion, providerErr error, attempt int, opts ...history.Option) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
	return codec.RecoverOverflow(struct{}{}, msgs, providerErr, attempt, opts)
}
