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
	tokens = p.itemTokens(items)
	if len(p.cands) == 0 || (tokens <= p.target && !p.c.prune) {
		return tokens, nil, nil
	}
	mt := &mentions{msgs: p.view, from: p.cands[0].idx}
	hits := p.elisionOrder(items, tokens, mt)
	k := 0
	for ; k < len(hits); k++ {
		if tokens <= p.target && !p.c.prune {
			break
		}
		c := &p.cands[hits[k].ci]
		c.finish(p.view, p.o.counter, mt)
		elide = append(elide, hits[k].ci)
		at = append(at, hits[k].j)
		tokens -= c.saved
	}
	if e := p.o.elide; e.Cut && !p.c.prune && k > 0 && tokens < p.target {
		// The result whose elision brought the plan within the target is
		// cut instead, to a digest that fills the room left.
		tokens = p.cands[hits[k-1].ci].cutTo(p.view, p.o.counter, p.target-tokens, tokens, e.Store != nil, mt)
	}
	sortPairs(elide, at)
	if p.o.elide.ClearArguments <= 0 {
		return p.stripDigests(elide, tokens), elide, at
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
		c.finish(p.view, p.o.counter, mt)
		elide = append(elide, h.ci)
		at = append(at, h.j)
		tokens -= c.saved - c.argSaved
		if c.owner < 0 || slices.ContainsFunc(owners, func(g clearedOwner) bool { return g.idx == c.owner }) {
			continue
		}
		owners, _ = clearCall(owners, p.view, c)
		g := &owners[len(owners)-1]
		g.pos = itemPos(items, c.owner, h.j-(c.idx-c.owner))
		g.count = p.count(g.msg)
		tokens -= p.cnt(g.idx) - g.count
	}
	p.sc.clear, p.cleared = owners, owners
	sortPairs(elide, at)
	return p.stripDigests(elide, tokens), elide, at
}

// itemTokens returns the tokens of the planned items, the overhead
// included.
func (p *planner) itemTokens(items []int) int {
	tokens := p.extra
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
	return tokens
}

// elideHit is an elision candidate among the planned items: its position
// in p.cands and in items.
type elideHit struct{ ci, j int }

// elisionOrder returns the candidates among items (the plan at tokens) in
// the order they are elided: oldest first, or, when a subset will do,
// superseded results first, then the tools that go first, each oldest
// first (see ranks).
func (p *planner) elisionOrder(items []int, tokens int, mt *mentions) []elideHit {
	var hits []elideHit
	for j, it := range items {
		if it < 0 {
			continue
		}
		ci, ok := slices.BinarySearchFunc(p.cands, it, func(c elideCand, idx int) int { return c.idx - idx })
		if ok {
			hits = append(hits, elideHit{ci, j})
		}
	}
	slices.SortFunc(hits, func(a, b elideHit) int { return a.ci - b.ci })
	if !p.c.prune {
		all := 0
		for _, h := range hits {
			all += p.cands[h.ci].saved
		}
		if tokens-all < p.target {
			ranks := p.ranks(items, mt)
			slices.SortStableFunc(hits, func(a, b elideHit) int { return ranks[a.ci] - ranks[b.ci] })
		}
	}
	return hits
}

// stripDigests removes the digests of the results of elide, oldest first,
// while the plan at tokens is over the target, and returns the plan's
// tokens. The plan counted each digest at its largest (see evalCandidate),
// so this happens only where eliding every result is not enough: then
// digests give way before anything else.
func (p *planner) stripDigests(elide []int, tokens int) int {
	for _, ci := range elide {
		if tokens <= p.target {
			break
		}
		tokens -= p.cands[ci].strip()
	}
	return tokens
}

// sortPairs sorts elide ascending (the candidates' order, oldest first)
// and at with it.
func sortPairs(elide, at []int) {
	if slices.IsSorted(elide) {
		return
	}
	idx := make([]int, len(elide))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return elide[a] - elide[b] })
	e, a := slices.Clone(elide), slices.Clone(at)
	for i, j := range idx {
		elide[i], at[i] = e[j], a[j]
	}
}

// Ranks of elision candidates: lower goes first.
const (
	rankSuperseded = iota // shown again later, or outdated
	rankFirst             // a tool whose ToolPolicy says First
	rankArgs              // under WithTask: a call's arguments alone (see unmentioned)
	rankUnused            // under WithTask: nothing later mentions it
	rankOther
)

// ranks returns the rank of every candidate of p.cands, given the planned
// output items. A result is superseded when a later call in items makes
// the same call again (its result is the current one), when it is the
// result of a write or an edit (it shows, or acknowledges, what the model
// wrote in the call's arguments), or when it is a read of a file that a
// later call in items reads again whole (or with the same arguments) or
// writes whole. An edit of part of a file leaves the rest of an earlier
// read current: it supersedes nothing. Then come the tools whose
// ToolPolicy says First, then, under the task preset, the arguments of old
// calls cleared alone and the results no later message went on to use (see
// unmentioned).
func (p *planner) ranks(items []int, mt *mentions) []int {
	ranks := make([]int, len(p.cands))
	type touch struct {
		at      int    // view index of a later call that rereads or rewrites the path
		args    string // a read's name and arguments, when it reads part of the file
		partial bool
	}
	paths := map[string][]touch{}
	again := map[string]int{} // name and arguments -> view index of the last call in items that makes that call
	for _, it := range items {
		if it < 0 || p.view[it].Role != RoleAssistant {
			continue
		}
		for _, tc := range p.view[it].ToolCalls {
			again[tc.Name+"\x00"+tc.Arguments] = it
			path := callPath(tc.Arguments)
			if path == "" {
				continue
			}
			switch {
			case rewritesFile(tc.Name, tc.Arguments):
				paths[path] = append(paths[path], touch{at: it})
			case readsFile(tc.Name, tc.Arguments):
				paths[path] = append(paths[path], touch{at: it, args: tc.Name + "\x00" + tc.Arguments, partial: readsPart(tc.Arguments)})
			}
		}
	}
	unused := p.unmentioned(mt)
	for ci := range p.cands {
		c := &p.cands[ci]
		ranks[ci] = rankOther
		if unused != nil {
			ranks[ci] = unused[ci]
		}
		if p.o.elide.tool(c.name).First {
			ranks[ci] = rankFirst
		}
		if c.from < 0 || c.argsOnly {
			continue
		}
		tc := &p.view[c.from].ToolCalls[c.fromCall]
		self := tc.Name + "\x00" + tc.Arguments
		if again[self] > c.from || writesFile(tc.Name, tc.Arguments) {
			ranks[ci] = rankSuperseded
			continue
		}
		if !readsFile(tc.Name, tc.Arguments) {
			continue
		}
		for _, t := range paths[callPath(tc.Arguments)] {
			if t.at > c.from && (!t.partial || t.args == self) {
				ranks[ci] = rankSuperseded
				break
			}
		}
	}
	return ranks
}

// itemPos returns the position of view index i in items, expected at
// guess (an assistant message and its results are consecutive there).
func itemPos(items []int, i, guess int) int {
	if guess >= 0 && guess < len(items) && items[guess] == i {
		return guess
	}
	return slices.Index(items, i)
}
