// This file owns the Trimmer: a trim that remembers its cut between calls so
// that the provider's cached prompt prefix survives.

package history

import (
	"errors"
	"slices"
	"sync"
)

// Trimmer trims one conversation before every request and keeps the cut it
// chose, so that the prompt the provider has cached stays a prefix of the
// next request for as long as possible.
//
// It is meant for runtimes that keep the full transcript and trim a view of
// it before each request. A stateless [TrimToRecentTurns] recomputes the cut
// from scratch every time: once the transcript is over budget, every new
// turn moves the cut forward, the beginning of the prompt changes, and the
// provider's prompt cache misses on nearly every request. A Trimmer instead
// reuses its previous cut as long as the system prefix, the breadcrumb and
// every turn from the cut on still fit the budget, and only then trims again
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
// What it remembers is only a position, the index of the first kept turn,
// together with copies of the two messages on either side of it. Before
// reusing the cut it checks, in constant time, that the transcript is still
// long enough and that those two messages are unchanged and the cut is still
// after the prefix. If the caller edited, truncated, compacted or replaced its
// transcript so that the check fails, the Trimmer trims from scratch, exactly
// as [TrimToRecentTurns] would. An edit it does not detect (for example a
// changed message after the cut) is still reflected in the Result, because
// the kept turns are re-read and re-counted on every call; the only thing
// carried over is where the kept turns begin, which is always a turn start.
//
// With [WithElision] or [WithStepTrim], a trim that had to elide tool results
// or drop steps of the latest turn is not remembered: the next call trims
// afresh, as [TrimToRecentTurns] would. The cut is carried only across
// whole-turn trims.
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

	mu sync.Mutex
	st trimState
}

// trimState is the remembered cut. The zero value means no cut: the next
// call trims from scratch.
type trimState struct {
	// cut is the index in the caller's transcript of the first message of
	// the first kept turn. It is > the end of the transcript's prefix when
	// valid; 0 means no cut.
	cut int
	// at and before are copies of msgs[cut] and msgs[cut-1] when the cut
	// was made, with their slices cloned so that later in-place edits by
	// the caller cannot change them.
	at, before Message
	// hoist is the index of the summary the trim moved out of the dropped
	// turns into the prefix, or -1; hoisted is its copy.
	hoist   int
	hoisted Message
	// crumb is the breadcrumb the fresh trim inserted; hasCrumb is false
	// under WithoutBreadcrumb.
	crumb    Message
	hasCrumb bool
	// The figures of the dropped part, as counted when the cut was made.
	droppedTokens   int // TokensBefore - TokensAfter of that trim, -1 when not counted
	droppedMessages int
	droppedTurns    int
}

// NewTrimmer returns a [Trimmer] that trims with opts (the options of
// [TrimToRecentTurns]; [WithLowWater] is the one that matters for caching).
// The options are fixed for the Trimmer's life: the slice is copied, and an
// invalid option makes every [Trimmer.Trim] return its *[OptionError].
func NewTrimmer(opts ...Option) *Trimmer {
	return &Trimmer{opts: slices.Clone(opts)}
}

// Reset forgets the remembered cut: the next [Trimmer.Trim] trims from
// scratch, as [TrimToRecentTurns] would. It keeps the options.
func (t *Trimmer) Reset() {
	t.mu.Lock()
	t.st = trimState{}
	t.mu.Unlock()
}

// Trim returns the history to send for msgs, the caller's full transcript,
// under budget.
//
// When the Trimmer has a cut from an earlier call and that cut still applies
// to msgs (see Safety in the [Trimmer] documentation), it returns the
// transcript's prefix, the breadcrumb and every message from the cut on,
// unchanged, provided they fit budget: the same prompt prefix as the
// previous request. Otherwise, or when they no longer fit, it trims msgs
// from scratch with [TrimToRecentTurns] and the Trimmer's options and
// remembers the new cut.
//
// The [Result] is what TrimToRecentTurns would return for the same cut:
// Messages, [Result.Kept] (indices into msgs, parallel to Messages) and
// Dropped refer to msgs; Trimmed is true whenever turns of msgs are left out.
// When the cut is reused, no [Event] is emitted (nothing new was dropped),
// OrphansRemoved counts only the orphans among the messages sent, and
// TokensBefore, DroppedMessages and DroppedTurns take the dropped part's
// figures from the trim that made the cut (the Trimmer does not re-read
// messages it no longer sends; TokensBefore is -1 when that trim did not
// count them, see [WithFullCount]). Errors are those of TrimToRecentTurns; on an
// error other than a *[BudgetError] the remembered cut is forgotten.
func (t *Trimmer) Trim(msgs []Message, budget int) (Result, error) {
	t.mu.Lock()
	st := t.st
	t.mu.Unlock()

	o := newOptions(t.opts)
	defer o.release()
	if st.cut > 0 && o.err == nil {
		res, ok, memo := t.reuse(msgs, budget, &st)
		if ok {
			return res, nil
		}
		o.memo = memo // what the check counted is not counted again
	}
	var cut cutInfo
	o.cut = &cut
	res, err := trimToBudget(msgs, budget, o)
	var be *BudgetError
	next := trimState{}
	if err == nil || errors.As(err, &be) {
		next = remember(msgs, &res, cut)
	}
	t.mu.Lock()
	t.st = next
	t.mu.Unlock()
	return res, err
}

// reuse returns the Result for the remembered cut when it still applies to
// msgs and what it keeps fits budget. When it does not, it returns the counts
// it made, by index into msgs (negative: not counted), for the fresh trim.
func (t *Trimmer) reuse(msgs []Message, budget int, st *trimState) (Result, bool, []int) {
	cut := st.cut
	if cut >= len(msgs) {
		return Result{}, false, nil // truncated at or before the cut
	}
	lead := leadEnd(msgs)
	if cut <= lead || !equal(&msgs[cut], &st.at) || !equal(&msgs[cut-1], &st.before) {
		return Result{}, false, nil
	}
	if st.hoist >= 0 && (st.hoist < lead || st.hoist >= cut || !equal(&msgs[st.hoist], &st.hoisted)) {
		return Result{}, false, nil
	}

	o := newOptions(t.opts)
	defer o.release()
	if checkPins(msgs, o.pins) != nil {
		return Result{}, false, nil // the fresh trim reports it
	}

	// The view is what TrimToRecentTurns would have built for this cut:
	// the prefix (old breadcrumbs out if ours goes in), the hoisted
	// summary, the breadcrumb, and the kept turns. index maps it back to
	// msgs.
	n := lead + 2 + len(o.pins) + len(msgs) - cut
	view := make([]Message, 0, n)
	index := make([]int, 0, n)
	for i := range lead {
		if st.hasCrumb && msgs[i].Kind == KindBreadcrumb {
			continue
		}
		view = append(view, msgs[i])
		index = append(index, i)
	}
	// The summary and the pinned messages the cut lifted, in order.
	var lifted []int
	for _, p := range o.pins {
		if p >= lead && p < cut && p != st.hoist {
			lifted = append(lifted, p)
		}
	}
	if st.hoist >= 0 {
		lifted = append(lifted, st.hoist)
		slices.Sort(lifted)
	}
	for _, i := range lifted {
		view = append(view, msgs[i])
		index = append(index, i)
	}
	if st.hasCrumb {
		view = append(view, st.crumb)
		index = append(index, -1)
	}
	for i := cut; i < len(msgs); i++ {
		view = append(view, msgs[i])
		index = append(index, i)
	}

	// Validate, sweep and count the view exactly as a trim does; if it
	// does not fit as it is, the caller needs a new cut. This pass only
	// checks: no event, no elision (whose Archive callback has effects),
	// no step trimming. Its counts are recorded for that new cut.
	o.onTrim, o.elide, o.stepTrim = nil, nil, false
	// Pins are off: lifted messages are in the view, and a view that
	// does not fit as it is makes a fresh trim anyway.
	o.pins = nil
	o.record = make([]int, len(view))
	for i := range o.record {
		o.record[i] = -1
	}
	r, err := trimToBudget(view, budget, o)
	if err != nil || r.Trimmed {
		memo := make([]int, len(msgs))
		for i := range memo {
			memo[i] = -1
		}
		for i, c := range o.record {
			if index[i] >= 0 {
				memo[index[i]] = c
			}
		}
		return Result{}, false, memo
	}

	kept := make([]int, len(r.Kept))
	for i, k := range r.Kept {
		kept[i] = index[k]
	}
	var replaced []int // the breadcrumbs ours replaces
	if st.hasCrumb {
		for i := range lead {
			if msgs[i].Kind == KindBreadcrumb {
				replaced = append(replaced, i)
			}
		}
	}
	return Result{
		Messages:        r.Messages,
		Kept:            kept,
		Dropped:         dropped(msgs, kept, replaced),
		Trimmed:         true,
		DroppedMessages: st.droppedMessages,
		DroppedTurns:    st.droppedTurns,
		KeptTurns:       r.KeptTurns,
		TokensBefore:    addKnown(r.TokensBefore, st.droppedTokens),
		TokensAfter:     r.TokensAfter,
		Budget:          budget,
		OrphansRemoved:  r.OrphansRemoved,
		Modified:        r.Modified,
	}, true, nil
}

// remember returns the state for the Result of a fresh trim of msgs that
// cut where cut says: no cut when it dropped no whole turn. A trim that
// elided tool results or dropped steps of the latest turn is not
// remembered: its messages differ from the transcript's, so the next call
// trims afresh.
func remember(msgs []Message, res *Result, cut cutInfo) trimState {
	if cut.start < 0 || res.ElidedResults > 0 || res.DroppedSteps > 0 {
		return trimState{}
	}
	lead := leadEnd(msgs)
	if cut.start <= lead || cut.start >= len(msgs) {
		return trimState{}
	}
	st := trimState{cut: cut.start, hoist: cut.hoist}
	for i, k := range res.Kept {
		if k < 0 {
			st.crumb, st.hasCrumb = res.Messages[i], true
			break
		}
	}
	st.at = msgs[st.cut].Clone()
	st.before = msgs[st.cut-1].Clone()
	if st.hoist >= 0 {
		st.hoisted = msgs[st.hoist].Clone()
	}
	st.droppedTokens = -1 // not counted
	if res.TokensBefore >= 0 {
		st.droppedTokens = res.TokensBefore - res.TokensAfter
	}
	st.droppedMessages = res.DroppedMessages
	st.droppedTurns = res.DroppedTurns
	return st
}

// addKnown returns a+b for counts that are -1 when unknown: unknown if
// either is.
func addKnown(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return satAdd(a, b)
}
