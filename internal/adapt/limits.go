package adapt

import (
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/refusal"
)

// Limits are what providers said about their limits, per model, for a
// wrapper that trims each call with the package functions (the framework
// modules' plugins, middleware and wrapped models), as an adapter's
// Trimmer remembers it (history.Trimmer.RecoverOverflow): after a request
// to a model was refused for its length and a recovery shrank it, every
// later budget for that model stays at or below what the refusal allows,
// so that a budget above the provider's real window (a deployment's
// smaller window, a local server's context size) is refused once, not at
// every request. The zero value is ready to use and safe for concurrent
// use; it holds one figure per model name, at most maxLimits of them.
type Limits struct {
	mu sync.Mutex
	m  map[string]int
}

// maxLimits bounds the model names a Limits holds: past it, a new name
// makes room by forgetting them all (a wrapper calls a few models).
const maxLimits = 1024

// Bound returns budget, bounded by what a refusal of a request to model
// allows (see Learn).
func (l *Limits) Bound(model string, budget int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.m[model]; ok && c < budget {
		return c
	}
	return budget
}

// Learn records what a refusal of a request to model allows: read is the
// provider's error as the core's classifier reads it (the codec's
// Overflow), budget the budget the refused request was trimmed to, and
// target the budget the recovery that followed aimed at
// (history.Result.Budget of RecoverOverflow, in the counter's units). With
// cal (the Calibration the trims use; the budget is then in the
// provider's units, which cal converts and keeps its own margin below)
// it is the limit the provider states, else the target converted to the
// provider's units; without, the target (refusal.Ratio and
// refusal.Allowed: the rule history.Trimmer's RecoverOverflow learns
// with). A figure only ever falls: the lowest refusal stands. Nothing is
// recorded for an error that is no overflow, a budget of zero or less, or
// a figure not below budget.
func (l *Limits) Learn(model string, read error, budget, target int, cal *history.Calibration) {
	ov, ok := history.ParseOverflow(read)
	if !ok || budget <= 0 || target <= 0 {
		return
	}
	ratio := 1.0
	if cal != nil {
		// The provider's tokens per one of the library's, as the
		// Calibration converts them at the refused request's budget (the
		// count of what was sent is not known here).
		ratio = refusal.Ratio(0, 0, budget, cal.Budget)
	}
	c := max(int(min(refusal.Allowed(target, ratio, ov.Limit, cal != nil), float64(budget))), 1)
	if c >= budget {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.m[model]; ok && old <= c {
		return
	}
	if l.m == nil || (len(l.m) >= maxLimits && l.m[model] == 0) {
		l.m = make(map[string]int)
	}
	l.m[model] = c
}
