// This file owns the planner: the count of a history (each message once,
// into a pooled buffer) and the decision of what a trim keeps, in three
// rungs: drop the oldest whole turns, then the oldest steps of the latest
// turn, and elide tool results wherever that saves dropping. It reads the
// options value; it never materialises messages (trim.go does).

package history

import (
	"math"
	"slices"
	"sync"
)

// scratch holds per-call working memory, pooled so that steady-state trims
// allocate only their output.
type scratch struct {
	counts []int // token count of each message of the view
	starts []int // view index of the first message of each turn
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// tally is the count of a view: every message counted once.
type tally struct {
	counts    []int // per view message, capped at capPer
	starts    []int // first view index of each turn (see appendTurnStarts)
	lead      int   // end of the leading block
	total     int   // sum of counts
	pinnedTok int   // tokens of the pinned prefix (system messages, summaries)
	crumbTok  int   // tokens of the breadcrumbs in the leading block
	capPer    int   // the cap on one message's count
	capped    bool  // some message's count reached capPer
}

// countView counts every message of view once (using o.memo for messages of
// msgs the caller already counted) and finds its turns. index maps view
// positions to msgs (nil: identity).
//
// Counts are clamped to [0, capPer] with capPer = MaxInt/(len(view)+4), so
// that no sum the planner forms (the view, a breadcrumb, a hoisted summary)
// can wrap: a Counter that returns a negative count is read as 0, and one
// that returns more than capPer is read as capPer, which the caller then
// treats as larger than any budget (see trimToBudget).
func countView(sc *scratch, view []Message, index []int, o *options) tally {
	n := len(view)
	if cap(sc.counts) < n {
		sc.counts = make([]int, n)
	}
	t := tally{counts: sc.counts[:n], lead: leadEnd(view), capPer: math.MaxInt / (n + 4)}
	for i := range view {
		// mi is the message's index in msgs. The memo is keyed by it even
		// for a message the sweep stripped: the Trimmer's check and its
		// fresh trim sweep the same exchanges (a kept turn starts at a
		// turn start, which closes every exchange before it), so they
		// strip the same calls.
		mi := i
		if index != nil {
			mi = index[i]
		}
		c := -1
		if mi >= 0 && mi < len(o.memo) {
			c = o.memo[mi]
		}
		if c < 0 {
			c = clampCount(o.counter.CountMessage(view[i]))
			if mi >= 0 && mi < len(o.record) {
				o.record[mi] = c
			}
		}
		if c >= t.capPer {
			c, t.capped = t.capPer, true
		}
		t.counts[i] = c
		t.total += c
		switch {
		case i >= t.lead:
		case view[i].Kind == KindBreadcrumb:
			t.crumbTok += c
		default:
			t.pinnedTok += c
		}
	}
	sc.starts = appendTurnStarts(sc.starts[:0], view, t.lead, o.turnStart)
	t.starts = sc.starts
	return t
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
	view   []Message
	counts []int
	starts []int // first view index of each turn
	lead   int   // end of the leading block (prefix and breadcrumbs)
	o      *options
	cands  []elideCand // elision candidates, ascending index

	target, total          int
	pinnedTok, oldCrumbTok int // prefix tokens; tokens of breadcrumbs in the leading block
	crumbTok               int // tokens of the turn breadcrumb a trim leaves
	stepTok                int // tokens of the step breadcrumb, -1 until counted
	capPer                 int // the cap on one message's count

	k        int // turns dropped
	hoist    int // view index of the newest summary in what is dropped, or -1
	hoistTok int
	cost     int // tokens of the planned output with every kept candidate elided

	// Step level, when the latest turn alone is too large.
	d        int   // steps dropped
	openEnd  int   // end of the latest turn's opening block
	steps    []int // first view index of each step of the latest turn
	replaced []int // view indices of breadcrumbs replaced by new ones
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
// latest.
func (p *planner) chooseTurns() {
	saved := 0
	for _, c := range p.cands {
		saved += c.saved
	}
	body := p.total - p.pinnedTok - p.oldCrumbTok
	next, ci := p.lead, 0
	hoist, hoistTok := -1, 0
	k := 0
	cost := p.pinnedTok + p.oldCrumbTok + body - saved
	for cost > p.target && k < len(p.starts)-1 {
		k++
		end := p.starts[k]
		for ; next < end; next++ {
			body -= p.counts[next]
			if p.view[next].Kind == KindSummary {
				hoist, hoistTok = next, p.counts[next]
			}
		}
		for ; ci < len(p.cands) && p.cands[ci].idx < end; ci++ {
			saved -= p.cands[ci].saved
		}
		cost = p.pinnedTok + hoistTok + p.crumbPart(k) + body - saved
	}
	p.k, p.hoist, p.hoistTok, p.cost = k, hoist, hoistTok, cost
}

// chooseSteps, called when the latest turn alone is too large, drops the
// fewest oldest steps of it so that the rest fits; at most all but the
// newest step.
func (p *planner) chooseSteps() {
	ls, n := p.starts[len(p.starts)-1], len(p.view)
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
	if len(p.steps) < 2 {
		return
	}
	oldInner, innerTok := 0, 0
	for i := ls; i < end; i++ {
		if p.view[i].Kind == KindBreadcrumb {
			oldInner += p.counts[i]
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
	// cost is the plan with no step dropped; drop steps until it fits.
	cost := p.cost
	hoist, hoistTok := p.hoist, p.hoistTok
	next, ci := end, 0
	for ci < len(p.cands) && p.cands[ci].idx < end {
		ci++
	}
	d := 0
	for cost > p.target && d < len(p.steps)-1 {
		if d == 0 {
			cost += innerTok - oldInner
		}
		d++
		stop := p.steps[d]
		for ; next < stop; next++ {
			cost -= p.counts[next]
			if p.view[next].Kind == KindSummary {
				cost += p.counts[next] - hoistTok // the newest dropped summary is pinned instead
				hoist, hoistTok = next, p.counts[next]
			}
		}
		for ; ci < len(p.cands) && p.cands[ci].idx < stop; ci++ {
			cost += p.cands[ci].saved // already subtracted from cost: undo
		}
	}
	p.d, p.hoist, p.hoistTok, p.cost = d, hoist, hoistTok, cost
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
	cut := p.starts[p.k]
	items := make([]int, 0, p.lead+3+n-cut)
	merged := p.mergesCrumbs()
	newTurnCrumb := (p.k > 0 || merged) && !p.o.noBreadcrumb
	for i := range p.lead {
		if newTurnCrumb && p.view[i].Kind == KindBreadcrumb {
			p.replaced = append(p.replaced, i)
			continue
		}
		items = append(items, i)
	}
	if p.hoist >= 0 {
		items = append(items, p.hoist)
	}
	switch {
	case newTurnCrumb && merged && p.k == 0:
		items = append(items, itemStepCrumb)
	case newTurnCrumb:
		items = append(items, itemTurnCrumb)
	}
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
	for i := p.steps[p.d]; i < n; i++ {
		items = append(items, i)
	}
	return items
}

// mergesCrumbs reports that steps are dropped from a latest turn with no
// opening message, so that one breadcrumb at the leading position stands
// for both notices.
func (p *planner) mergesCrumbs() bool {
	return p.d > 0 && p.openEnd == p.starts[p.k]
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
// items is ascending except where a hoisted summary precedes the kept turns,
// so candidates are looked up by binary search, not by a merge walk.
func (p *planner) chooseElisions(items []int) (tokens int, elide, at []int) {
	for _, it := range items {
		switch it {
		case itemTurnCrumb:
			tokens += p.crumbTok
		case itemStepCrumb:
			tokens += p.stepCrumbTok()
		default:
			tokens += p.counts[it]
		}
	}
	if len(p.cands) == 0 || tokens <= p.target {
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
	for _, h := range hits {
		if tokens <= p.target {
			break
		}
		elide = append(elide, h.ci)
		at = append(at, h.j)
		tokens -= p.cands[h.ci].saved
	}
	return tokens, elide, at
}
