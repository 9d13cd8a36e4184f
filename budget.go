package history

// Budget derives an input-token budget from a model's limits. The zero value
// has no window and no limit, and its Input is 0, which TrimToRecentTurns
// rejects with ErrInvalidBudget: a budget must be stated, never guessed.
//
// Every field takes any int: values of zero or less mean what each field
// says, and huge values saturate (see [Budget.Input]); no combination wraps
// around.
type Budget struct {
	// Window is the model's context window in tokens (input and output
	// together). Zero or less means unknown: Input is then Limit.
	Window int
	// Output is the number of tokens kept free for the reply (the request's
	// max output tokens). Negative values count as zero; a value of Window
	// or more leaves no input.
	Output int
	// Reserve is kept free for what the messages do not show: tool schemas,
	// the provider's reply priming, and a safety margin for counting error.
	// Negative values count as zero; like Output, it can only lower Input.
	Reserve int
	// Limit is an operator's cap on input tokens (cost control). Zero or
	// less means no cap.
	Limit int
}

// Input returns the tokens available for the messages:
// Window - Output - Reserve, capped by Limit when Limit > 0, and never below
// zero. With no Window (<= 0) it is Limit, or 0 when there is no Limit
// either.
//
// The subtraction saturates: Output and Reserve as large as math.MaxInt give
// 0, never a wrapped-around positive budget, and a Limit never raises an
// exhausted window above 0. The result lies in [0, max(Window, Limit)].
func (b Budget) Input() int {
	if b.Window <= 0 {
		return max(b.Limit, 0)
	}
	// Negating a clamped Output or Reserve cannot overflow (it is at most
	// math.MaxInt), and satAdd stops at math.MinInt instead of wrapping.
	in := satAdd(b.Window, -clampCount(b.Output))
	in = clampCount(satAdd(in, -clampCount(b.Reserve)))
	if b.Limit > 0 {
		in = min(in, b.Limit)
	}
	return in
}
