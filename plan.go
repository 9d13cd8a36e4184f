// This file owns the planner's state and the structure it works with: the
// pooled scratch, the turns and summaries found in one pass, the lazy
// validation and orphan check of what the planner reads (prepare), pins,
// and the owner of a tool result. The planner decides what a trim keeps in
// three rungs (plan_turns.go, plan_steps.go, plan_elide.go) from counts
// made once (plan_count.go); it reads the options and the call, and never
// materialises messages (result.go does).

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
	sys    []int // system messages after the prefix, ascending (see scanTurns)
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
	sc.sys = sc.plan.sys[:0]
	sc.pins = sc.plan.pins[:0]
	sc.fast = sc.fast[:0]
	sc.plan = planner{}
	sc.call = call{}
	clear(sc.cands)
	clear(sc.clear[:cap(sc.clear)]) // the cut rung may have appended past its length
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
	p.starts, p.sums, p.sys, p.compact = scanTurns(sc.starts[:0], sc.sums[:0], sc.sys[:0], view, p.lead, o.turnStart)
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
	if i := p.misjudged(); i >= 0 {
		if at, found := slices.BinarySearch(p.pins, i); !found {
			p.pins = slices.Insert(p.pins, at, i)
		}
	}
	sc.pinCnt = sc.pinCnt[:0]
	for range p.pins {
		sc.pinCnt = append(sc.pinCnt, -1)
	}
	return p
}

// scanTurns appends to starts the first message of each turn of msgs
// after the prefix ending at lead (see appendTurnStarts), to sums every
// summary and to sys every system message (of no Kind) after the prefix,
// all ascending, and finds the latest compaction after the prefix (-1:
// none): the one pass over the whole history a trim makes, reading roles
// and kinds only.
func scanTurns(starts, sums, sys []int, msgs []Message, lead int, rule func(Message) bool) (_, _, _ []int, compact int) {
	compact = -1
	if lead >= len(msgs) {
		return starts, sums, sys, compact
	}
	starts = append(starts, lead)
	opened := isTurnStart(msgs[lead], rule)
	for i := lead + 1; i < len(msgs); i++ {
		m := &msgs[i]
		if m.Kind != "" {
			switch m.Kind {
			case KindSummary:
				sums = append(sums, i)
			case KindCompaction:
				compact = i
			}
			continue
		}
		if m.Role == RoleSystem {
			sys = append(sys, i)
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
	return starts, sums, sys, compact
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
	swept  []int     // the orphan sweep's index alone (nil: it removed nothing)
	n      int       // len(view)
	turns  int       // number of turns
	starts []int     // the first message of each turn, oldest first (see start)
	sums   []int     // summaries after the prefix, ascending
	sys    []int     // system messages (of no Kind) after the prefix, ascending
	// compact is the view index of the latest compaction after the prefix,
	// -1 when none: the provider reads nothing before it.
	compact int
	lead    int // end of the leading block (prefix and breadcrumbs)
	o       *options
	c       *call
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

	cuts []cutCand // the results the last rung cuts (ElideOptions.Cut)
}

// droppedInstructions counts the system messages after the prefix that the
// plan drops: in the dropped turns or steps, and not pinned (a pinned one
// is lifted).
func (p *planner) droppedInstructions() int {
	n := 0
	cut := p.start(p.k)
	for _, i := range p.sys {
		if _, pin := p.pinned(i); pin {
			continue
		}
		if i < cut || p.inGap(i) {
			n++
		}
	}
	return n
}

// misjudged returns the view index of the latest user message of the
// latest turn when the turn rule ([WithTurnStart]) took it for one the
// runtime injected, or -1. A rule reads forms, and a user may write a
// request that looks like one ("[Tool result ..."): whatever the rule
// says, the latest message in the user role is never dropped with the
// steps around it, so it is pinned as [WithPin] pins (lifted after the
// step breadcrumb when its step goes). It reads roles and kinds of the
// latest turn only, which every trim sends.
func (p *planner) misjudged() int {
	if p.o.turnStart == nil || p.turns == 0 {
		return -1
	}
	ls := p.starts[p.turns-1]
	for i := p.n - 1; i > ls; i-- {
		if m := &p.view[i]; m.Role == RoleUser && m.Kind == "" {
			return i // after the turn's start: the rule rejected it
		}
	}
	return -1
}
