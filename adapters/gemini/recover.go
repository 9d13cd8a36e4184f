package gemini

import (
	"github.com/histrim/history"
	"google.golang.org/genai"
)

// RecoverOverflow trims contents after Gemini rejected the request that sent
// them for its length, so that the caller can retry it: it converts the
// request as Trim does, lets history.RecoverOverflow decide, and maps the
// decision back onto the caller's contents exactly as Trim does (kept
// contents are the caller's pointers, notices and cut-down contents are new,
// see the package documentation).
//
// system and contents are the system instruction and the contents exactly
// as they were sent in the rejected request (usually what Trim returned);
// providerErr is the error the client returned (a genai.APIError, which
// the core reads through its text: "The input token count (N) exceeds the
// maximum number of tokens allowed (M)."); attempt is 1 for the first retry
// of a request and grows by one with each further rejection of it. opts are
// those of the Trim that built the request: the same Counter, the same
// history.WithOverhead, the same history.WithCalibration (which records the
// sizes the error states). Pins (history.WithPin) are indices into the
// contents given here, what was sent: Trim returns a pinned content as the
// caller's very pointer, so its index in Trim's output is found by
// comparing pointers.
//
// The result and errors are the core's, reported as Trim reports them (the
// Result describes contents; its token figures include the system
// instruction and the overhead):
//
//   - providerErr is not a context overflow (a rate limit, an invalid
//     argument of another kind, nil): contents itself, clipped to its
//     length, an unchanged Result and history.ErrNotOverflow;
//   - nothing more can be dropped: the contents that are left and a
//     *history.RecoverError wrapping history.ErrCannotRecover and
//     providerErr; surface it instead of retrying;
//   - contents that do not convert: an error wrapping ErrInvalidContent
//     (checked first, whatever providerErr is), with an empty Result; a pin
//     on a content that cannot be pinned: a *history.OptionError.
//
// A retry loop, with at most two retries:
//
//	out, res, err := gemini.Trim(config.SystemInstruction, contents, budget, opts...)
//	resp, err := client.Models.GenerateContent(ctx, model, out, config)
//	for attempt := 1; err != nil && attempt <= 2; attempt++ {
//		var rerr error
//		if out, res, rerr = gemini.RecoverOverflow(config.SystemInstruction, out, err, attempt, opts...); rerr != nil {
//			break // not an overflow, or nothing left to drop: err is the provider's
//		}
//		resp, err = client.Models.GenerateContent(ctx, model, out, config)
//	}
//	if err != nil {
//		return err
//	}
//	cal.Observe(res.TokensAfter, int(resp.UsageMetadata.PromptTokenCount))
func RecoverOverflow(system *genai.Content, contents []*genai.Content, providerErr error, attempt int, opts ...history.Option) ([]*genai.Content, history.Result, error) {
	return codec.RecoverOverflow(system, contents, providerErr, attempt, opts)
}
