// This file owns the Trimmer: a trim that remembers its plan between calls so
// that the provider's cached prompt prefix survives.

package history

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
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
// results it elided (with their placeholder text), together with copies of
// the messages where the plan resumes after a gap and of the transcript's
// last message. Before reusing the plan it checks that the transcript is
// still at least as long and that those messages are unchanged, in time
// proportional to their number. If the caller edited, truncated, compacted or
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
}

// trimState is the remembered plan: what the last fresh trim sent, as
// positions in the transcript. The zero value means no plan: the next call
// trims from scratch.
type trimState struct {
	// n is the length of the transcript the plan was made for; every
	// message from n on is new and is appended after the plan.
	n int
	// tail is where the run of messages the plan sends whole (or the sweep
	// removed) ends the transcript: from tail on, reuse sends every message,
	// elided ones as placeholders, and sweeps again.
	tail int
	// plan is that trim's Result.Kept: indices into the transcript, -1
	// where it inserted a notice (notices holds them, in order).
	plan    []int
	notices []Message
	// elided maps each transcript index whose result the plan elided to
	// its placeholder text, and cleared each transcript index of an
	// assistant message whose calls' arguments it cleared to those calls
	// (ID and the new Arguments).
	elided  map[int]string
	cleared map[int][]ToolCall
	// anchors are copies of the transcript's messages where the plan
	// resumes after a gap, and of its last message, with their indices:
	// reuse checks them, in time proportional to their number.
	anchors []anchor
	// replaced are the breadcrumbs of the transcript the plan's notices
	// replaced (not listed in Dropped).
	replaced []int
	// The figures of what the plan leaves out, as counted when it was made.
	saved           int // TokensBefore - TokensAfter of that trim, -1 when not counted
	droppedMessages int
	droppedTurns    int
	droppedSteps    int
}

// anchor is a copy of the transcript's message at index i.
type anchor struct {
	i int
	m Message
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
	t.st, t.last, t.sum, t.prev = trimState{}, time.Time{}, summaryState{}, nil
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
	st, last, sum, prev := t.st, t.last, t.sum, t.prev
	t.last = at
	t.mu.Unlock()

	c := budgetCall()
	// A cold resume: the provider's cache has expired, so this request
	// pays for its whole prompt anyway. Plan afresh and prune.
	cold := !last.IsZero() && at.Sub(last) > o.retention()
	if o.elide != nil && cold {
		c.prune, c.reason = true, ReasonColdResume
		st = trimState{}
	}
	if st.n > 0 && o.err == nil {
		res, ok, memo := t.reuse(msgs, budget, &st, o)
		if ok {
			if o.onTrim != nil { // the next event compares its prompt with this one
				keys := promptKeys(&res)
				t.mu.Lock()
				t.prev = keys
				t.mu.Unlock()
			}
			return res, nil
		}
		c.memo = memo // what the check counted is not counted again
	}
	return t.replan(ctx, msgs, budget, o, c, sum, prev, cold)
}

// replan makes a new plan at a maintenance point, remembers it, and
// reports its event once the cost of the new prompt is known (prev is the
// previous request's prompt, cold whether its cache has expired).
func (t *Trimmer) replan(ctx context.Context, msgs []Message, budget int, o *options, c *call, sum summaryState, prev []promptKey, cold bool) (Result, error) {
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
		res, cut, sum, err = t.planWithSummary(ctx, msgs, budget, o, c, sum)
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

// planWithSummary makes a new plan under WithSummarizer. A first pass,
// with no effects (no event, no archive), tells whether whole turns must
// go; if they must, the trim reserves the summary's budget, drops them and
// the Summarizer writes the summary that stands for them. The first pass's
// counts are reused, so no message is counted twice.
func (t *Trimmer) planWithSummary(ctx context.Context, msgs []Message, budget int, o *options, c *call, prev summaryState) (Result, cutInfo, summaryState, error) {
	probe := *o
	probe.onTrim = nil
	var pc cutInfo
	pcall := &call{reason: c.reason, prune: c.prune, pruneOver: true, memo: c.memo, noArchive: true, cut: &pc,
		record: make([]int, len(msgs))}
	for i := range pcall.record {
		pcall.record[i] = -1
	}
	r0, _ := trimToBudget(msgs, budget, &probe, pcall)
	memo := c.memo
	if memo == nil {
		memo = pcall.record
	} else {
		for i, n := range pcall.record {
			if n >= 0 {
				memo[i] = n
			}
		}
	}
	c.memo = memo

	var cut cutInfo
	c.cut = &cut
	if r0.DroppedTurns == 0 {
		res, err := trimToBudget(msgs, budget, o, c)
		return res, cut, summaryState{}, err
	}
	// The passes below may be redone, so results are archived once, at
	// the end, for the plan that is returned.
	var archiveFn func(Message) error
	var store Store
	if o.elide != nil {
		archiveFn, store = o.elide.Archive, o.elide.Store
	}
	c.noArchive = true
	reserve := o.summarizer.opts.MaxTokens
	userOnTrim := o.onTrim
	var ev *Event
	o.onTrim = func(e Event) { ev = &e }
	finish := func(res Result, err error, status string, next summaryState) (Result, cutInfo, summaryState, error) {
		if (archiveFn != nil || store != nil) && (err == nil || errors.As(err, new(*BudgetError))) {
			for _, j := range res.Modified {
				if k := res.Kept[j]; res.Messages[j].Kind == KindElided && msgs[k].Kind != KindElided {
					if aerr := archiveOne(msgs[k], archiveFn, store); aerr != nil {
						return Result{Budget: res.Budget}, cutInfo{start: -1, hoist: -1}, summaryState{}, &archiveError{index: k, err: aerr}
					}
				}
			}
		}
		if userOnTrim != nil && ev != nil {
			e := newEvent(&res, c.reason, c.attempt, o.labels)
			e.Summary = status
			userOnTrim(e)
		}
		return res, cut, next, err
	}
	// Whole turns go: reserve the summary's room; the event is reported
	// once the summary is settled.
	c.reserve = reserve
	res, err := trimToBudget(msgs, budget, o, c)
	c.reserve = 0
	if err != nil || res.DroppedTurns == 0 || cut.start < 0 {
		// The latest turn leaves no room for a summary (or the plan
		// changed): the plain trim.
		c.cut = &cut
		res, err = trimToBudget(msgs, budget, o, c)
		return finish(res, err, "", summaryState{})
	}
	status, next := summarize(ctx, msgs, &res, cut.start, reserve, o, c, prev)
	if status != SummaryWritten {
		next = prev // kept for the next maintenance point to fold in
	}
	return finish(res, nil, status, next)
}

// reuse returns the Result of the remembered plan applied to msgs, with
// every message after the plan appended, when the plan still applies (see
// Safety in the [Trimmer] documentation) and that fits budget. When it does
// not, it returns the counts it made, by index into msgs (negative: not
// counted), for the fresh trim.
func (t *Trimmer) reuse(msgs []Message, budget int, st *trimState, opts *options) (Result, bool, []int) {
	if st.n > len(msgs) {
		return Result{}, false, nil // truncated
	}
	for _, a := range st.anchors {
		if !equal(&msgs[a.i], &a.m) {
			return Result{}, false, nil
		}
	}

	// The view is the plan over msgs, then the new messages; index maps
	// it back to msgs (-1: a notice), and elided marks the placeholders.
	n := len(st.plan) + len(msgs) - st.n
	view := make([]Message, 0, n)
	index := make([]int, 0, n)
	// changedAt marks the messages of the view that are the plan's
	// changed copies (elided results, cleared arguments).
	var changedAt []bool
	if len(st.elided) > 0 || len(st.cleared) > 0 {
		changedAt = make([]bool, 0, n)
	}
	crumb := 0
	for _, i := range st.plan {
		if i >= st.tail {
			break // the tail follows, whole
		}
		if i < 0 {
			view = append(view, st.notices[crumb])
			crumb++
		} else {
			view = append(view, st.apply(msgs, i))
		}
		index = append(index, i)
		if changedAt != nil {
			changedAt = append(changedAt, i >= 0 && st.changes(i))
		}
	}
	for i := st.tail; i < len(msgs); i++ {
		view = append(view, st.apply(msgs, i))
		index = append(index, i)
		if changedAt != nil {
			changedAt = append(changedAt, st.changes(i))
		}
	}

	// Validate, sweep and count the view exactly as a trim does; if it
	// does not fit as it is, the caller needs a new plan. This pass only
	// checks: no event, no elision (whose Archive callback has effects),
	// no step trimming, no pins (the pinned messages are in the view). Its
	// counts of the caller's own messages are recorded for that new plan.
	o := *opts
	o.onTrim, o.elide, o.stepTrim, o.pins = nil, nil, false, nil
	c := &call{reason: ReasonBudget, record: make([]int, len(view))}
	for i := range c.record {
		c.record[i] = -1
	}
	r, err := trimToBudget(view, budget, &o, c)
	// Over the trigger the check may still send the view (a single turn
	// it cannot cut without the ladder): that too needs a new plan.
	if err != nil || r.Trimmed || r.TokensAfter > o.limit(r.Budget) {
		memo := make([]int, len(msgs))
		for i := range memo {
			memo[i] = -1
		}
		for i, n := range c.record {
			if index[i] >= 0 && (changedAt == nil || !changedAt[i]) {
				memo[index[i]] = n
			}
		}
		return Result{}, false, memo
	}

	kept := make([]int, len(r.Kept))
	var modified []int
	for j, k := range r.Kept {
		kept[j] = index[k]
		if changedAt != nil && changedAt[k] {
			modified = append(modified, j)
		}
	}
	if len(r.Modified) > 0 {
		modified = append(modified, r.Modified...)
		slices.Sort(modified)
		modified = slices.Compact(modified)
	}
	return Result{
		Messages:        r.Messages,
		Kept:            kept,
		Dropped:         dropped(msgs, kept, st.replaced),
		Trimmed:         true,
		DroppedMessages: st.droppedMessages,
		DroppedTurns:    st.droppedTurns,
		KeptTurns:       r.KeptTurns,
		TokensBefore:    addKnown(r.TokensBefore, st.saved),
		TokensAfter:     r.TokensAfter,
		Budget:          r.Budget,
		OrphansRemoved:  r.OrphansRemoved,
		DroppedSteps:    st.droppedSteps,
		ElidedResults:   len(st.elided),
		Modified:        modified,
	}, true, nil
}

// apply returns msgs[i] as the plan sends it: the placeholder copy of a
// result it elided, a copy of an assistant message with the arguments it
// cleared (matched by call ID), or the message itself.
func (st *trimState) apply(msgs []Message, i int) Message {
	if text, ok := st.elided[i]; ok {
		return elided(msgs[i], text)
	}
	calls, ok := st.cleared[i]
	if !ok {
		return msgs[i]
	}
	m := msgs[i]
	m.ToolCalls = slices.Clone(m.ToolCalls)
	var x callIndex
	x.reset(m.ToolCalls)
	for _, c := range calls {
		if j := x.find(c.ID); j >= 0 {
			m.ToolCalls[j].Arguments = c.Arguments
		}
	}
	return m
}

// changes reports whether the plan sends a changed copy of msgs[i].
func (st *trimState) changes(i int) bool {
	_, e := st.elided[i]
	_, c := st.cleared[i]
	return e || c
}

// clearedCalls returns the calls of m, a changed copy of orig, whose
// Arguments differ from those of orig's call of the same ID, or nil.
func clearedCalls(m, orig *Message) []ToolCall {
	if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
		return nil
	}
	var x callIndex
	x.reset(orig.ToolCalls)
	var out []ToolCall
	for _, c := range m.ToolCalls {
		if j := x.find(c.ID); j >= 0 && orig.ToolCalls[j].Arguments != c.Arguments {
			out = append(out, ToolCall{ID: c.ID, Arguments: c.Arguments})
		}
	}
	return out
}

// remember returns the state for the Result of a fresh trim of msgs: its
// plan when it dropped or elided anything, no plan otherwise. replaced
// lists the breadcrumbs of msgs the trim replaced.
func remember(msgs []Message, res *Result, cut cutInfo) trimState {
	if !res.Trimmed || len(msgs) == 0 {
		return trimState{}
	}
	st := trimState{
		n:               len(msgs),
		plan:            slices.Clone(res.Kept),
		replaced:        slices.Clone(cut.replaced),
		saved:           -1, // not counted
		droppedMessages: res.DroppedMessages,
		droppedTurns:    res.DroppedTurns,
		droppedSteps:    res.DroppedSteps,
	}
	mod := res.Modified
	for j, k := range res.Kept {
		if len(mod) > 0 && mod[0] == j {
			mod = mod[1:]
			m := &res.Messages[j]
			if m.Kind == KindElided && msgs[k].Kind != KindElided {
				if st.elided == nil {
					st.elided = make(map[int]string)
				}
				st.elided[k] = m.Content
			} else if calls := clearedCalls(m, &msgs[k]); calls != nil {
				if st.cleared == nil {
					st.cleared = make(map[int][]ToolCall)
				}
				st.cleared[k] = calls
			}
		}
		switch {
		case k < 0:
			st.notices = append(st.notices, res.Messages[j])
		case j == 0 || res.Kept[j-1] != k-1:
			st.anchors = append(st.anchors, anchor{k, msgs[k].Clone()})
		}
	}
	st.anchors = append(st.anchors, anchor{len(msgs) - 1, msgs[len(msgs)-1].Clone()})
	// The tail: the longest run at the end of msgs that the trim did not
	// leave out (every message kept, or removed by the orphan sweep only).
	// Reuse sends it whole, sweeping again, so that a message swept for
	// want of its pair (calls whose results had not arrived) comes back
	// with the pair instead of being lost to the plan.
	kept := make(map[int]bool, len(res.Kept))
	for _, k := range res.Kept {
		kept[k] = true
	}
	st.tail = len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		_, swept := slices.BinarySearch(cut.survived, i)
		swept = cut.survived != nil && !swept
		if !kept[i] && !swept {
			break
		}
		st.tail = i
	}
	// The tail must be the end of the plan: an ascending run after every
	// notice, lifted message and hoisted summary.
	j := len(res.Kept)
	for j > 0 && res.Kept[j-1] >= 0 && (j == len(res.Kept) || res.Kept[j-1] < res.Kept[j]) {
		j--
	}
	if j == len(res.Kept) {
		st.tail = len(msgs)
	} else {
		st.tail = max(st.tail, res.Kept[j])
		for _, k := range res.Kept[:j] {
			st.tail = max(st.tail, k+1)
		}
	}
	if res.TokensBefore >= 0 {
		st.saved = res.TokensBefore - res.TokensAfter
	}
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
