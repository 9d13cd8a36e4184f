// This file owns the planner's first rung: which whole turns go, the
// pinned messages lifted out of them, and the planned output with its
// breadcrumbs (items).

package history

import "slices"

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
	k := max(p.kmin, p.minTurn())
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
	// a turn no larger than the breadcrumb that replaces it would not
	// shrink the request.
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
	// Among plans of the same size, the one that drops fewest: a turn
	// that costs as much as its breadcrumb is not worth losing.
	if cost > p.target && best.cost <= cost {
		k, hoist, hoistTok, pinDrop, cost = best.k, best.hoist, best.hoistTok, best.pinDrop, best.cost
	}
	// A dropped turn whose every message is pinned (or is the hoisted
	// summary) is kept in effect: dropping it lifts it straight back. When
	// every dropped turn is such a turn, nothing is dropped (and no
	// breadcrumb is placed).
	if k > 0 && len(p.pins) > 0 && p.minTurn() == 0 {
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
	// A user message lifted out of dropped steps (a misjudged request, a
	// pin) follows the step breadcrumb, where the user wrote it: the
	// model reads it after the turn's opening, and a later trim reads it
	// as part of the opening block, so the output trims to itself. Other
	// lifted messages precede the turn, which a later trim keeps as they
	// are.
	var stepped []int
	hoisted := p.hoist < 0
	for _, i := range lifted {
		if !isPinned(p.view[i]) {
			if i >= cut && p.d > 0 && !merged && p.view[i].Role == RoleUser {
				stepped = append(stepped, i)
			} else {
				rest = append(rest, i)
			}
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
	items = append(items, stepped...)
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

// minTurn returns the number of oldest turns the call requires dropped
// (call.minCut: a background summary covers them), at most all but the
// latest.
func (p *planner) minTurn() int {
	if p.c.minCut <= 0 || p.turns == 0 {
		return 0
	}
	v := p.c.minCut
	if p.index != nil {
		v, _ = slices.BinarySearch(p.index, v)
	}
	k, _ := slices.BinarySearch(p.starts, v)
	return min(k, p.turns-1)
}
