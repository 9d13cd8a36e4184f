package history

// Budget derives an input-token budget from a model's limits. The zero value
// has no window and no limit, and its Input is 0, which TrimToRecentTurns
// rejects with ErrInvalidBudget: a budget must be stated, never guessed.
type Budget struct {
	// Window is the model's context window in tokens (input and output
	// together). Zero or less means unknown: Input is then Limit.
	Window int
	// Output is the number of tokens kept free for the reply (the request's
	// max output tokens). Negative values count as zero.
	Output int
	// Reserve is kept free for what the messages do not show: tool schemas,
	// the provider's reply priming, and a safety margin for counting error.
	// Negative values count as zero.
	Reserve int
	// Limit is an operator's cap on input tokens (cost control). Zero or
	// less means no cap.
	Limit int
}

// Input returns the tokens available for the messages:
// Window - Output - Reserve, capped by Limit when Limit > 0, and never below
// zero. With no Window (<= 0) it is Limit, or 0 when there is no Limit
// either.
func (b Budget) Input() int {
	in := -1
	if b.Window > 0 {
		in = b.Window - max(b.Output, 0) - max(b.Reserve, 0)
	}
	if b.Limit > 0 && (in < 0 || b.Limit < in) {
		in = b.Limit
	}
	return max(in, 0)
}
