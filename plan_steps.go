// This file owns the planner's second rung: which steps of the latest turn
// go when that turn alone is too large, under each provider's rule for the
// reasoning that opened a tool loop.

package history

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
// so it must hold reasoning too; when the plan cannot fit, the steps
// dropped are the most after which a step with reasoning opens the loop
// (at least those before it).
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
	crumb := innerTok - oldInner // paid once, with the first step dropped
	if p.chooseSalient(crumb) {
		p.sc.kept = kept
		return
	}
	st := stepState{hoist: p.hoist, hoistTok: p.hoistTok, cost: p.cost}
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
	// does, or else drop the longest run after which the step kept does
	// (the steps before f at least).
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
	// fallback is the longest run dropped so far that leaves the final
	// loop opened by reasoning: what is dropped when dropping on ends with
	// it unopened, the smallest plan the rule allows (not only the one
	// that keeps f itself, which may be larger than another that fits).
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
		if !unopened(d) {
			fallback = *st // the step kept after the run opens the loop
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
