package history

// This file owns recovery from a provider's context overflow:
// RecoverOverflow, its errors (ErrNotOverflow, ErrCannotRecover and
// *RecoverError, kept here rather than with the classifier because only
// RecoverOverflow returns them) and the target and margin arithmetic. The
// classification itself (IsContextOverflow, ParseOverflow) is in overflow.go.

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/histrim/history/internal/errtree"
)

// Errors of the overflow-recovery path. Test with errors.Is.
var (
	// ErrNotOverflow is returned by [RecoverOverflow] when the provider error is
	// not a context overflow (see [IsContextOverflow]) (a rate limit, an auth failure, an output-token
	// error, a nil error...). The history is returned untouched and no event
	// fires: the caller handles the error some other way.
	ErrNotOverflow = errors.New("history: provider error is not a context overflow")
	// ErrCannotRecover is wrapped by *[RecoverError] when the provider rejected
	// the request for length but nothing more can be dropped: only the prefix
	// and the latest turn are left. The caller must surface the error instead
	// of retrying.
	ErrCannotRecover = errors.New("history: cannot recover from context overflow")
)

// RecoverError reports that a provider rejected a request for length and
// [RecoverOverflow] had nothing left to drop. It wraps both
// [ErrCannotRecover] and the provider's error, so errors.Is works with
// either.
type RecoverError struct {
	// Overflow is what the provider said ([ParseOverflow]); zero fields were
	// not stated.
	Overflow
	// Tokens is the library's count of what is left: the prefix and the
	// latest turn (and a breadcrumb, if one was already there).
	Tokens int
	// Budget is the target RecoverOverflow aimed for.
	Budget int
	// Attempt is the attempt number RecoverOverflow was called with, after
	// normalization (values below 1 read as 1).
	Attempt int
	// Err is the provider's error.
	Err error
}

// Error describes what is left, the target and what the provider said, then
// the provider's own message (unless its Error method panics).
func (e *RecoverError) Error() string {
	var b strings.Builder
	b.WriteString("history: cannot recover from context overflow: only the prefix and the latest turn are left (")
	b.WriteString(strconv.Itoa(e.Tokens))
	b.WriteString(" tokens, target ")
	b.WriteString(strconv.Itoa(e.Budget))
	b.WriteString(", attempt ")
	b.WriteString(strconv.Itoa(e.Attempt))
	if e.Used > 0 || e.Limit > 0 {
		b.WriteString("; provider counted ")
		b.WriteString(sizeOrUnknown(e.Used))
		b.WriteString(" of ")
		b.WriteString(sizeOrUnknown(e.Limit))
	}
	b.WriteString(")")
	if e.Err != nil {
		// A provider's error that does not read (a typed nil whose Error
		// dereferences its receiver) is not read.
		if s, ok := errtree.Error(e.Err); ok {
			b.WriteString(": ")
			b.WriteString(s)
		}
	}
	return b.String()
}

func sizeOrUnknown(n int) string {
	if n <= 0 {
		return "?"
	}
	return strconv.Itoa(n)
}

// Unwrap returns ErrCannotRecover and the provider's error.
func (e *RecoverError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCannotRecover}
	}
	return []error{ErrCannotRecover, e.Err}
}

// RecoverOverflow trims msgs after a provider rejected them for length, so
// that the caller can retry the request.
//
// msgs is the history exactly as it was sent in the rejected request (usually
// the Messages of the previous Result); providerErr is the provider's error;
// attempt numbers the recoveries of this one request: 1 for the first retry
// after the first rejection, 2 after the retry was rejected again, and so on.
// Values below 1 read as 1. The options are those of TrimToRecentTurns;
// the Counter should be the one the caller trims with.
//
// The target budget is computed from the library's count of msgs (E) and
// what the provider said (see [ParseOverflow] and docs/overflow.md):
//
//   - provider states Used and Limit: E × Limit/Used × m(attempt), where
//     m = 0.90, 0.75, then halves per further attempt (0.375, 0.1875, ...);
//     the ratio converts the provider's limit into the library's units, m is
//     the safety margin for the difference between the two counts;
//   - provider states only Limit: min(E × s(attempt), Limit × m(attempt));
//   - otherwise: E × s(attempt), where s = 0.75, 0.5, then halves per
//     further attempt (0.25, 0.125, ...).
//
// The target is always below E and at least 1. Then msgs is trimmed to it as
// TrimToRecentTurns would (orphan sweep, whole turns, one breadcrumb never
// stacked), and the OnTrim callback receives an Event with Reason "overflow"
// and Attempt set. The trim aims at the target itself: [WithLowWater] and
// [WithTrigger] do not apply to a recovery (pass the trim's options as they
// are; the hysteresis they set is for the planned trims that follow).
//
// A Counter that prices the whole history at 0 or 1 token gives no count to
// cut by: no target lies below it. RecoverOverflow then treats the count as
// unknown and counts msgs with [Heuristic] instead, so that the provider's
// refusal still drops turns; the Result and the Event then report
// Heuristic's counts.
//
// Results:
//
//   - providerErr is not an overflow (IsContextOverflow is false, including
//     a nil error): the Result holds msgs unchanged (clipped, not copied)
//     with an identity Kept, nothing else is set, no event fires, and the
//     error is ErrNotOverflow.
//   - The history shrank relative to what was sent: the Result counts
//     fewer tokens than msgs (TokensAfter < TokensBefore: turns dropped,
//     Trimmed), or the orphan sweep removed tool results or calls
//     (OrphansRemoved > 0) and nothing grew: the Result and a nil error,
//     even if the Result is still above the target; the caller retries, and
//     a further rejection calls RecoverOverflow again with attempt+1, which
//     goes further.
//   - Nothing can be dropped to make the request smaller (only the prefix
//     and the latest turn are left, or the turns left cost no more than the
//     breadcrumb that would replace them, and nothing was orphaned): a
//     *RecoverError wrapping ErrCannotRecover and providerErr, with the
//     sizes. The caller must surface it instead of retrying: a retry never
//     resends the request the provider refused.
//   - Invalid input or options: the error TrimToRecentTurns would return.
//
// Each successful call returns a smaller history (at least one turn
// dropped, or orphans removed), and a history it returns has no orphans
// left, so calling RecoverOverflow
// repeatedly on its own output ends in ErrCannotRecover after at most one
// call more than there are turns; the shrinking targets usually end it much
// sooner. RecoverOverflow never modifies msgs and is safe for concurrent use.
// It never panics on account of providerErr (see [IsContextOverflow]); the
// Counter and callbacks are the caller's.
func RecoverOverflow(msgs []Message, providerErr error, attempt int, opts ...Option) (Result, error) {
	ov, ok := ParseOverflow(providerErr)
	if !ok {
		return Result{Messages: msgs[:len(msgs):len(msgs)], Kept: identity(len(msgs))}, ErrNotOverflow
	}
	attempt = max(attempt, 1)
	o := newOptions(opts)
	defer o.release()
	c := &call{reason: ReasonOverflow, attempt: attempt, exact: true}
	// The target is derived from the trim's own count of the history, so
	// each message is counted once.
	c.budgetFor = func(est int) int {
		if o.calib != nil && est > 1 {
			// What was sent against what the provider counted: an
			// observation like an accepted request's usage. When the
			// error states no count, or one the model holds back, the
			// rejection itself caps the next budget below est.
			if v := o.calib.Observe(est, ov.Used); v != VerdictUsed && v != VerdictRestarted {
				o.calib.ObserveOverflow(est, ov.Limit)
			}
		}
		return overflowTarget(est, ov, attempt)
	}
	res, err := trimToBudget(msgs, 1, o, c)
	if err == nil && !res.Trimmed && res.OrphansRemoved == 0 && res.TokensBefore <= 1 {
		// The Counter priced the history at 0 or 1 token: no target is
		// below that, so nothing was cut. Count with Heuristic instead
		// (see the doc comment); this second count happens only here.
		o.counter = heuristic{}
		res, err = trimToBudget(msgs, 1, o, c)
	}
	if err != nil && !errors.Is(err, ErrLatestTurnTooLarge) {
		return res, err
	}
	// Progress is a smaller request: a plan that drops turns without
	// shrinking it (turns no larger than the breadcrumb that replaces
	// them) would have the provider refuse the same request again.
	if res.TokensAfter < res.TokensBefore || (res.OrphansRemoved > 0 && res.TokensAfter <= res.TokensBefore) {
		return res, nil
	}
	return res, &RecoverError{Overflow: ov, Tokens: res.TokensAfter, Budget: res.Budget, Attempt: attempt, Err: providerErr}
}

// overflowTarget is the budget RecoverOverflow trims to; see its doc and
// docs/overflow.md.
func overflowTarget(est int, ov Overflow, attempt int) int {
	e := float64(est)
	var t float64
	switch {
	case ov.Used > 0 && ov.Limit > 0:
		t = e * float64(ov.Limit) / float64(ov.Used) * overflowMargin(attempt)
	case ov.Limit > 0:
		t = min(e*overflowShrink(attempt), float64(ov.Limit)*overflowMargin(attempt))
	default:
		t = e * overflowShrink(attempt)
	}
	target := est - 1
	if t < float64(target) {
		target = int(t)
	}
	return max(target, 1)
}

// overflowMargin is the share of the provider's stated limit aimed for:
// 0.90 on the first attempt, 0.75 on the second, then half as much again on
// each further attempt.
func overflowMargin(attempt int) float64 {
	switch {
	case attempt <= 1:
		return 0.90
	case attempt == 2:
		return 0.75
	}
	return math.Ldexp(0.75, -min(attempt-2, 64))
}

// overflowShrink is the share of the failed estimate kept when the provider
// stated no usable numbers: 0.75 on the first attempt, then half as much
// again on each further attempt.
func overflowShrink(attempt int) float64 {
	if attempt <= 1 {
		return 0.75
	}
	return math.Ldexp(1, -min(attempt-1, 64))
}
