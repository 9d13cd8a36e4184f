// This file owns the planner's last rung (ElideOptions.Cut): when the plan
// is still over its target once every turn, step and result that may go
// is gone, the largest tool results still sent are cut to a head and tail
// digest, down to a common size, so that the request fits.

package history

import (
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

// chooseCuts cuts, when the plan of items (with the results at positions
// at elided) is over limit at tokens, the tool results of items that are
// still sent whole: each by what it has above a common level, the
// highest level that brings the plan within limit (0 when none does:
// every result is cut to its marker). limit is the size above which a
// history is trimmed (the budget, or the trigger's share of it), not the
// low-water mark: a cut loses what the agent is working on, so it is
// made to fit, never for hysteresis. It returns the tokens of the plan
// with the cuts, which it records in p.cuts.
func (p *planner) chooseCuts(items, at []int, tokens, limit int) int {
	excess := tokens - limit
	if excess <= 0 {
		return tokens
	}
	gone := make(map[int]bool, len(at))
	for _, j := range at {
		gone[j] = true
	}
	type cand struct {
		idx, at, count, bare, room int
		head, target               string
	}
	var cands []cand
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
		cands = append(cands, cand{idx: it, at: j, count: count, bare: bare, room: count - bare, head: head, target: target})
	}
	if len(cands) == 0 {
		return tokens
	}
	// The level: the largest d such that cutting every result down to its
	// marker and a digest of at most d tokens saves the excess.
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
	p.cuts = p.cuts[:0]
	for _, k := range cands {
		if k.room <= lo {
			continue // no larger than the level: sent whole
		}
		m := &p.view[k.idx]
		measure := func(d string) int { return clampCount(c.CountMessage(elided(*m, k.head+"\n"+d))) - k.bare }
		text := k.head
		if d := digest(resultText(m), k.target, lo, cutHeadTail, measure); d != "" {
			text += "\n" + d
		}
		saved := k.count - clampCount(c.CountMessage(elided(*m, text)))
		p.cuts = append(p.cuts, cutCand{idx: k.idx, at: k.at, text: text, saved: saved})
		tokens -= saved
	}
	return tokens
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
