// This file owns the planner's last rung (ElideOptions.Cut): when the plan
// is still over its target once every turn, step and result that may go
// is gone, the largest tool results still sent are cut to a head and tail
// digest, down to a common size, so that the request fits.

package history

import (
	"slices"
	"strconv"
	"strings"
)

// cutCand is a tool result the plan cuts: its view index, its position
// in the planned output, the text that replaces it, and its exact saving.
type cutCand struct {
	idx, at int
	text    string
	saved   int
}

// chooseCuts cuts, when the plan of items (with the candidates elide
// chosen, at positions at) is over limit at tokens, the tool results of items that are
// still sent whole: each by what it has above a common level, the
// highest level that brings the plan within limit (0 when none does:
// every result is cut to its marker). limit is the budget itself, not the
// low-water mark or the trigger: a cut loses what the agent is working
// on, so it is made to fit, never for hysteresis (a latest turn between
// the trigger and the budget is sent as it is). It returns the tokens of
// the plan with the cuts, which it records in p.cuts.
func (p *planner) chooseCuts(items, elide, at []int, tokens, limit int) (after int) {
	excess := tokens - limit
	if excess <= 0 {
		return tokens
	}
	defer func() {
		if after > limit {
			after = p.clearCalls(items, after, limit)
		}
	}()
	cands := p.cutCandidates(items, elide, at)
	if len(cands) == 0 {
		return tokens
	}
	lo := cutLevel(cands, excess)
	c := p.o.counter
	p.cuts = p.cuts[:0]
	for _, k := range cands {
		if k.room <= lo {
			continue // no larger than the level: sent whole
		}
		m := &p.view[k.idx]
		measure := func(d string) int { return clampCount(c.CountMessage(elided(*m, k.head+"\n"+d))) - k.bare }
		text := k.head
		if d := digest(resultText(m), k.target, lo, cutHeadTail, measure, nil); d != "" {
			text += "\n" + d
		}
		saved := k.count - clampCount(c.CountMessage(elided(*m, text)))
		p.cuts = append(p.cuts, cutCand{idx: k.idx, at: k.at, text: text, saved: saved})
		tokens -= saved
	}
	return tokens
}

// cutResult is a tool result still sent whole that the cut rung may cut:
// its index and position in the plan, its tokens, those of its marker
// alone and the difference (room), the marker and the call's target.
type cutResult struct {
	idx, at, count, bare, room int
	head, target               string
}

// cutCandidates returns the tool results of items that are still sent
// whole (not among the candidates elide chosen, at positions at) and
// would shrink if cut to their marker.
func (p *planner) cutCandidates(items, elide, at []int) []cutResult {
	gone := make(map[int]bool, len(at)) // positions of the results elided
	for e, j := range at {
		if !p.cands[elide[e]].argsOnly {
			gone[j] = true
		}
	}
	var cands []cutResult
	c := p.o.counter
	for j, it := range items {
		if it < 0 || gone[j] {
			continue
		}
		m := &p.view[it]
		if m.Role != RoleTool || m.Kind == KindElided {
			continue
		}
		calls := p.owner(it)
		name := toolName(m, calls)
		count := p.cnt(it)
		head := cutMarker(*m, name, count, p.o.elide.Store != nil)
		bare := clampCount(c.CountMessage(elided(*m, head)))
		if count-bare <= 0 {
			continue
		}
		target := ""
		if k := calls.find(m.ToolCallID); k >= 0 && p.ownLo >= 0 {
			target = callTarget(p.view[p.ownLo].ToolCalls[k].Arguments)
		}
		cands = append(cands, cutResult{idx: it, at: j, count: count, bare: bare, room: count - bare, head: head, target: target})
	}
	return cands
}

// cutLevel returns the level of a cut: the largest d such that cutting
// every result of cands down to its marker and a digest of at most d
// tokens saves excess (0 when none does).
func cutLevel(cands []cutResult, excess int) int {
	saves := func(d int) int {
		s := 0
		for _, k := range cands {
			s += max(k.room-d, 0)
		}
		return s
	}
	lo, hi := 0, 0
	for _, k := range cands {
		hi = max(hi, k.room)
	}
	if saves(0) < excess {
		hi = 0
	}
	for lo < hi { // saves(lo) >= excess, or lo is 0
		mid := (lo + hi + 1) / 2
		if saves(mid) >= excess {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// cutPrefix starts the text of every cut result.
const cutPrefix = "[cut tool result"

// cutMarker returns the first line of the text that replaces cut result
// m: the tool, the tokens it had, and how to get the rest.
func cutMarker(m Message, name string, tokens int, store bool) string {
	if store {
		h := ElisionHandle(m)
		return cutPrefix + " " + h + ": " + name + ", " + strconv.Itoa(tokens) + " tokens cut to fit the context window; head, tail and key lines below; call " +
			RecallToolName + " with id " + h + " for all of it]"
	}
	return cutPrefix + ": " + name + ", " + strconv.Itoa(tokens) + " tokens cut to fit the context window; head, tail and key lines below; re-run the tool for the rest]"
}

// cutCount counts the cut results among the replacement texts of a
// remembered plan (see trimState.elided).
func cutCount(texts map[int]string) int {
	n := 0
	for _, t := range texts {
		if strings.HasPrefix(t, cutPrefix) {
			n++
		}
	}
	return n
}

// clearCalls clears, when cutting every result is not enough to bring the
// plan of items within limit, the arguments of the calls the plan still
// sends whole (the newest step's too), largest first, until it fits:
// each call's Arguments become the object ClearArguments leaves
// ({"elided":"[arguments elided: N tokens]"}), its ID and Name kept, so
// pairing is untouched. An assistant message that holds reasoning is
// never changed. It returns the plan's tokens; the copies join p.cleared.
func (p *planner) clearCalls(items []int, tokens, limit int) int {
	type call struct{ at, it, k, saved int }
	var calls []call
	c := p.o.counter
	var ac argCounter
	for j, it := range items {
		if it < 0 || p.view[it].Role != RoleAssistant || len(p.view[it].ToolCalls) == 0 || hasReasoning(p.view[it]) {
			continue
		}
		m := &p.view[it]
		for k := range m.ToolCalls {
			args := m.ToolCalls[k].Arguments
			if isClearedArguments(args) || p.clearedAlready(it, k) {
				continue
			}
			cost := ac.text(c, args, &ac.empty, &ac.set)
			if saved := cost - ac.text(c, clearedArguments(cost), &ac.empty, &ac.set); saved > 0 {
				calls = append(calls, call{at: j, it: it, k: k, saved: saved})
			}
		}
	}
	slices.SortStableFunc(calls, func(a, b call) int { return b.saved - a.saved })
	for _, cl := range calls {
		if tokens <= limit {
			break
		}
		g := p.clearedCopy(cl.it, cl.at)
		tc := &g.msg.ToolCalls[cl.k]
		tc.Arguments = clearedArguments(ac.text(c, tc.Arguments, &ac.empty, &ac.set))
		n := p.count(g.msg)
		tokens -= g.count - n
		g.count = n
	}
	return tokens
}

// clearedAlready reports whether the plan cleared the k-th call of the
// assistant message at view index it (ClearArguments).
func (p *planner) clearedAlready(it, k int) bool {
	for _, g := range p.cleared {
		if g.idx == it {
			return isClearedArguments(g.msg.ToolCalls[k].Arguments)
		}
	}
	return false
}

// clearedCopy returns the plan's changed copy of the assistant message at
// view index it (position at in items), made on first use.
func (p *planner) clearedCopy(it, at int) *clearedOwner {
	for i := range p.cleared {
		if p.cleared[i].idx == it {
			return &p.cleared[i]
		}
	}
	m := p.view[it]
	m.ToolCalls = slices.Clone(m.ToolCalls)
	p.cleared = append(p.cleared, clearedOwner{idx: it, msg: m, pos: at, count: p.cnt(it)})
	return &p.cleared[len(p.cleared)-1]
}
