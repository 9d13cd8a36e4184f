// This file owns the planner's elision rung: which tool results of the
// planned output are elided (and their calls' arguments cleared) to reach
// the target.

package history

import "slices"

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
