package langchaingo

// This file owns the recognition of a provider's context-overflow refusal in
// the errors LangChainGo's models return: the core's classifier
// (history.ParseOverflow), given the two things LangChainGo hides from it.

import (
	"errors"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/errtree"
	"github.com/tmc/langchaingo/llms"
)

// IsContextOverflow reports whether err, returned by a LangChainGo model
// (GenerateContent, Call, llms.GenerateFromSinglePrompt), is the provider's
// refusal of a request whose input does not fit the model's context window:
// the error that trimming the history fixes. [ParseOverflow] also returns
// the sizes the provider stated.
//
// It is history.IsContextOverflow (see its documentation for what is and is
// not an overflow) with two corrections for what LangChainGo v0.1.14 does to
// a provider's error before the caller sees it:
//
//   - The HTTP status. The OpenAI and Anthropic clients (and Ernie's and
//     Hugging Face's) keep it only as text, "API returned unexpected status
//     code: 429: <the body's error.message>", which the core does not read
//     (it reads a status through HTTPStatusCode(), StatusCode() and
//     HTTPCode() methods, as the Google AI client's gax error has, and
//     integer status fields), so a 401, 402, 403 or 429 there would not rule
//     an overflow out. Here it does, as the core does for a status it can
//     read: a 429 whose message reads like an overflow is a rate limit.
//   - LangChainGo's own error labels. An *llms.Error (what llms.ErrorMapper
//     and the providers' MapError functions return) labels the provider's
//     error by substring matching, and its text is only that label: the
//     "429" in "your messages resulted in 4294 tokens" makes OpenAI's
//     context_length_exceeded a "rate_limit" error whose text, "openai:
//     rate_limit: Rate limit exceeded", would rule the overflow out. The
//     label is LangChainGo's guess, not the provider's word, so the error it
//     wraps (Cause) is classified instead.
//
// What LangChainGo dropped cannot be recovered: its OpenAI and Anthropic
// clients keep only the body's error.message, so an overflow that a server
// states elsewhere in its body (vLLM's top-level "message", for one) or in
// a body that is not JSON is not seen.
//
// Like the core, IsContextOverflow never panics (an error whose Error,
// Unwrap or HTTPCode method panics is read as having none), bounds its work
// on pathological error trees, and is safe for concurrent use.
func IsContextOverflow(err error) bool {
	_, ok := ParseOverflow(err)
	return ok
}

// ParseOverflow reports whether err is a context overflow (see
// [IsContextOverflow]) and, if so, what the provider said about the sizes,
// as history.ParseOverflow does: fields the provider did not state are zero,
// and when ok is false the Overflow is the zero value.
func ParseOverflow(err error) (history.Overflow, bool) {
	return history.ParseOverflow(forClassifier(err))
}

// statusPrefix is how LangChainGo's OpenAI, Anthropic, Ernie and Hugging Face
// clients begin the error of a response that is not 200 OK.
const statusPrefix = "API returned unexpected status code: "

// Bounds of forClassifier's walks, far above any real error: maxWalk errors
// visited in one tree (it also ends a tree that points back at itself), and
// maxText bytes of error text searched for a status, as the core's
// classifier bounds its own.
const (
	maxWalk = 1 << 12
	maxText = 32 << 20
)

// forClassifier returns the error the core should classify for err: the
// provider's error under LangChainGo's *llms.Error label, joined with its
// HTTP status when LangChainGo kept one where the core cannot read it.
func forClassifier(err error) error {
	for range 8 { // an *llms.Error whose Cause is another, a few deep
		cause := mappedCause(err)
		if cause == nil {
			break
		}
		err = cause
	}
	if err == nil {
		return nil
	}
	if code := hiddenStatus(err); code > 0 {
		return errors.Join(statusCarrier(code), err)
	}
	return err
}

// mappedCause returns the Cause of the first *llms.Error with one in err's
// tree, or nil.
func mappedCause(err error) error {
	var cause error
	walk(err, func(e error) bool {
		if le, ok := e.(*llms.Error); ok && le != nil && le.Cause != nil {
			cause = le.Cause
			return true
		}
		return false
	})
	return cause
}

// hiddenStatus returns the first HTTP status in err's tree that the core
// cannot read: the status in the text of an error that wraps nothing and
// carries LangChainGo's statusPrefix. It returns 0 when there is none.
func hiddenStatus(err error) int {
	code, budget := 0, maxText
	walk(err, func(e error) bool {
		if errtree.HasChildren(e) {
			return false // its text repeats its children's; read them
		}
		s, ok := errtree.Error(e)
		if !ok {
			return false
		}
		if len(s) > budget {
			s = s[:budget]
		}
		budget -= len(s)
		if i := strings.Index(s, statusPrefix); i >= 0 {
			if n := leadingStatus(s[i+len(statusPrefix):]); n > 0 {
				code = n
				return true
			}
		}
		return budget <= 0
	})
	return code
}

// leadingStatus parses the three-digit HTTP status s begins with, or 0.
func leadingStatus(s string) int {
	if len(s) < 3 || (len(s) > 3 && '0' <= s[3] && s[3] <= '9') {
		return 0
	}
	n := 0
	for _, c := range []byte(s[:3]) {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	if n < 100 {
		return 0
	}
	return n
}

// statusCarrier hands an HTTP status to the core through StatusCode() int.
// It has no text, so it adds nothing else to the classification.
type statusCarrier int

func (s statusCarrier) Error() string   { return "" }
func (s statusCarrier) StatusCode() int { return int(s) }

// walk calls visit on err and on every error reachable from it, parents
// before children, until visit returns true or maxWalk errors have been
// visited (errtree.Walk).
func walk(err error, visit func(error) bool) { errtree.Walk(err, maxWalk, visit) }
