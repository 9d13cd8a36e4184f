// This file owns the planner's count of a history: newest first, turn by
// turn, each message at most once and only as far as the decision needs,
// with the elision candidates found on the way.

package history

import "slices"

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
				if cand, ok := evalCandidate(&p.view[i], i, c, p.ownLo, calls, o.elide, o.counter); ok {
					if w := p.clearOwner(i); w >= 0 {
						p.ac.clearing(&cand, p.view, w, calls, p.view[i].ToolCallID, o.elide, o.counter, p.capPer)
					}
					p.sc.cands = append(p.sc.cands, cand)
					e -= cand.saved
				} else if o.elide.ClearArguments > 0 {
					if cand, ok := p.ac.argsOnly(&p.view[i], i, p.view, p.clearOwner(i), calls, o.elide, o.counter, p.capPer); ok {
						p.sc.cands = append(p.sc.cands, cand)
						e -= cand.saved
					}
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
