package adapt

import (
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/pairing"
)

// MessageError reports a native message an adapter cannot convert. It
// wraps history.ErrInvalidMessage, so errors.Is(err,
// history.ErrInvalidMessage) holds for it as for the core's own validation
// errors, and the adapter's own sentinel where it declares one
// (gemini.ErrInvalidContent, eino.ErrInvalidMessage,
// langchaingo.ErrInvalidMessage). Each adapter exports it under its own
// name (openai.MessageError, ...).
type MessageError struct {
	// Index is the position of the offending message in the caller's
	// slice.
	Index int
	// Reason says what is wrong with it.
	Reason string

	codec    string // "history/openai"
	noun     string // "message"
	sentinel error  // the adapter's own, or nil
}

// Invalid returns the *MessageError of the adapter name for its native
// message i (a noun) and reason, also wrapping sentinel when it is not nil.
func Invalid(name, noun string, sentinel error, i int, reason string) *MessageError {
	return &MessageError{Index: i, Reason: reason, codec: "history/" + name, noun: noun, sentinel: sentinel}
}

func (e *MessageError) Error() string {
	prefix, noun := e.codec, e.noun
	if prefix == "" {
		prefix, noun = "history", "message"
	}
	return prefix + ": invalid " + noun + " at index " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns history.ErrInvalidMessage and the adapter's own sentinel,
// if any.
func (e *MessageError) Unwrap() []error {
	if e.sentinel == nil {
		return []error{history.ErrInvalidMessage}
	}
	return []error{history.ErrInvalidMessage, e.sentinel}
}

// PairingError reports where native messages break the provider's pairing
// rule of tool calls and results (an adapter's Validate). It wraps the
// adapter's ErrUnpaired. Each adapter exports it under its own name
// (openai.PairingError, ...).
type PairingError struct {
	// Index is the position of the offending native message: the one
	// whose call is not answered, or the one whose result answers
	// nothing.
	Index int
	// ID is the tool call ID concerned ("" when the provider's rule names
	// none: a call turn out of place).
	ID string
	// Reason says which part of the rule is broken.
	Reason string

	codec    string
	noun     string
	sentinel error
}

// Unpaired returns the *PairingError of the adapter name, wrapping its
// sentinel ErrUnpaired, for its native message i (a noun).
func Unpaired(name, noun string, sentinel error, i int, id, reason string) *PairingError {
	return &PairingError{Index: i, ID: id, Reason: reason, codec: "history/" + name, noun: noun, sentinel: sentinel}
}

func (e *PairingError) Error() string {
	prefix, noun := e.codec, e.noun
	if prefix == "" {
		prefix, noun = "history", "message"
	}
	s := prefix + ": " + noun + " " + strconv.Itoa(e.Index) + ": " + e.Reason
	if e.ID != "" {
		s += " (call id " + strconv.Quote(e.ID) + ")"
	}
	return s
}

// Unwrap returns the adapter's ErrUnpaired.
func (e *PairingError) Unwrap() error { return e.sentinel }

// CheckPairing is the Validate of an adapter name (its native messages
// named noun, its sentinel ErrUnpaired) for an OpenAI-style pairing rule:
// pairing.Check over n messages, the first violation a *PairingError.
func CheckPairing(name, noun string, sentinel error, n int, read pairing.Read) error {
	v, err := pairing.Check(n, read)
	if v != nil {
		return Unpaired(name, noun, sentinel, v.Index, v.ID, pairing.Reasons[v.Fault])
	}
	return err
}
