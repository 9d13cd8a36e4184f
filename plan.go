// This file owns the planner: the count of a history (newest first, each
// message at most once, only as far as the decision needs) and the decision
// of what a trim keeps, in three rungs: drop the oldest whole turns, then the
// oldest steps of the latest turn, and elide tool results wherever that saves
// dropping. It reads the options value; it never materialises messages
// (trim.go does).

package history

import (
	"math"
	"slices"
	"sync"
)

// scratch holds per-call working memory, pooled so that steady-state trims
// allocate only their output.
type scratch struct {
	starts []int // turn starts, oldest first (see scanTurns)
	sums   []int // summaries after the prefix, ascending (see scanTurns)
	rc     []int // counts of the counted suffix, newest first
	pre    []int // counts of the leading block
	turnEl []int // per counted turn, newest first: its count with every candidate elided
	cands  []elideCand
	clear  []clearedOwner // assistant messages whose calls' arguments the plan clears
	steps  []int
	kept   []int    // chooseSteps: the steps kept, as indices into steps
	gaps   [][2]int // chooseSteps: the runs of steps dropped
	pins   []int    // view indices of pinned messages after the prefix
	pinCnt []int    // their counts, -1 until counted
	lifted []int    // pinned messages moved out of what is dropped, after the breadcrumb
	fast   []int    // counts of fitsFast, newest first, from the end of the view
	plan   planner  // the call's planner, kept here so that it is not allocated
	call   call     // the planner's copy of the entry point's call
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// put returns sc to the pool, keeping its buffers but no reference to the
// call's messages, options or placeholder texts.
func (sc *scratch) put() {
	sc.steps = sc.plan.steps[:0]
	sc.kept = sc.kept[:0]
	sc.gaps = sc.gaps[:0]
	sc.starts = sc.plan.starts[:0]
	sc.sums = sc.plan.sums[:0]
	sc.pins = sc.plan.pins[:0]
	sc.fast = sc.fast[:0]
	sc.plan = planner{}
	sc.call = call{}
	clear(sc.cands)
	clear(sc.clear)
	sc.clear = sc.clear[:0]
	scratchPool.Put(sc)
}

// newPlanner returns the planner for view: its turns and summaries found
// by one structural pass (roles and kinds only), its pinned messages
// located; nothing is counted yet. view is src after the orphan sweep;
// index maps view positions to src (nil: identity), for c.memo and
// c.record. With lazy, view is src unswept and unvalidated: the planner
// validates and checks for orphans only what it reads (see prepare).
func newPlanner(sc *scratch, src, view []Message, index []int, o *options, c *call, lazy bool) *planner {
	n := len(view)
	// Every count is capped at capPer = MaxInt/(n+5), so no sum of the
	// planner (at most the view, two breadcrumbs, a hoisted summary and
	// the request's overhead) can wrap; plain arithmetic is safe.
	p := &sc.plan
	*p = planner{
		sc: sc, view: view, src: src, index: index, n: n, lead: leadEnd(view), o: o, c: c,
		capPer: math.MaxInt / (n + 5), hoist: -1, stray: -1, stepTok: -1, low: n, ready: n, lazy: lazy,
		steps: sc.steps[:0],
	}
	p.starts, p.sums = scanTurns(sc.starts[:0], sc.sums[:0], view, p.lead, o.turnStart)
	p.turns = len(p.starts)
	sc.pre = sc.pre[:0]
	sc.rc = sc.rc[:0]
	sc.turnEl = sc.turnEl[:0]
	sc.cands = sc.cands[:0]
	// The request's overhead is counted with the prefix: it is paid
	// whatever is kept.
	p.extra = satAdd(o.overhead, c.reserve)
	if p.extra >= p.capPer {
		p.extra, p.capped = p.capPer, true
	}
	// Pinned messages after the prefix, as view indices.
	p.pins = sc.pins[:0]
	for _, i := range o.pins {
		if index != nil {
			i, _ = slices.BinarySearch(index, i) // present: a pin is never swept
		}
		if i >= p.lead {
			p.pins = append(p.pins, i)
		}
	}
	sc.pinCnt = sc.pinCnt[:0]
	for range p.pins {
		sc.pinCnt = append(sc.pinCnt, -1)
	}
	return p
}

// countLead counts the leading block (the prefix and its breadcrumbs) and
// the request's overhead, and starts the total with them.
func (p *planner) countLead() {
	if !p.prepareLead() {
		return
	}
	for i := range p.lead {
		c := p.countAt(i)
		p.sc.pre = append(p.sc.pre, c)
		if p.view[i].Kind == KindBreadcrumb {
			p.oldCrumbTok += c
		} else {
			p.pinnedTok += c
		}
	}
	p.pinnedTok += p.extra
	p.total = p.pinnedTok + p.oldCrumbTok
}

// scanTurns appends to starts the first message of each turn of msgs
// after the prefix ending at lead (see appendTurnStarts) and to sums every
// summary after the prefix, both ascending: the one pass over the whole
// history a trim makes, reading roles and kinds only.
func scanTurns(starts, sums []int, msgs []Message, lead int, rule func(Message) bool) ([]int, []int) {
	if lead >= len(msgs) {
		return starts, sums
	}
	starts = append(starts, lead)
	opened := isTurnStart(msgs[lead], rule)
	for i := lead + 1; i < len(msgs); i++ {
		m := &msgs[i]
		if m.Kind != "" {
			if m.Kind == KindSummary {
				sums = append(sums, i)
			}
			continue
		}
		// isTurnStart, with the default rule spelt out: this loop reads
		// every message of the history.
		if m.Role == RoleTool || (rule == nil && m.Role != RoleUser) || (rule != nil && !rule(*m)) {
			continue
		}
		if opened {
			starts = append(starts, i)
		}
		opened = true
	}
	return starts, sums
}

// prepare validates view[lo:hi] and checks it for orphans before the
// planner first reads it, when the planner is lazy (see newPlanner): a trim
// validates and sweeps only what it reads, so a malformed or orphaned
// message in the part it drops unread is neither reported nor swept.
// Ranges are prepared newest first; lo must start a turn (or be 0) and hi
// end one, so that the orphan check of the range is the sweep's. It
// reports false, with p.err set for an invalid message or p.dirty for
// orphans (the trim then sweeps the whole history and plans again), when
// the planner must stop.
func (p *planner) prepare(lo, hi int) bool {
	if p.err != nil || p.dirty {
		return false
	}
	if !p.lazy || lo >= p.ready {
		return true
	}
	if hi < p.ready {
		panic("history: internal error: ranges prepared out of order")
	}
	hi = p.ready
	for i := lo; i < hi; i++ {
		if reason := checkMessage(&p.view[i]); reason != "" {
			p.err = &MessageError{Index: i, Reason: reason}
			return false
		}
	}
	if !p.o.noSweep && hasOrphans(p.view[lo:hi]) {
		p.dirty = true
		return false
	}
	p.ready = lo
	return true
}

// prepareLead prepares the leading block, once (see prepare).
func (p *planner) prepareLead() bool {
	if p.leadReady || !p.lazy {
		return !p.stopped()
	}
	ready := p.ready
	p.ready = p.lead
	ok := p.prepare(0, p.lead)
	p.ready, p.leadReady = max(ready, p.lead), ok
	return ok
}

// prepareOne validates view[i], a pinned message or a summary read out of
// a part the trim drops, when the planner is lazy. Such a message is never
// part of a tool exchange, so it needs no orphan check.
func (p *planner) prepareOne(i int) {
	if p.lazy && p.err == nil && i < p.ready {
		if reason := checkMessage(&p.view[i]); reason != "" {
			p.err = &MessageError{Index: i, Reason: reason}
		}
	}
}

// stopped reports whether the planner met an invalid message or orphans
// (see prepare).
func (p *planner) stopped() bool { return p.err != nil || p.dirty }

// pinned reports whether view index i is a pinned message after the
// prefix, and its position in p.pins.
func (p *planner) pinned(i int) (int, bool) {
	if len(p.pins) == 0 {
		return 0, false
	}
	return slices.BinarySearch(p.pins, i)
}

// pinTok returns the count of the j-th pinned message, counting it once if
// it lies below the counted suffix.
func (p *planner) pinTok(j int) int {
	c := p.sc.pinCnt[j]
	if c < 0 {
		if i := p.pins[j]; i >= p.low {
			c = p.cnt(i)
		} else {
			p.prepareOne(i)
			c = p.countAt(i)
		}
		p.sc.pinCnt[j] = c
	}
	return c
}

// fitsFast counts the view newest first, turn by turn, with the request's
// overhead, until the total exceeds budget. When it does not, the history
// fits: it returns the total, and ok. Otherwise it leaves its counts in
// sc.fast for the planner, which then never counts those messages again.
// Counts are clamped and capped as the planner's are.
func (p *planner) fitsFast(budget int) (total int, ok bool) {
	sc := p.sc
	total = p.extra
	if total > budget || p.capped {
		return 0, false // a capped overhead stands for more than any budget
	}
	sc.fast = sc.fast[:0]
	end := p.n
	for t := p.turns - 1; t >= -1; t-- {
		start := 0 // the leading block, last
		if t >= 0 {
			start = p.starts[t]
		}
		if (t >= 0 && !p.prepare(start, end)) || (t < 0 && !p.prepareLead()) {
			return 0, false
		}
		for i := end - 1; i >= start; i-- {
			c := min(clampCount(p.o.counter.CountMessage(p.view[i])), p.capPer)
			sc.fast = append(sc.fast, c)
			total += c
			if total > budget || c == p.capPer {
				return 0, false
			}
		}
		end = start
	}
	return total, true
}

// countAt counts view[i] with the trim's Counter (or takes the count from
// c.memo or from fitsFast), clamped to [0, capPer], and records it in
// c.record.
func (p *planner) countAt(i int) int {
	if j := p.n - 1 - i; j < len(p.sc.fast) {
		c := p.sc.fast[j]
		if c >= p.capPer {
			c, p.capped = p.capPer, true
		}
		return c
	}
	mi := i
	if p.index != nil {
		mi = p.index[i]
	}
	// The memo holds counts of the caller's own messages, keyed by their
	// index in msgs. A copy the sweep stripped of calls is counted here and
	// never memoised: the Trimmer's check and its fresh trim need not
	// strip the same calls (a plan that keeps the first step of a turn and
	// drops the steps after it can bring a result next to a call it did
	// not answer before).
	own := p.index == nil || len(p.view[i].ToolCalls) == len(p.src[mi].ToolCalls)
	c := -1
	if own && mi < len(p.c.memo) {
		c = p.c.memo[mi]
	}
	if c < 0 {
		c = clampCount(p.o.counter.CountMessage(p.view[i]))
		if own && mi < len(p.c.record) {
			p.c.record[mi] = c
		}
	}
	if c >= p.capPer {
		c, p.capped = p.capPer, true
	}
	return c
}

// cnt returns the count of view[i], which must have been counted: the
// leading block, the counted suffix, or the hoisted summary.
func (p *planner) cnt(i int) int {
	switch {
	case i < p.lead:
		return p.sc.pre[i]
	case i >= p.low:
		return p.sc.rc[p.n-1-i]
	case i == p.hoist:
		return p.hoistTok
	case i == p.stray:
		return p.strayTok
	}
	if j, ok := p.pinned(i); ok {
		return p.pinTok(j)
	}
	panic("history: internal error: message not counted")
}

// countSuffix counts the turns newest first and stops as soon as the
// decision is made: when the history is known not to fit budget and the
// messages counted so far, every candidate elided, already exceed the
// target together with the prefix and the smaller breadcrumb, so that no
// older turn can be kept. The latest turn is always counted whole. With
// all, it counts everything. It reports whether every message was counted.
func (p *planner) countSuffix(budget int, all bool) bool {
	o := p.o
	if o.elide != nil {
		p.protect = protectStart(p.view, o.elide)
	}
	el := p.total // the counted part with every candidate elided
	for t := p.turns - 1; t >= 0; t-- {
		start, end := p.turnRange(t)
		if !p.prepare(start, end) {
			return false
		}
		turnEl := 0
		for i := end - 1; i >= start; i-- {
			c := p.countAt(i)
			p.sc.rc = append(p.sc.rc, c)
			p.low = i
			p.total += c
			e := c
			if o.elide != nil && i < p.protect && p.view[i].Role == RoleTool && p.view[i].Kind != KindElided {
				calls := p.owner(i)
				if cand, ok := evalCandidate(&p.view[i], i, c, calls, o.elide, o.counter); ok {
					if w := p.clearOwner(i); w >= 0 {
						p.ac.clearing(&cand, p.view, w, calls, p.view[i].ToolCallID, o.elide, o.counter, p.capPer)
					}
					p.sc.cands = append(p.sc.cands, cand)
					e -= cand.saved
				}
			}
			turnEl += e
			el += e
			if !all && t < p.turns-1 && (p.total > budget || p.capped) {
				// Over budget: a trim is certain. Stop when no turn from
				// this one back can be kept: every plan that keeps it
				// costs at least the prefix, the smaller breadcrumb and
				// what is counted so far.
				p.countCrumb()
				if el-p.oldCrumbTok+min(p.crumbTok, p.oldCrumbTok) > p.target {
					p.kmin = t + 1
					p.finishCands()
					return false
				}
			}
		}
		p.sc.turnEl = append(p.sc.turnEl, turnEl)
	}
	p.finishCands()
	return true
}

// countCrumb counts the turn breadcrumb a trim leaves, once: the new one, or
// under WithoutBreadcrumb the ones already in the leading block.
func (p *planner) countCrumb() {
	if p.crumbSet {
		return
	}
	p.crumbSet = true
	p.crumbTok = p.oldCrumbTok
	if !p.o.noBreadcrumb {
		p.crumbTok = p.count(p.o.breadcrumb)
	}
}

// finishCands puts the candidates found newest first in ascending order.
func (p *planner) finishCands() {
	slices.Reverse(p.sc.cands)
	p.cands = p.sc.cands
}

// turnRange returns the view range of turn t.
func (p *planner) turnRange(t int) (start, end int) {
	end = p.n
	if t+1 < p.turns {
		end = p.start(t + 1)
	}
	return p.start(t), end
}

// start returns the view index of the first message of turn t (0 is the
// oldest): the end of the prefix for the first turn, and for every later
// turn its real turn start (what precedes the first real start belongs to
// the first turn).
func (p *planner) start(t int) int { return p.starts[t] }

// newestSummary returns the view index of the newest summary before cut
// that is not pinned (a pinned one stays where it is, or is lifted), or -1.
func (p *planner) newestSummary(cut int) int {
	j, _ := slices.BinarySearch(p.sums, cut)
	for j--; j >= 0; j-- {
		if _, pin := p.pinned(p.sums[j]); !pin {
			return p.sums[j]
		}
	}
	return -1
}

// owner returns the calls of the nearest assistant message before the tool
// result at view index i. Results are visited newest first, and every result
// between the assistant and i shares its owner, so the lookups of a whole
// exchange cost one scan.
func (p *planner) owner(i int) *callIndex {
	if i > p.ownLo && i <= p.ownHi {
		return &p.own
	}
	j, brk := i-1, p.n
	for j >= 0 && p.view[j].Role != RoleAssistant {
		if p.view[j].Role != RoleTool && p.view[j].Kind != KindNudge {
			brk = j
		}
		j--
	}
	p.ownReason = false
	if j >= 0 {
		p.own.reset(p.view[j].ToolCalls)
		p.ownReason = p.o.elide.ClearArguments > 0 && hasReasoning(p.view[j])
	} else {
		p.own.reset(nil)
	}
	p.ownLo, p.ownHi, p.ownBrk = j, i, brk
	return &p.own
}

// clearOwner returns the view index of the assistant message whose call
// the tool result at view index i answers, when ClearArguments may change
// that message, or -1: it holds no reasoning, and only tool results and
// nudges stand between them (the pairing rule of SweepOrphans; the view is
// swept unless WithoutOrphanSweep). owner(i) must have been called.
func (p *planner) clearOwner(i int) int {
	if p.o.elide.ClearArguments <= 0 || p.ownLo < 0 || p.ownReason || p.ownBrk < i {
		return -1
	}
	return p.ownLo
}

// Markers in a planner's item list for the breadcrumbs it inserts.
const (
	itemTurnCrumb = -1 // after the prefix: earlier turns omitted
	itemStepCrumb = -2 // after the latest turn's opening: earlier steps omitted
)

// planner decides what a trim keeps, in three rungs: drop the oldest whole
// turns, then the oldest steps of the latest turn, and elide tool results
// wherever that saves dropping. All sums come from counts, computed once.
type planner struct {
	sc     *scratch
	view   []Message
	src    []Message // the trim's input, before the sweep
	index  []int     // view index -> input index (nil: identity)
	n      int       // len(view)
	turns  int       // number of turns
	starts []int     // the first message of each turn, oldest first (see start)
	sums   []int     // summaries after the prefix, ascending
	lead   int       // end of the leading block (prefix and breadcrumbs)
	o      *options
	c      *call
	// lazy: the view is the input, validated and checked for orphans only
	// from ready on (see prepare); err or dirty stop the planner there.
	lazy      bool
	ready     int  // view[ready:] is prepared
	leadReady bool // view[:lead] is prepared
	err       error
	dirty     bool
	cands     []elideCand // elision candidates in the counted suffix, ascending index

	target                 int
	budget                 int   // the budget settled by measure (Result.Budget)
	cmpBudget              int   // budget, below every capped count: what sizes are compared with
	total                  int   // sum of every count made
	capPer                 int   // the cap on one message's count
	capped                 bool  // some count reached capPer
	pinnedTok, oldCrumbTok int   // prefix tokens (overhead included); tokens of breadcrumbs in the leading block
	extra                  int   // the request's overhead (WithOverhead), capped
	pins                   []int // view indices of pinned messages after the prefix, ascending
	pinDrop                int   // tokens of the pinned messages in what is dropped
	crumbTok               int   // tokens of the turn breadcrumb a trim leaves (see countCrumb)
	crumbSet               bool
	stepTok                int // tokens of the step breadcrumb, -1 until counted

	low     int // lowest counted view index at or after lead (n: none)
	kmin    int // the oldest turn that may be kept: older ones are known not to fit
	protect int // view index from which tool results are never elided

	// The owner of the tool results being visited (see owner): its calls,
	// the range of view indices it owns, the first message between them
	// that breaks the pairing (n: none), and whether it holds reasoning
	// (read only under ClearArguments).
	own          callIndex
	ownLo, ownHi int
	ownBrk       int
	ownReason    bool
	ac           argCounter // measures arguments for ClearArguments
	cleared      []clearedOwner

	k        int // turns dropped
	kp       int // of those, turns whose every message is pinned (kept in effect)
	hoist    int // view index of the newest summary in what is dropped, or -1
	hoistTok int
	// stray is a summary counted below the counted suffix (as a hoist)
	// that a plan keeps in place after all (see chooseTurns), or -1.
	stray, strayTok int
	cost            int // tokens of the planned output with every kept candidate elided

	// Step level, when the latest turn alone is too large.
	d        int      // steps dropped
	gaps     [][2]int // the runs of steps dropped, as ranges of indices into steps, ascending
	openEnd  int      // end of the latest turn's opening block
	steps    []int    // first view index of each step of the latest turn
	replaced []int    // view indices of breadcrumbs replaced by new ones
}

func (p *planner) over() bool { return p.cost > p.target }

// crumbPart returns the tokens of the leading breadcrumb(s) when k turns
// are dropped.
func (p *planner) crumbPart(k int) int {
	if k == 0 {
		return p.oldCrumbTok
	}
	return p.crumbTok
}

// chooseTurns finds the fewest oldest turns to drop so that the rest fits
// the target once every kept candidate is elided; at most all but the
// latest. Turns older than kmin are known not to fit (countSuffix). The
// newest summary among the dropped messages is hoisted into the prefix; one
// below the counted suffix is found by a role scan and counted on its own.
func (p *planner) chooseTurns() {
	last := p.turns - 1
	// el[k]: the turns from k on, every candidate elided (turnEl is newest
	// first).
	elFrom := func(k int) int {
		s := 0
		for t := last; t >= k; t-- {
			s += p.sc.turnEl[last-t]
		}
		return s
	}
	k := p.kmin
	body := elFrom(k)
	hoist := -1
	if k > 0 {
		hoist = p.newestSummary(p.start(k))
	}
	// Pinned messages in the dropped turns stay, lifted after the
	// breadcrumb; pj counts those below the cut.
	pinDrop, pj := 0, 0
	lift := func(cut int) {
		for pj < len(p.pins) && p.pins[pj] < cut {
			pinDrop += p.pinTok(pj)
			pj++
		}
	}
	if k > 0 {
		lift(p.start(k))
	}
	hoistTok := 0
	if hoist >= 0 {
		if hoist >= p.low {
			hoistTok = p.cnt(hoist)
		} else {
			p.prepareOne(hoist)
			hoistTok = p.countAt(hoist)
		}
	}
	cost := p.pinnedTok + hoistTok + pinDrop + p.crumbPart(k) + body
	// When no plan reaches the target, the smallest one is sent: dropping
	// a turn smaller than the breadcrumb that replaces it would grow the
	// request.
	type plan struct{ k, hoist, hoistTok, pinDrop, cost int }
	best := plan{k, hoist, hoistTok, pinDrop, cost}
	for cost > p.target && k < last {
		_, end := p.turnRange(k)
		if h := p.newestSummary(end); h != hoist {
			hoist, hoistTok = h, p.cnt(h) // a summary of the turn now dropped
		}
		lift(end)
		body -= p.sc.turnEl[last-k]
		k++
		cost = p.pinnedTok + hoistTok + pinDrop + p.crumbPart(k) + body
		if cost < best.cost {
			best = plan{k, hoist, hoistTok, pinDrop, cost}
		}
	}
	if cost > p.target && best.cost < cost {
		k, hoist, hoistTok, pinDrop, cost = best.k, best.hoist, best.hoistTok, best.pinDrop, best.cost
	}
	// A dropped turn whose every message is pinned (or is the hoisted
	// summary) is kept in effect: dropping it lifts it straight back. When
	// every dropped turn is such a turn, nothing is dropped (and no
	// breadcrumb is placed).
	if k > 0 && len(p.pins) > 0 {
		if p.kp = p.pinnedTurns(p.start(k), hoist); p.kp == k {
			cost += p.crumbPart(0) - p.crumbPart(k)
			if hoist >= 0 && hoist < p.low {
				p.stray, p.strayTok = hoist, hoistTok // sent in place now: cnt finds it
			}
			k, p.kp, pinDrop, hoist, hoistTok = 0, 0, 0, -1, 0
		}
	}
	p.k, p.hoist, p.hoistTok, p.pinDrop, p.cost = k, hoist, hoistTok, pinDrop, cost
}

// pinnedTurns counts the turns before view index cut (a turn start) whose
// every message is pinned or is the hoisted summary (view index hoist, or
// -1). It follows the runs of consecutive pins, and reads no message
// outside them but those up to the first turn start.
func (p *planner) pinnedTurns(cut, hoist int) int {
	keep := p.pins
	if hoist >= 0 {
		at, _ := slices.BinarySearch(p.pins, hoist)
		keep = slices.Insert(slices.Clone(p.pins), at, hoist)
	}
	// The first turn runs from the end of the prefix over the first real
	// turn start (r1) to the second; every later real start opens a turn.
	r1 := p.lead
	for r1 < cut && !isTurnStart(p.view[r1], p.o.turnStart) {
		r1++
	}
	opens := func(i int) bool { return i == p.lead || (i > r1 && isTurnStart(p.view[i], p.o.turnStart)) }
	n := 0
	for j := 0; j < len(keep) && keep[j] < cut; {
		if !opens(keep[j]) {
			j++
			continue
		}
		// A pinned turn start: follow the run of pins that continues its
		// turn; the turn is all pinned when the run reaches the next turn.
		e := j + 1
		for e < len(keep) && keep[e] == keep[e-1]+1 && keep[e] < cut && !opens(keep[e]) {
			e++
		}
		if next := keep[e-1] + 1; next == cut || opens(next) {
			n++
		}
		j = e
	}
	return n
}

// chooseSteps, called when the latest turn alone is too large, drops the
// fewest oldest steps of it so that the rest fits; at most all but the
// newest step. Unless reasoning is loose ([looseReasoning]), the first step
// is kept when its assistant message holds reasoning: Anthropic binds the
// thinking that opened a tool loop to the loop (it rejects a final
// assistant turn that does not start with its thinking block), so the
// steps dropped are the ones after it. A kept step that ends with a nudge
// keeps the step after it too when that one holds reasoning: the nudge
// opened a loop, and that is its thinking. And when the first step of the
// final loop (after the turn's last nudge) holds reasoning and is dropped,
// the first step kept after the dropped ones opens that loop in its place,
// so it must hold reasoning too; when none can, only the steps before the
// final loop are dropped.
//
// The rules are applied again to the steps kept, as a later trim of the
// output would apply them (the first step kept after the dropped ones may
// now anchor the loop), until they drop nothing more: so the plan is the
// smallest these rules allow, and trimming it again returns it unchanged.
// When no plan reaches the target and dropping steps would not make the
// request smaller, none are dropped.
func (p *planner) chooseSteps() {
	ls, n := p.start(p.turns-1), len(p.view)
	// The opening block runs from the turn's start to its first assistant
	// message after the opening user message.
	open := ls
	for open < n && !isTurnStart(p.view[open], p.o.turnStart) {
		open++
	}
	if open == n {
		open = ls // no user message: the block is what precedes the first assistant
	}
	end := open
	for end < n && !startsStep(p.view[end]) {
		end++
	}
	p.openEnd = end
	p.steps = p.steps[:0]
	for i := end; i < n; i++ {
		if startsStep(p.view[i]) {
			p.steps = append(p.steps, i)
		}
	}
	p.gaps = p.sc.gaps[:0]
	if len(p.steps) < 2 {
		return
	}
	oldInner, innerTok := 0, 0
	for i := ls; i < end; i++ {
		if p.view[i].Kind == KindBreadcrumb {
			oldInner += p.cnt(i)
		}
	}
	switch {
	case p.o.noBreadcrumb:
		innerTok = oldInner
	case end == ls:
		// No opening message: the step breadcrumb would sit right after
		// the leading one. One notice stands at the leading position
		// instead, replacing what is there.
		oldInner = p.crumbPart(p.k)
		innerTok = p.count(p.mergedCrumb())
	default:
		innerTok = p.stepCrumbTok()
	}
	// The kept steps, as indices into p.steps; each pass drops one run of
	// them, later in the turn than the runs dropped before.
	kept := p.sc.kept[:0]
	for i := range p.steps {
		kept = append(kept, i)
	}
	st := stepState{hoist: p.hoist, hoistTok: p.hoistTok, cost: p.cost}
	crumb := innerTok - oldInner // paid once, with the first step dropped
	for st.cost > p.target || len(p.gaps) == 0 {
		keep, d := p.dropRun(kept, &st, crumb)
		if d == 0 {
			break
		}
		crumb = 0
		p.gaps = append(p.gaps, [2]int{kept[keep], kept[keep+d-1] + 1})
		p.d += d
		kept = append(kept[:keep], kept[keep+d:]...)
	}
	p.sc.kept, p.sc.gaps = kept, p.gaps
	if st.cost > p.target && st.cost >= p.cost {
		p.gaps, p.d = p.gaps[:0], 0 // dropping steps would not make the request smaller
		return
	}
	p.hoist, p.hoistTok, p.cost = st.hoist, st.hoistTok, st.cost
}

// stepState is the running state of chooseSteps: the plan's cost, the
// summary hoisted out of what is dropped, and how far the dropped messages
// and elision candidates have been accounted for.
type stepState struct{ d, hoist, hoistTok, cost, next, ci int }

// dropRun drops one run of the kept steps (indices into p.steps, the
// latest turn's steps as a later trim of the output would see them): the
// fewest after the leading ones that reasoning anchors, so that the plan
// fits (or as the final loop's reasoning requires). It returns the run as
// positions in kept, kept[keep:keep+d], with st updated; d is 0 when
// nothing can or need be dropped. crumb is added to the cost with the
// first step dropped.
func (p *planner) dropRun(kept []int, st *stepState, crumb int) (keep, d int) {
	m, n := len(kept), len(p.view)
	at := func(i int) *Message { return &p.view[p.steps[kept[i]]] }
	// nudged reports whether a nudge precedes kept step i in the output:
	// the last message of the step kept before it.
	nudged := func(i int) bool {
		e := n
		if s := kept[i-1] + 1; s < len(p.steps) {
			e = p.steps[s]
		}
		return p.view[e-1].Kind == KindNudge
	}
	bound := !p.o.looseReasoning
	if bound && hasReasoning(*at(0)) {
		keep = 1
		// A nudge that ends a kept step opens a new tool loop (the user,
		// or the runtime, spoke), and a step with reasoning after it holds
		// that loop's thinking: it stays with the nudge, and so on.
		for keep < m && nudged(keep) && hasReasoning(*at(keep)) {
			keep++
		}
	}
	if m-keep < 2 {
		return keep, 0
	}
	// The last nudge of the turn (or its opening) opened the final tool
	// loop, at kept step f. When that loop's first step holds reasoning and
	// is dropped, the first step kept after the dropped ones opens the
	// final loop instead (it follows the step breadcrumb, or a nudge that
	// ends the kept steps), so it must hold reasoning too: drop on until it
	// does, or else drop only the steps before f.
	f := m - 1
	for f > 0 && !nudged(f) {
		f--
	}
	opens := bound && hasReasoning(*at(f)) && (keep == 0 || nudged(keep))
	unopened := func(d int) bool {
		return opens && keep <= f && f < keep+d && !hasReasoning(*at(keep + d))
	}
	start := *st
	st.next = p.steps[kept[keep]]
	for st.ci < len(p.cands) && p.cands[st.ci].idx < st.next {
		st.ci++
	}
	fallback := stepState{d: -1}
	for (st.cost > p.target || unopened(d)) && keep+d < m-1 {
		if d == 0 {
			st.cost += crumb
		}
		d++
		stop := p.steps[kept[keep+d]]
		for ; st.next < stop; st.next++ {
			if _, pin := p.pinned(st.next); pin {
				continue // stays, lifted after the breadcrumb
			}
			st.cost -= p.cnt(st.next)
			if p.view[st.next].Kind == KindSummary {
				st.cost += p.cnt(st.next) - st.hoistTok // the newest dropped summary is pinned instead
				st.hoist, st.hoistTok = st.next, p.cnt(st.next)
			}
		}
		for ; st.ci < len(p.cands) && p.cands[st.ci].idx < stop; st.ci++ {
			st.cost += p.cands[st.ci].saved // already subtracted from cost: undo
		}
		if keep+d == f {
			fallback = *st // f itself is kept: it opens the loop
			fallback.d = d
		}
	}
	if unopened(d) {
		if fallback.d < 0 {
			*st = start
			return keep, 0 // no step after the dropped ones can open the final loop: drop none
		}
		d, *st = fallback.d, fallback
	}
	return keep, d
}

// stepCrumbTok returns the tokens of the step breadcrumb, counted once.
func (p *planner) stepCrumbTok() int {
	if p.stepTok < 0 {
		p.stepTok = p.count(p.o.stepBreadcrumb())
	}
	return p.stepTok
}

// count counts a message the library inserts, capped like every count.
func (p *planner) count(m Message) int {
	return min(clampCount(p.o.counter.CountMessage(m)), p.capPer)
}

// hasReasoning reports whether m holds a reasoning part.
func hasReasoning(m Message) bool {
	for i := range m.Parts {
		if m.Parts[i].Type == PartReasoning {
			return true
		}
	}
	return false
}

// startsStep reports whether m opens a step: an assistant message that is
// not a notice (a breadcrumb may have any role).
func startsStep(m Message) bool {
	return m.Role == RoleAssistant && m.Kind != KindBreadcrumb
}

// items lists the planned output: view indices in order, with
// itemTurnCrumb and itemStepCrumb where breadcrumbs go. It records the
// breadcrumbs it replaces.
func (p *planner) items() []int {
	n := len(p.view)
	cut := p.start(p.k)
	lifted := p.lift(cut)
	items := make([]int, 0, p.lead+len(lifted)+3+n-cut)
	merged := p.mergesCrumbs()
	newTurnCrumb := (p.k > 0 || merged) && !p.o.noBreadcrumb
	for i := range p.lead {
		if newTurnCrumb && p.view[i].Kind == KindBreadcrumb {
			p.replaced = append(p.replaced, i)
			continue
		}
		items = append(items, i)
	}
	// Lifted messages that a later trim reads as part of the prefix
	// (system messages and summaries) join the hoisted summary before the
	// breadcrumb, in input order, so that trimming the output again keeps
	// the same order; the others follow the breadcrumb.
	rest := lifted[:0:0]
	hoisted := p.hoist < 0
	for _, i := range lifted {
		if !isPinned(p.view[i]) {
			rest = append(rest, i)
			continue
		}
		if !hoisted && p.hoist < i {
			items, hoisted = append(items, p.hoist), true
		}
		items = append(items, i)
	}
	if !hoisted {
		items = append(items, p.hoist)
	}
	switch {
	case newTurnCrumb && merged && p.k == 0:
		items = append(items, itemStepCrumb)
	case newTurnCrumb:
		items = append(items, itemTurnCrumb)
	}
	items = append(items, rest...)
	if p.d == 0 {
		for i := cut; i < n; i++ {
			items = append(items, i)
		}
		return items
	}
	newStepCrumb := !p.o.noBreadcrumb && !merged
	for i := cut; i < p.openEnd; i++ {
		if newStepCrumb && p.view[i].Kind == KindBreadcrumb {
			p.replaced = append(p.replaced, i)
			continue
		}
		items = append(items, i)
	}
	if newStepCrumb {
		items = append(items, itemStepCrumb)
	}
	i := p.openEnd
	for _, g := range p.gaps {
		for ; i < p.steps[g[0]]; i++ {
			items = append(items, i)
		}
		i = p.steps[g[1]] // the newest step is never dropped
	}
	for ; i < n; i++ {
		items = append(items, i)
	}
	return items
}

// lift returns, ascending, the pinned messages moved out of what is
// dropped, to just after the breadcrumb: those of the dropped turns (before
// cut) and of the dropped steps. (The hoisted summary goes before the
// breadcrumb, with the prefix.)
func (p *planner) lift(cut int) []int {
	l := p.sc.lifted[:0]
	for _, i := range p.pins {
		if i < cut || p.inGap(i) {
			l = append(l, i)
		}
	}
	slices.Sort(l)
	p.sc.lifted = l
	return l
}

// inGap reports whether view index i lies in a dropped run of steps.
func (p *planner) inGap(i int) bool {
	for _, g := range p.gaps {
		if i >= p.steps[g[0]] && i < p.steps[g[1]] {
			return true
		}
	}
	return false
}

// mergesCrumbs reports that steps are dropped from a latest turn with no
// opening message, so that one breadcrumb at the leading position stands
// for both notices.
func (p *planner) mergesCrumbs() bool {
	return p.d > 0 && p.openEnd == p.start(p.k)
}

// mergedCrumb is the single notice used when mergesCrumbs: the turn
// breadcrumb if turns were dropped too, else the step breadcrumb.
func (p *planner) mergedCrumb() Message {
	if p.k > 0 {
		return p.o.breadcrumb
	}
	return p.o.stepBreadcrumb()
}

// chooseElisions returns the token count of items and the candidates to
// elide (positions in p.cands, ascending) with their positions in items:
// the oldest kept ones first, only as many as needed to reach the target.
// items is ascending except where lifted messages precede the kept turns,
// so candidates are looked up by binary search, not by a merge walk.
func (p *planner) chooseElisions(items []int) (tokens int, elide, at []int) {
	tokens = p.extra
	for _, it := range items {
		switch it {
		case itemTurnCrumb:
			tokens += p.crumbTok
		case itemStepCrumb:
			tokens += p.stepCrumbTok()
		default:
			tokens += p.cnt(it)
		}
	}
	if len(p.cands) == 0 || (tokens <= p.target && !p.c.prune) {
		return tokens, nil, nil
	}
	type hit struct{ ci, j int }
	var hits []hit
	for j, it := range items {
		if it < 0 {
			continue
		}
		ci, ok := slices.BinarySearchFunc(p.cands, it, func(c elideCand, idx int) int { return c.idx - idx })
		if ok {
			hits = append(hits, hit{ci, j})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return a.ci - b.ci })
	k := 0
	for ; k < len(hits); k++ {
		if tokens <= p.target && !p.c.prune {
			break
		}
		elide = append(elide, hits[k].ci)
		at = append(at, hits[k].j)
		tokens -= p.cands[hits[k].ci].saved
	}
	if p.o.elide.ClearArguments <= 0 {
		return tokens, elide, at
	}
	// Cleared arguments: the estimates give way to a count of each
	// changed assistant message, once.
	owners := p.sc.clear[:0]
	for e, ci := range elide {
		c := &p.cands[ci]
		tokens += c.argSaved
		owners, _ = clearCall(owners, p.view, c)
		if n := len(owners); n > 0 && owners[n-1].pos < 0 {
			owners[n-1].pos = itemPos(items, c.owner, at[e]-(c.idx-c.owner))
		}
	}
	for g := range owners {
		owners[g].count = p.count(owners[g].msg)
		tokens -= p.cnt(owners[g].idx) - owners[g].count
	}
	// Estimates that fell short (a Counter that does not count each call's
	// arguments on its own) leave the plan above its target: elide on. A
	// result whose assistant message is counted already is elided without
	// clearing its call, so that no message is counted twice more.
	for ; k < len(hits) && tokens > p.target && !p.c.prune; k++ {
		h := hits[k]
		c := &p.cands[h.ci]
		elide = append(elide, h.ci)
		at = append(at, h.j)
		tokens -= c.saved - c.argSaved
		if c.owner < 0 || (len(owners) > 0 && owners[len(owners)-1].idx == c.owner) {
			continue
		}
		owners, _ = clearCall(owners, p.view, c)
		g := &owners[len(owners)-1]
		g.pos = itemPos(items, c.owner, h.j-(c.idx-c.owner))
		g.count = p.count(g.msg)
		tokens -= p.cnt(g.idx) - g.count
	}
	p.sc.clear, p.cleared = owners, owners
	return tokens, elide, at
}

// itemPos returns the position of view index i in items, expected at
// guess (an assistant message and its results are consecutive there).
func itemPos(items []int, i, guess int) int {
	if guess >= 0 && guess < len(items) && items[guess] == i {
		return guess
	}
	return slices.Index(items, i)
}
