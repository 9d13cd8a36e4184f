// This file owns what the task preset chooses by what later messages
// mention: the steps of the latest turn that go at a maintenance point, and
// the results elided first. Those whose results no later message went on to
// use go first, oldest first, before any whose results it did.

package history

// chooseSalient is chooseSteps' choice under the task preset: it drops the
// steps of the latest turn (never the newest) whose results no later
// message mentions, oldest first, and then, only if the plan still does not
// fit, those whose results a later message does, oldest first. What a
// step's results show and a later message of the history given mentions (a
// path, an identifier, an id: see mentions) is what the agent went on to
// use, and is likely used again; a word that a later result shows again
// gives no credit (that result is the current one). Only the history given
// is read, so a Trimmer's prompt changes only where it plans afresh.
//
// It applies where a trim aims below its budget (a low-water mark or a
// trigger: a Trimmer's maintenance point, whose plan serves the requests
// until the next one), when no step's reasoning is bound to its loop (see
// chooseSteps) and no summary stands among the steps, and reports whether
// it chose: otherwise, or when no choice fits the target, chooseSteps drops
// the oldest steps. (A trim that plans every request afresh up to its
// budget drops few steps, and the oldest: there, the choice kept 0.5 to 1
// point fewer of the references of the corpus at a quarter of each
// session's peak.) crumb is what the step breadcrumb adds to the cost.
func (p *planner) chooseSalient(crumb int) bool {
	m := len(p.steps)
	if !p.o.byMention || m < 2 || p.target >= p.cmpBudget {
		return false
	}
	for _, s := range p.sums {
		if s >= p.openEnd {
			return false
		}
	}
	if !p.o.looseReasoning {
		for _, i := range p.steps {
			if hasReasoning(p.view[i]) {
				return false
			}
		}
	}
	saved, used := p.stepValues()
	cost := p.cost + crumb
	drop := make([]bool, m-1)
	for _, u := range []bool{false, true} {
		for s := 0; s < m-1 && cost > p.target; s++ {
			if used[s] == u {
				drop[s] = true
				cost -= saved[s]
			}
		}
	}
	if cost > p.target {
		return false
	}
	for s := 0; s < m-1; s++ {
		if !drop[s] {
			continue
		}
		e := s
		for e < m-1 && drop[e] {
			e++
		}
		p.gaps = append(p.gaps, [2]int{s, e})
		p.d += e - s
		s = e
	}
	p.sc.gaps = p.gaps
	p.cost = cost
	return true
}

// stepValues returns, for each step of the latest turn but the newest, what
// dropping it saves from the plan's cost (its messages but the pinned ones,
// less what eliding its candidates already saved), and whether a later
// message mentions a salient word its results show (see laterOf).
func (p *planner) stepValues() (saved []int, used []bool) {
	m := len(p.steps)
	saved, used = make([]int, m-1), make([]bool, m-1)
	mt := &mentions{msgs: p.view, from: p.steps[0]}
	ci := 0
	for ci < len(p.cands) && p.cands[ci].idx < p.steps[0] {
		ci++
	}
	for s := range m - 1 {
		lo, hi := p.steps[s], p.steps[s+1]
		for i := lo; i < hi; i++ {
			if _, pin := p.pinned(i); pin {
				continue // stays, lifted after the breadcrumb
			}
			saved[s] += p.cnt(i)
			if !used[s] && p.view[i].Role == RoleTool && p.view[i].Kind != KindElided {
				used[s] = mentioned(p.view, i, mt)
			}
		}
		for ; ci < len(p.cands) && p.cands[ci].idx < hi; ci++ {
			saved[s] -= p.cands[ci].saved // already subtracted from the cost
		}
	}
	return saved, used
}

// unmentioned returns, under the task preset, the rank of each elision
// candidate (by position in p.cands) before superseded results and tools
// that go first are ranked: rankArgs for the arguments of an old call
// cleared alone, rankUnused for a result that shows no salient word a later
// message mentions, rankOther for the others. The KeepRecent newest
// candidates (after the KeepRecent results never elided) rank as used, a
// result just read having had no time to be mentioned. What the agent used
// it is likely to use again, and the digest of a result elided keeps what it
// used. mt indexes the view from the oldest candidate on. nil otherwise.
func (p *planner) unmentioned(mt *mentions) []int {
	if !p.o.byMention || len(p.cands) == 0 {
		return nil
	}
	e := p.o.elide
	fresh := max(e.KeepRecent, 0)
	if e.KeepRecent == 0 {
		fresh = DefaultKeepRecent
	}
	out := make([]int, len(p.cands))
	for ci := range p.cands {
		c := &p.cands[ci]
		switch {
		case c.argsOnly:
			out[ci] = rankArgs
		case ci < len(p.cands)-fresh && !mentioned(p.view, c.idx, mt):
			out[ci] = rankUnused
		default:
			out[ci] = rankOther
		}
	}
	return out
}

// mentioned reports whether a message after view index i mentions a salient
// word that the tool result at i shows (and no later result shows again:
// see laterOf).
func mentioned(view []Message, i int, mt *mentions) bool {
	later, used := mt.after(i), false
	salientWords(resultText(&view[i]), func(w string) { used = used || laterOf(w, later) > 0 })
	return used
}
