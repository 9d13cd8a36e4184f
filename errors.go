// This file owns the package's error values: the sentinels and the typed
// errors that carry their detail.

package history

import (
	"errors"
	"strconv"
)

// Sentinel errors. Detailed errors wrap them: test with [errors.Is], and use
// [errors.As] with *[MessageError], *[BudgetError] or *[OptionError] for the
// detail.
var (
	// ErrInvalidBudget is returned, with a [Result] that holds no messages,
	// when the budget is zero or negative.
	ErrInvalidBudget = errors.New("history: budget must be positive")
	// ErrInvalidMessage is wrapped by *[MessageError] when the input breaks a
	// rule of the message model (see [Message], [Kind], [Part]).
	ErrInvalidMessage = errors.New("history: invalid message")
	// ErrInvalidOption is wrapped by *[OptionError] when an option's value is
	// out of its domain (a [WithLowWater] fraction outside (0, 1), a
	// [WithBreadcrumb] notice that is not a valid message, ...). The call
	// that uses the option returns it, with a [Result] that holds no
	// messages, before doing anything else.
	ErrInvalidOption = errors.New("history: invalid option")
	// ErrLatestTurnTooLarge is wrapped by *[BudgetError] when what the
	// library must always keep (the prefix, the breadcrumb and the latest
	// turn) does not fit the budget. It is returned together with a usable
	// [Result]: the smallest history the library can send. Send it anyway
	// (the provider may accept it; [RecoverOverflow] trims below what it
	// refuses), or trim with the cut rung ([WithTask]), or use a larger
	// window; the [BudgetError]'s text says which applies.
	ErrLatestTurnTooLarge = errors.New("history: latest turn does not fit the budget")
)

// MessageError reports an invalid message. It wraps [ErrInvalidMessage].
type MessageError struct {
	// Index is the position of the offending message in the input slice, or
	// -1 when the message came from an option (such as [WithBreadcrumb]).
	Index int
	// Reason says which rule the message breaks.
	Reason string
}

// Error returns "history: invalid message at index N: reason", or
// "history: invalid message in options: reason" for Index -1.
func (e *MessageError) Error() string {
	if e.Index < 0 {
		return "history: invalid message in options: " + e.Reason
	}
	return "history: invalid message at index " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns [ErrInvalidMessage].
func (e *MessageError) Unwrap() error { return ErrInvalidMessage }

// BudgetError reports that the messages the library must keep need more
// tokens than the budget allows. It wraps [ErrLatestTurnTooLarge], and the
// [Result] returned with it holds those messages.
type BudgetError struct {
	// Need is the token count of what had to be kept: the prefix, the
	// breadcrumb (if any) and the latest turn.
	Need int
	// Budget is the budget that was asked for.
	Budget int
	// Pinned is the part of Need taken by the pinned prefix (system
	// messages, summaries, breadcrumb) and the messages pinned with
	// [WithPin], which no trim can reduce: when it alone exceeds Budget,
	// the summary or system prompt is the problem, not the conversation.
	Pinned int
	// Overhead is the part of Need taken by the request's overhead
	// ([WithOverhead]: tool schemas, a response format), which no trim can
	// reduce either: when it alone exceeds Budget, the tools do not fit
	// the window.
	Overhead int

	cut bool // the trim had the cut rung (ElideOptions.Cut, WithTask)
}

// Error returns the sizes: "history: latest turn does not fit the budget:
// need N tokens, budget B", naming what no trim can reduce when it alone is
// too large: the request's overhead, the pinned part, or both together;
// then what the caller can do. The [Result] returned with it is the
// smallest history the library can send, so sending it anyway is always
// one remedy (the provider may accept it, and [RecoverOverflow] trims
// below what it refused); the others are a larger window, fewer tools or
// a shorter system prompt where those alone are too large, and the cut
// rung ([WithTask], [ElideOptions.Cut]) where the latest turn's tool
// results are, when the trim did not have it.
func (e *BudgetError) Error() string {
	s := "history: latest turn does not fit the budget: need " + strconv.Itoa(e.Need) +
		" tokens, budget " + strconv.Itoa(e.Budget)
	const anyway = "; the Result is the smallest history: send it anyway, "
	switch {
	case e.Overhead > e.Budget:
		s += " (the request's overhead alone needs " + strconv.Itoa(e.Overhead) + ": the tool definitions and whatever else WithOverhead counts)" +
			anyway + "or send fewer tools, or use a larger window"
	case e.Pinned > e.Budget:
		s += " (the pinned system messages and summaries alone need " + strconv.Itoa(e.Pinned) + ")" +
			anyway + "or shorten them, or use a larger window"
	case e.Pinned > 0 && e.Overhead > 0 && e.Pinned+e.Overhead > e.Budget:
		s += " (the pinned system messages and summaries need " + strconv.Itoa(e.Pinned) +
			" and the request's overhead " + strconv.Itoa(e.Overhead) + ")" +
			anyway + "or shorten them, send fewer tools, or use a larger window"
	case e.cut:
		s += anyway + "or use a larger window (with the cut rung on, the prefix, the pins and the user's request alone are too large)"
	default:
		s += anyway + "or trim with WithTask (its cut rung shortens the latest turn's tool results), or use a larger window"
	}
	return s
}

// Unwrap returns [ErrLatestTurnTooLarge].
func (e *BudgetError) Unwrap() error { return ErrLatestTurnTooLarge }

// OptionError reports an [Option] whose value is invalid. It wraps
// [ErrInvalidOption] and, when there is one, the detailed error (such as a
// *[MessageError] for an invalid breadcrumb), so [errors.Is] and [errors.As]
// work with either.
type OptionError struct {
	// Option is the name of the option, such as "WithLowWater".
	Option string
	// Reason says what is wrong with the value.
	Reason string
	// Err is the detailed error, or nil.
	Err error
}

// Error returns "history: invalid option Name: reason", followed by the
// detailed error when there is one.
func (e *OptionError) Error() string {
	s := "history: invalid option " + e.Option + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns [ErrInvalidOption] and Err (when not nil).
func (e *OptionError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidOption}
	}
	return []error{ErrInvalidOption, e.Err}
}
