package fantasy

import (
	"fmt"

	"charm.land/fantasy"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/errtree"
)

// RecoverOverflow trims msgs after the provider rejected them for their
// length, so that the request can be retried: it converts msgs as Trim
// does, lets history.RecoverOverflow decide below the sizes the provider
// stated, and maps the decision back as Trim does.
//
// msgs is what the rejected request sent; providerErr the error the
// language model returned. A *fantasy.ProviderError (wrapped or not)
// whose IsContextTooLarge() holds is read by its ContextUsedTokens and
// ContextMaxTokens, the sizes fantasy's providers parse from the
// provider's body; any other error is left to the core's classifier
// (history.IsContextOverflow), which reads the provider's body through
// the error's text and cause. attempt is 1 for the first retry of a
// request and grows by one with each further rejection of it; opts are
// those of the trim that built the request (history.WithCalibration also
// learns from the sizes).
//
// Results, as the core's: history.ErrNotOverflow with msgs itself,
// clipped, when providerErr is not a context overflow; the trimmed
// messages, res and nil when the history shrank (retry with them); what is
// left and a *history.RecoverError wrapping history.ErrCannotRecover and
// providerErr when nothing more can be dropped (do not retry); nil and a
// *MessageError when msgs cannot be converted.
func RecoverOverflow(msgs []fantasy.Message, providerErr error, attempt int, opts ...history.Option) ([]fantasy.Message, history.Result, error) {
	return codec.RecoverOverflow(struct{}{}, msgs, providerErr, attempt, opts)
}

// IsOverflow reports whether err is a rejection of the request for its
// length: a *fantasy.ProviderError whose IsContextTooLarge() holds, or an
// error history.IsContextOverflow recognises.
func IsOverflow(err error) bool {
	return tooLarge(err) != nil || history.IsContextOverflow(err)
}

// tooLarge returns the first *fantasy.ProviderError in err's tree whose
// IsContextTooLarge() holds, or nil. The tree is walked without trusting
// it (errtree.Walk): a typed nil is no ProviderError, and an Unwrap that
// panics ends its branch.
func tooLarge(err error) (found *fantasy.ProviderError) {
	errtree.Walk(err, maxWalk, func(e error) bool {
		pe, ok := e.(*fantasy.ProviderError)
		if ok && pe != nil && pe.IsContextTooLarge() {
			found = pe
		}
		return found != nil
	})
	return found
}

// maxWalk bounds the errors tooLarge visits in one tree.
const maxWalk = 256

// overflow returns err for the core's classifier: a ProviderError that
// fantasy found too large becomes a contextError stating its sizes in
// words the core reads (it reads errors by their text and knows no SDK
// type), wrapping err so that errors.Is and errors.As still find it.
func overflow(err error) error {
	pe := tooLarge(err)
	if pe == nil {
		return err
	}
	return &contextError{used: pe.ContextUsedTokens, limit: pe.ContextMaxTokens, err: err}
}

// contextError is a ProviderError's context overflow as the core reads it.
type contextError struct {
	used, limit int
	err         error
}

// Error states the sizes in the shape of Anthropic's message when both
// are known, of Gemini's when only the limit is, and of Bedrock's when
// neither is (docs/overflow.md lists them).
func (e *contextError) Error() string {
	switch {
	case e.used > 0 && e.limit > 0:
		return fmt.Sprintf("history/fantasy: prompt is too long: %d tokens > %d maximum", e.used, e.limit)
	case e.limit > 0:
		return fmt.Sprintf("history/fantasy: The input token count exceeds the maximum number of tokens allowed (%d).", e.limit)
	}
	return "history/fantasy: Input is too long for requested model."
}

func (e *contextError) Unwrap() error { return e.err }
