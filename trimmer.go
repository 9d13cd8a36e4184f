// This file owns the Trimmer: a trim that remembers its plan between calls so
// that the provider's cached prompt prefix survives.

package history

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/histrim/history/internal/refusal"
)

// Trimmer trims one conversation before every request and keeps the plan it
// chose, so that the prompt the provider has cached stays a prefix of the
// next request for as long as possible.
//
// It is meant for runtimes that keep the full transcript and trim a view of
// it before each request. A stateless [TrimToRecentTurns] recomputes the cut
// from scratch every time: once the transcript is over budget, every new
// turn moves the cut forward, the beginning of the prompt changes, and the
// provider's prompt cache misses on nearly every request. A Trimmer instead
// reuses its previous plan as long as it and every message since still fit
// the budget, and only then trims again
// (down to fraction*budget with [WithLowWater], which is what makes the next
// requests fit without another trim). See docs/prompt-caching.md.
//
// Runtimes that persist the trimmed history they sent and append to it do
// not need a Trimmer: [TrimToRecentTurns] with [WithLowWater] already keeps
// their prefix stable.
//
// # Safety
//
// The Trimmer never returns stored messages: every Result is built from the
// msgs of the current call, validated, swept of orphans and counted like
// [TrimToRecentTurns] does, so it is never stale and never breaks a tool pair.
// What it remembers is the plan of its last fresh trim, as positions: which
// messages of the transcript it sent, where it put its notices, and which
// results it elided (with their placeholder text), together with hashes of
// the messages where the plan resumes after a gap and of the transcript's
// last message (no copy of the caller's messages: the state can be saved
// and restored, see [Trimmer.MarshalBinary]). Before reusing the plan it
// checks that the transcript is still at least as long and that those
// messages are unchanged, in time proportional to their size, and that
// the plan still keeps what a fresh trim keeps (the system prompt first,
// the pins and the latest request, each message once and in order, only
// its own notices). If the caller edited, truncated, compacted or
// replaced its transcript so that the check fails, the Trimmer trims from
// scratch, exactly as [TrimToRecentTurns] would. An edit it does not detect
// (for example a changed message after the cut) is still reflected in the
// Result, because the messages sent are re-read and re-counted on every
// call; only the plan's shape is carried over.
//
// # Every rung is remembered
//
// With [WithElision], [WithStepTrim] and [WithPin], the plan holds the
// elided results, the dropped steps and the lifted messages as well as the
// dropped turns, so between two fresh trims the prompt only grows at its end
// (append-only), whichever rung the trim used: the new messages are sent
// after the plan as long as the whole fits the budget. A fresh trim, down
// to the low-water mark, happens only when it no longer fits: a maintenance
// point, where the prompt is rewritten and its cache paid again anyway. So
// there, with WithElision, the Trimmer elides every eligible tool result
// (not only as many as the low-water mark needs), which is lossless for the
// model (results can be re-read) and leaves the most room for the next
// requests to append to. Replaying the corpus's tool-heavy sessions at a
// quarter of their size (replay_test.go), 8.3% of the over-budget requests
// rewrote the prompt, against 33.4% when only whole-turn cuts were kept. (A prompt
// that ended with tool calls still unanswered, which the sweep stripped,
// gets them back once their results arrive.)
//
// A Trimmer never brings dropped turns back while the conversation goes on:
// if the budget grows, the cut stays where it is as long as the kept turns
// fit. Call [Trimmer.Reset] (for example after switching to a model with a
// larger window) to start over.
//
// # Zero value and concurrency
//
// The zero value is ready to use and trims with the default options (no
// low-water mark). Use [NewTrimmer] to set options, typically
// NewTrimmer(WithLowWater(0.7)). A Trimmer must not be copied after first
// use. It is safe for concurrent use, but it remembers one cut: use one
// Trimmer per conversation. The [WithOnTrim] callback runs without the
// Trimmer's lock held.
type Trimmer struct {
	opts []Option // fixed at construction; never modified

	mu   sync.Mutex
	st   trimState
	last time.Time    // when Trim was last called; zero before the first call
	sum  summaryState // the summary in the prompt (WithSummarizer)
	prev []promptKey  // the previous request's prompt (nil before the first)
	// prevKept is the previous prompt's Result.Kept, and prevStable the
	// position of its last assistant message: the keys before it may be
	// carried over to a reused plan's prompt (nil: hash them all).
	prevKept   []int
	prevStable int
	// sent and asked are the TokensAfter of the last Result returned and
	// the budget it was trimmed for; accept, when positive, is the share of
	// an asked budget the provider accepts, learnt by RecoverOverflow (in
	// the budget's units: with a Calibration, the provider's, which the
	// Calibration converts). It bounds every later budget until Reset.
	sent, asked int
	accept      float64
	bg          background // background summaries (SummaryOptions.Background)
	// restored: st and sum come from UnmarshalBinary and are checked
	// against the next Trim's transcript (checkRestored); refusal is what
	// that check refused, until takeRefusal.
	restored bool
	refusal  error
	// stateSize is the size of the last state appendState wrote: the next
	// one's buffer is made that large at once.
	stateSize int
}

// NewTrimmer returns a [Trimmer] that trims with opts (the options of
// [TrimToRecentTurns]; [WithLowWater] is the one that matters for caching).
// The options are fixed for the Trimmer's life: the slice is copied, and an
// invalid option makes every [Trimmer.Trim] return its *[OptionError].
func NewTrimmer(opts ...Option) *Trimmer {
	return &Trimmer{opts: slices.Clone(opts)}
}

// Reset forgets the remembered plan and the time of the last call: the
// next [Trimmer.Trim] trims from scratch, as [TrimToRecentTurns] would. It
// keeps the options.
func (t *Trimmer) Reset() {
	t.mu.Lock()
	t.st, t.last, t.sum, t.prev, t.prevKept = trimState{}, time.Time{}, summaryState{}, nil, nil
	t.sent, t.asked, t.accept = 0, 0, 0
	t.restored, t.refusal = false, nil
	t.bg.job = nil // a summary in flight is let go
	t.mu.Unlock()
}

// Trim returns the history to send for msgs, the caller's full transcript,
// under budget. Call it once before every request: it also notes the time,
// to tell a cold resume from a warm one.
//
// When the Trimmer has a plan from an earlier call and that plan still
// applies to msgs (see Safety in the [Trimmer] documentation), it returns
// the plan applied to msgs followed by every message added since, provided
// the whole fits budget: the previous prompt, extended. Otherwise, or when it
// no longer fits, it trims msgs from scratch with [TrimToRecentTurns] and the
// Trimmer's options and remembers the new plan.
//
// Cold resume: with [WithElision], when more time than the cache retention
// ([WithColdAfter], default [DefaultColdAfter]) has passed since the previous
// call, the provider's cached prefix is gone, so Trim plans afresh and elides
// every eligible tool result even when the history fits; the [Event] has
// Reason [ReasonColdResume]. The next calls extend that prompt as above.
//
// The [Result] is what TrimToRecentTurns would return for the same plan:
// Messages, [Result.Kept] (indices into msgs, parallel to Messages) and
// Dropped refer to msgs; Trimmed is true whenever the plan leaves anything
// out or elides anything. When the plan is reused, no [Event] is emitted
// (nothing new was dropped), OrphansRemoved counts only the orphans among the
// messages sent, and TokensBefore, DroppedMessages, DroppedTurns,
// DroppedSteps and ElidedResults take the plan's figures from the trim that
// made it (the Trimmer does not re-read messages it no longer sends;
// TokensBefore is -1 when that trim did not count them, see [WithFullCount]).
// Errors are those of TrimToRecentTurns; on an error other than a
// *[BudgetError] the remembered plan is forgotten.
func (t *Trimmer) Trim(msgs []Message, budget int) (Result, error) {
	return t.TrimContext(context.Background(), msgs, budget)
}

// TrimContext is [Trimmer.Trim] with a context for the [Summarizer]
// ([WithSummarizer]), the only part of a trim that can block: ctx bounds
// its call, on top of [SummaryOptions.Timeout]. When ctx is done the trim
// still returns, with the breadcrumb instead of a summary. A nil ctx means
// context.Background().
func (t *Trimmer) TrimContext(ctx context.Context, msgs []Message, budget int) (Result, error) {
	o := newOptions(t.opts)
	defer o.release()
	at := o.now()
	t.mu.Lock()
	if t.restored {
		t.checkRestored(msgs, o)
	}
	st, last, sum, prev := t.st, t.last, t.sum, t.prev
	t.last = at
	asked := budget
	if t.accept > 0 && budget > 0 {
		budget = max(int(float64(budget)*t.accept), 1) // what the provider accepts of it
	}
	t.mu.Unlock()
	res, err := t.trim(ctx, msgs, budget, o, at, st, last, sum, prev)
	t.mu.Lock()
	t.sent, t.asked = res.TokensAfter, asked
	t.mu.Unlock()
	return res, err
}

// trim is TrimContext with the Trimmer's state read: the plan reused while
// it fits, or a new one at a maintenance point.
func (t *Trimmer) trim(ctx context.Context, msgs []Message, budget int, o *options, at time.Time, st trimState, last time.Time, sum summaryState, prev []promptKey) (Result, error) {

	c := budgetCall()
	// A cold resume: the provider's cache has expired, so this request
	// pays for its whole prompt anyway. Plan afresh and prune.
	cold := !last.IsZero() && at.Sub(last) > o.retention()
	if o.elide != nil && cold {
		c.prune, c.reason = true, ReasonColdResume
		st = trimState{}
	}
	// In background mode a ready summary is swapped in now; until one is,
	// the budget is the ceiling, and the trigger starts one.
	bg := o.summarizer != nil && o.summarizer.opts.Background && o.err == nil
	var ready *bgJob
	trigger := o.trigger
	if bg {
		ready = t.takeReady(sum)
		o.trigger = 0
	}
	if ready == nil && st.n > 0 && o.err == nil {
		res, ok, memo := t.reuse(msgs, budget, &st, &sum, o)
		if ok {
			if o.onTrim != nil { // the next event compares its prompt with this one
				t.mu.Lock()
				t.prev = carriedKeys(&res, t.prev, t.prevKept, t.prevStable)
				t.prevKept, t.prevStable = res.Kept, stableEnd(res.Messages)
				t.mu.Unlock()
			}
			if bg {
				t.maybeStart(msgs, budget, o, trigger, sum, res.TokensAfter, false)
			}
			return res, nil
		}
		c.memo = memo // what the check counted is not counted again
	}
	res, err := t.replan(ctx, msgs, budget, o, c, sum, prev, cold, ready)
	if bg && (err == nil || isBudgetError(err)) {
		t.mu.Lock()
		sum = t.sum
		t.mu.Unlock()
		// Turns dropped behind a breadcrumb get their summary written now.
		t.maybeStart(msgs, budget, o, trigger, sum, res.TokensAfter, ready == nil && res.DroppedTurns > 0)
	}
	return res, err
}

// RecoverOverflow is [RecoverOverflow] for a Trimmer: msgs is the
// transcript the Trimmer's last [Trimmer.Trim] was given (or its last
// RecoverOverflow), whose Result the provider rejected for length with
// providerErr, and attempt numbers the recoveries of that request (1 for
// the first). It derives the target from the size of what was sent and
// what the provider said, as the package function does, makes a new plan
// of msgs aimed at it (the trigger and low-water mark do not apply) and
// remembers it, so that the requests that follow reuse a plan the
// provider accepts instead of the one it rejected. The Trimmer's options
// apply, and its [WithOnTrim] callback receives the Event, Reason
// "overflow".
//
// After a recovery, the next plans fit what the provider said, whatever
// the budget: the Trimmer keeps the share of the budget the provider
// accepts (the target, converted to the budget's units) and trims every
// later request to that share of its budget, until [Trimmer.Reset], so
// that a budget above the provider's real window (a deployment's smaller
// window, a local server's context size) is refused once, not at every
// maintenance point. With [WithCalibration] the Calibration also learns
// from the error (the sizes it states, or the rejection itself), and the
// share is in the provider's units, which the Calibration converts: the
// provider's count of what was refused over its count by the library
// (stated, or as the Calibration predicted it).
//
// Results are the package function's: [ErrNotOverflow] with msgs
// untouched for an error that is not a context overflow; a Result and a
// nil error when the request shrank (counts fewer tokens than what the
// last Trim or recovery sent); a *[RecoverError] wrapping
// [ErrCannotRecover] when nothing more can be dropped to make it smaller:
// a retry never resends what was refused. Before any Trim, msgs is taken
// to be what was sent.
func (t *Trimmer) RecoverOverflow(msgs []Message, providerErr error, attempt int) (Result, error) {
	ov, ok := ParseOverflow(providerErr)
	if !ok {
		return Result{Messages: msgs[:len(msgs):len(msgs)], Kept: identity(len(msgs))}, ErrNotOverflow
	}
	attempt = max(attempt, 1)
	o := newOptions(t.opts)
	defer o.release()
	t.mu.Lock()
	sent, asked, share := t.sent, t.asked, t.accept
	t.mu.Unlock()
	if share <= 0 {
		share = 1
	}
	var cut cutInfo
	var target int
	// ratio is the provider's count of a token of ours in the refused
	// request: what converts the target, in our units, to the budget's
	// units. It is 1 without a Calibration, whose budget is in our units.
	ratio := 1.0
	c := &call{reason: ReasonOverflow, attempt: attempt, exact: true, cut: &cut}
	// Without a Trim before, msgs is what was sent, orphans included: the
	// sweep shrinks it. Otherwise the sweep of msgs is no progress (the
	// Trim that sent it swept them too): only a smaller count is.
	swept := sent <= 0
	c.budgetFor = func(total int) int {
		if sent <= 0 {
			sent = total // no Trim before: msgs is what was sent
		}
		if o.calib != nil && sent > 1 {
			ratio = overflowRatio(o.calib, sent, ov, asked, share)
			if v := o.calib.Observe(sent, ov.Used); v != VerdictUsed && v != VerdictRestarted {
				o.calib.ObserveOverflow(sent, ov.Limit)
			}
		}
		target = overflowTarget(sent, ov, attempt)
		return target
	}
	res, err := trimToBudget(msgs, 1, o, c)
	if err != nil && !errors.Is(err, ErrLatestTurnTooLarge) {
		return res, err
	}
	if res.TokensAfter > sent || (res.TokensAfter == sent && !(swept && res.OrphansRemoved > 0)) {
		return res, &RecoverError{Overflow: ov, Tokens: res.TokensAfter, Budget: res.Budget, Attempt: attempt, Err: providerErr}
	}
	var keys []promptKey
	if o.onTrim != nil {
		keys = promptKeys(&res)
	}
	t.mu.Lock()
	t.st, t.prev, t.sent = remember(msgs, &res, cut), keys, res.TokensAfter
	t.prevKept, t.prevStable = keptFor(keys, res.Kept), stableEnd(res.Messages)
	if asked > 0 {
		// The share of the budget the provider accepts, in the budget's
		// units: the target; with a Calibration, converted to the
		// provider's units, or the limit it states, which needs no margin
		// (the Calibration keeps its own).
		accept := refusal.Allowed(target, ratio, ov.Limit, o.calib != nil)
		t.accept = min(accept/float64(asked), 1)
	}
	t.mu.Unlock()
	return res, nil
}

// replan makes a new plan at a maintenance point, remembers it, and
// reports its event once the cost of the new prompt is known (prev is the
// previous request's prompt, cold whether its cache has expired).
func (t *Trimmer) replan(ctx context.Context, msgs []Message, budget int, o *options, c *call, sum summaryState, prev []promptKey, cold bool, ready *bgJob) (Result, error) {
	// At a maintenance point, elide every eligible result.
	c.pruneOver = true
	userOnTrim := o.onTrim
	var ev *Event
	if userOnTrim != nil {
		o.onTrim = func(e Event) { ev = &e }
	}
	var counts []int
	c.outCounts = &counts
	var res Result
	var err error
	var cut cutInfo
	if o.summarizer != nil && o.err == nil {
		res, cut, sum, err = t.planWithSummary(ctx, msgs, budget, o, c, sum, ready)
	} else {
		c.cut = &cut
		res, err = trimToBudget(msgs, budget, o, c)
		sum = summaryState{}
	}
	var be *BudgetError
	next := trimState{}
	if err == nil || errors.As(err, &be) {
		next = remember(msgs, &res, cut)
	} else {
		sum = summaryState{}
	}
	var keys []promptKey // kept only for an event to compare with
	if userOnTrim != nil {
		keys = promptKeys(&res)
	}
	if ev != nil {
		userOnTrim(priced(*ev, prev, keys, counts, o.prices, cold))
	}
	t.mu.Lock()
	t.st, t.sum, t.prev = next, sum, keys
	t.prevKept, t.prevStable = keptFor(keys, res.Kept), stableEnd(res.Messages)
	t.mu.Unlock()
	return res, err
}

// priced completes the event of a maintenance point with what it rewrites
// in the provider's cache against the previous prompt prev, and what it
// bills under prices (nil: not billed).
func priced(e Event, prev, keys []promptKey, counts []int, prices *Prices, cold bool) Event {
	if len(counts) == len(keys) {
		e.Rewritten = rewritten(prev, keys, counts)
	}
	if prices != nil {
		written := e.TokensAfter
		if prev != nil && !cold {
			written = min(e.Rewritten, e.TokensAfter)
		}
		e.Billed = float64(e.TokensAfter-written)*prices.Read + float64(written)*prices.Write
	}
	return e
}

// overflowRatio returns the provider's count of one of the library's
// tokens in a request of sent tokens that it refused, as a Trimmer with a
// Calibration knows it before the Calibration learns from the refusal:
// the count the error states, over sent; otherwise the ratio of the
// budget the refused plan asked for (asked × share, as TrimContext
// computes it) to the Calibration's conversion of it (refusal.Ratio,
// the rule adapt.Limits reads a refusal with too). It lies in [1/8, 8].
func overflowRatio(cal *Calibration, sent int, ov Overflow, asked int, share float64) float64 {
	planned := 0
	if asked > 0 {
		planned = max(int(float64(asked)*share), 1)
	}
	return refusal.Ratio(ov.Used, sent, planned, cal.Budget)
}
