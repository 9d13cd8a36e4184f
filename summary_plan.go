// This file owns a summary at a maintenance point: what it covers, the
// Summarizer's call (bounded, timed, recovered), where the summary goes in
// the prompt, and the plan that makes room for it.

package history

import (
	"context"
	"errors"
	"slices"
	"strconv"
)

// summarize puts a summary in a fresh trim res of msgs that dropped whole
// turns, the first kept one starting at cut: in place of the turn
// breadcrumb when it covers everything dropped, before the breadcrumb when
// it covers only the older part (a background summary started before the
// last turns went; they are covered next time). reserve is what the trim
// reserved for it (counted in res as overhead). The summary is written now
// by the Summarizer, or, in background mode, is the one ready (ready) or
// the previous one while the next is written. It returns the outcome for
// the Event and the summary state to remember.
func summarize(ctx context.Context, msgs []Message, res *Result, cut, reserve, budget int, o *options, c *call, prev summaryState, ready *bgJob) (string, summaryState) {
	// The trim reserved room for the summary; whatever happens, it is not
	// part of the request.
	res.TokensAfter -= reserve
	if res.TokensBefore >= 0 {
		res.TokensBefore -= reserve
	}
	var sum Message
	var next summaryState
	status := SummaryWritten
	switch {
	case ready != nil:
		sum, next = *ready.next.msg, ready.next
	case o.summarizer.opts.Background:
		// Never wait: the previous summary stands while the next is
		// written, and the breadcrumb for what it does not cover.
		if prev.msg == nil || prev.upTo > cut {
			return SummaryPending, summaryState{}
		}
		sum, next, status = *prev.msg, prev, SummaryPending
	default:
		dropped, previous, cover := coverage(msgs, res.Kept, cut, o, prev)
		var st string
		if sum, st = write(ctx, o, dropped, previous, budget, cover); st != SummaryWritten {
			return st, summaryState{}
		}
		next = cover
		next.msg = &sum
	}
	place(res, msgs, sum, clampCount(o.counter.CountMessage(sum)), next.upTo == cut, o, c)
	return status, next
}

// coverage returns what a summary of a trim that kept kept (indices into
// msgs) and cut at cut stands for: the dropped messages not yet covered by
// prev (oldest first), prev's summary to fold in (nil when there is none,
// or when it covered turns that are sent again), and the state of the new
// summary, without its message.
func coverage(msgs []Message, kept []int, cut int, o *options, prev summaryState) ([]Message, *Message, summaryState) {
	in := make(map[int]bool, len(kept))
	for _, k := range kept {
		in[k] = true
	}
	from := leadEnd(msgs)
	previous := prev.msg
	if previous != nil && prev.upTo <= cut && prev.upTo >= from {
		from = prev.upTo // what the previous summary covers is not sent again
	} else {
		previous = nil // stale: it covered turns that are sent again
	}
	next := summaryState{from: leadEnd(msgs), upTo: cut}
	if previous != nil {
		next.from, next.turns, next.messages, next.tokens = prev.from, prev.turns, prev.messages, prev.tokens
	}
	var dropped []Message
	for i := from; i < cut; i++ {
		if !in[i] && msgs[i].Kind != KindBreadcrumb {
			dropped = append(dropped, msgs[i])
			next.messages++
			next.turns += int(boolInt(isTurnStart(msgs[i], o.turnStart)))
			next.tokens = satAdd(next.tokens, clampCount(o.counter.CountMessage(msgs[i])))
		}
	}
	next.turns = max(next.turns, 1)
	if next.from <= next.upTo && next.upTo <= len(msgs) {
		next.covered = rangeSum(msgs[next.from:next.upTo])
	}
	return dropped, previous, next
}

// write has the Summarizer write the summary of dropped, folding in
// previous, within its input bound, and heads it with what it replaced
// (cover); a summary over MaxTokens is not used.
func write(ctx context.Context, o *options, dropped []Message, previous *Message, budget int, cover summaryState) (Message, string) {
	sum, status := fold(ctx, o, dropped, previous, budget)
	if status != SummaryWritten {
		return Message{}, status
	}
	sum.Content = summaryHeader(cover) + sum.Content
	if clampCount(o.counter.CountMessage(sum)) > o.summarizer.opts.MaxTokens {
		return Message{}, SummaryTooLarge
	}
	return sum, SummaryWritten
}

// place puts sum (counting tok) into res: in place of the turn breadcrumb
// when replace, else before it; without a breadcrumb, right after the
// leading block (the prefix and the hoisted summary).
func place(res *Result, msgs []Message, sum Message, tok int, replace bool, o *options, c *call) {
	lead := leadEnd(msgs)
	out := make([]Message, 0, len(res.Messages)+1)
	kpt := make([]int, 0, len(res.Kept)+1)
	placed, insertedAt := false, -1
	for j, k := range res.Kept {
		switch {
		case placed:
		case k < 0 && res.Messages[j].Kind == KindBreadcrumb && replace:
			res.TokensAfter -= clampCount(o.counter.CountMessage(res.Messages[j]))
			out, kpt, placed = append(out, sum), append(kpt, -1), true
			if c.outCounts != nil && j < len(*c.outCounts) {
				(*c.outCounts)[j] = tok
			}
			continue
		case k < 0 || (k >= lead && msgs[k].Kind != KindSummary):
			insertedAt = len(out)
			out, kpt, placed = append(out, sum), append(kpt, -1), true
		}
		out, kpt = append(out, res.Messages[j]), append(kpt, k)
	}
	if !placed {
		insertedAt = len(out)
		out, kpt = append(out, sum), append(kpt, -1)
	}
	if c.outCounts != nil && insertedAt >= 0 && insertedAt <= len(*c.outCounts) {
		*c.outCounts = slices.Insert(*c.outCounts, insertedAt, tok)
	}
	if insertedAt >= 0 && len(res.Modified) > 0 {
		mod := make([]int, len(res.Modified))
		for i, j := range res.Modified {
			if j >= insertedAt {
				j++
			}
			mod[i] = j
		}
		res.Modified = mod
	}
	res.Messages, res.Kept = out, kpt
	res.TokensAfter += tok
}

// summaryHeader is the first line of a summary: what it replaced, so that
// the model (and whoever reads the transcript) knows what stands behind it.
func summaryHeader(s summaryState) string {
	return "[Summary of " + strconv.Itoa(s.turns) + " earlier turn(s): " + strconv.Itoa(s.messages) +
		" messages, about " + strconv.Itoa(s.tokens) + " tokens]\n"
}

// callSummarizer calls s with its timeout, recovering from a panic, and
// checks what it returns.
func callSummarizer(ctx context.Context, s *summarizer, dropped []Message, previous *Message) (sum Message, status string) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	type reply struct {
		m   Message
		err error
	}
	done := make(chan reply, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- reply{err: errors.New("history: summarizer panicked")}
			}
		}()
		m, err := s.s.Summarize(ctx, dropped, previous)
		done <- reply{m, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			if ctx.Err() != nil {
				return Message{}, SummaryTimeout
			}
			return Message{}, SummaryFailed
		}
		r.m.Kind = KindSummary
		if r.m.Role == RoleTool || len(r.m.ToolCalls) > 0 || r.m.ToolCallID != "" || checkMessage(&r.m) != "" {
			return Message{}, SummaryFailed
		}
		return r.m, SummaryWritten
	case <-ctx.Done():
		return Message{}, SummaryTimeout
	}
}

// probeTrim trims msgs as the plan would, without an event or an archive,
// to see whether it drops whole turns; what it counts is recorded in
// c.memo for the plans that follow.
func probeTrim(msgs []Message, budget int, o *options, c *call) Result {
	probe := *o
	probe.onTrim = nil
	var pc cutInfo
	pcall := &call{reason: c.reason, prune: c.prune, pruneOver: true, memo: c.memo, noArchive: true, cut: &pc,
		minCut: c.minCut, record: make([]int, len(msgs))}
	for i := range pcall.record {
		pcall.record[i] = -1
	}
	r0, _ := trimToBudget(msgs, budget, &probe, pcall)
	if c.memo == nil {
		c.memo = pcall.record
	} else {
		for i, n := range pcall.record {
			if n >= 0 {
				c.memo[i] = n
			}
		}
	}
	return r0
}

// planWithSummary makes a new plan under WithSummarizer. A first pass,
// with no effects (no event, no archive), tells whether whole turns must
// go; if they must, the trim reserves the summary's budget, drops them and
// the Summarizer writes the summary that stands for them. The first pass's
// counts are reused, so no message is counted twice.
func (t *Trimmer) planWithSummary(ctx context.Context, msgs []Message, budget int, o *options, c *call, prev summaryState, ready *bgJob) (Result, cutInfo, summaryState, error) {
	if ready != nil {
		c.minCut = ready.upTo // drop exactly what it covers, at least
	}
	r0 := probeTrim(msgs, budget, o, c)
	var cut cutInfo
	c.cut = &cut
	if r0.DroppedTurns == 0 {
		res, err := trimToBudget(msgs, budget, o, c)
		return res, cut, summaryState{}, err
	}
	// The passes below may be redone, so results are archived once, at
	// the end, for the plan that is returned.
	var archiveFn func(Message) error
	var store Store
	if o.elide != nil {
		archiveFn, store = o.elide.Archive, o.elide.Store
	}
	c.noArchive = true
	reserve := o.summarizer.opts.MaxTokens
	userOnTrim := o.onTrim
	var ev *Event
	o.onTrim = func(e Event) { ev = &e }
	finish := func(res Result, err error, status string, next summaryState) (Result, cutInfo, summaryState, error) {
		if (archiveFn != nil || store != nil) && (err == nil || errors.As(err, new(*BudgetError))) {
			for _, j := range res.Modified {
				if k := res.Kept[j]; res.Messages[j].Kind == KindElided && msgs[k].Kind != KindElided {
					if aerr := archiveOne(msgs[k], archiveFn, store); aerr != nil {
						return Result{Budget: res.Budget}, cutInfo{start: -1, hoist: -1}, summaryState{}, &archiveError{index: k, err: aerr}
					}
				}
			}
		}
		if userOnTrim != nil && ev != nil {
			e := newEvent(&res, c.reason, c.attempt, o.labels)
			e.Summary = status
			userOnTrim(e)
		}
		return res, cut, next, err
	}
	// Whole turns go: reserve the summary's room; the event is reported
	// once the summary is settled.
	c.reserve = reserve
	res, err := trimToBudget(msgs, budget, o, c)
	c.reserve = 0
	if err != nil || res.DroppedTurns == 0 || cut.start < 0 {
		// The latest turn leaves no room for a summary (or the plan
		// changed): the plain trim.
		c.cut = &cut
		res, err = trimToBudget(msgs, budget, o, c)
		return finish(res, err, "", summaryState{})
	}
	if ready != nil && cut.start < ready.upTo {
		ready = nil // the plan kept turns the summary covers: not this one
	}
	status, next := summarize(ctx, msgs, &res, cut.start, reserve, budget, o, c, prev, ready)
	if status != SummaryWritten && status != SummaryPending {
		next = prev // kept for the next maintenance point to fold in
	}
	return finish(res, nil, status, next)
}
