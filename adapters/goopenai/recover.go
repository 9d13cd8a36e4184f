package goopenai

import (
	"github.com/histrim/history"
	openai "github.com/sashabaranov/go-openai"
)

// RecoverOverflow trims msgs after the API rejected them for their length,
// so that the request can be retried: it converts msgs as Trim does, lets
// history.RecoverOverflow decide from the sizes the error states, and maps
// the decision back onto the caller's messages as Trim does.
//
// msgs is what the rejected request sent (the output of the Trim before
// it); providerErr is the client's error: an *openai.APIError (OpenAI's
// JSON body, "This model's maximum context length is N tokens. However,
// your messages resulted in M tokens."), or an *openai.RequestError (a
// body the client could not read as OpenAI's, such as vLLM's or a
// proxy's), wrapped or not; the core reads both through their text, and
// rules out a 429 by their HTTPStatusCode. attempt is 1 for the first
// retry of a request and grows by one with each further rejection of it.
// opts are those of the Trim (the Counter, history.WithOverhead,
// history.WithCalibration, which also learns from the sizes the error
// states).
//
// Results, as the core's:
//
//   - providerErr is not a context overflow (a rate limit, an
//     authentication error, nil): msgs itself, clipped, and
//     history.ErrNotOverflow;
//   - the history shrank: the trimmed messages, res and nil: retry with
//     them;
//   - nothing more can be dropped: what is left and a
//     *history.RecoverError wrapping history.ErrCannotRecover and
//     providerErr: do not retry;
//   - msgs cannot be converted: nil and a *MessageError; an invalid
//     option: nil and the core's error.
func RecoverOverflow(msgs []openai.ChatCompletionMessage, providerErr error, attempt int, opts ...history.Option) ([]openai.ChatCompletionMessage, history.Result, error) {
	return codec.RecoverOverflow(struct{}{}, msgs, providerErr, attempt, opts)
}
