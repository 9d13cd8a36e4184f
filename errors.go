package history

import (
	"errors"
	"strconv"
)

// Sentinel errors. Detailed errors wrap them: test with errors.Is, and use
// errors.As with *MessageError or *BudgetError for the detail.
var (
	// ErrInvalidBudget is returned when the budget is zero or negative.
	ErrInvalidBudget = errors.New("history: budget must be positive")
	// ErrInvalidMessage is wrapped by *MessageError when the input breaks a
	// rule of the message model.
	ErrInvalidMessage = errors.New("history: invalid message")
	// ErrLatestTurnTooLarge is wrapped by *BudgetError when what the library
	// must always keep (the prefix, the breadcrumb and the latest turn) does
	// not fit the budget. It is returned together with a usable Result.
	ErrLatestTurnTooLarge = errors.New("history: latest turn does not fit the budget")
)

// MessageError reports an invalid message. It wraps ErrInvalidMessage.
type MessageError struct {
	// Index is the position of the offending message in the input slice, or
	// -1 when the message came from an option (such as WithBreadcrumb).
	Index int
	// Reason says which rule the message breaks.
	Reason string
}

func (e *MessageError) Error() string {
	if e.Index < 0 {
		return "history: invalid message in options: " + e.Reason
	}
	return "history: invalid message at index " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns ErrInvalidMessage.
func (e *MessageError) Unwrap() error { return ErrInvalidMessage }

// BudgetError reports that the messages the library must keep need more
// tokens than the budget allows. It wraps ErrLatestTurnTooLarge.
type BudgetError struct {
	// Need is the token count of what had to be kept: the prefix, the
	// breadcrumb (if any) and the latest turn.
	Need int
	// Budget is the budget that was asked for.
	Budget int
	// Pinned is the part of Need taken by the pinned prefix (system
	// messages, summaries, breadcrumb), which no trim can reduce: when it
	// alone exceeds Budget, the summary or system prompt is the problem,
	// not the conversation.
	Pinned int
}

func (e *BudgetError) Error() string {
	s := "history: latest turn does not fit the budget: need " + strconv.Itoa(e.Need) +
		" tokens, budget " + strconv.Itoa(e.Budget)
	if e.Pinned > e.Budget {
		s += " (the pinned system messages and summaries alone need " + strconv.Itoa(e.Pinned) + ")"
	}
	return s
}

// Unwrap returns ErrLatestTurnTooLarge.
func (e *BudgetError) Unwrap() error { return ErrLatestTurnTooLarge }
