package main

import (
	"math"
	"strings"

	"github.com/histrim/history"
)

// trimView is one trim as the HTML report draws it: every message with its
// fate, and the bars, one for the prefix and one per turn.
type trimView struct {
	// Msgs are the input messages, in order, then the messages the trim
	// inserted, in the order it sent them.
	Msgs []msgView
	// Sent lists the messages sent, as indices into Msgs, in sent order.
	Sent []int
	// Bars are the prefix (when there is one) and every turn, oldest
	// first.
	Bars []barView
	// Fates counts the messages of each fate, parallel to fates.
	Fates []int
	// Before is the tokens of the input (every message counted), After
	// the tokens sent.
	Before, After int
}

// msgView is one message of a trimView.
type msgView struct {
	// Index is the message's position in the input, -1 for a message the
	// trim inserted.
	Index int
	// Bar is the index in trimView.Bars of the bar that draws it.
	Bar int
	// Role is the role, with the kind after a slash when there is one.
	Role string
	// Tokens is the message's count as given (for an inserted message, as
	// sent); SentTokens its count as sent, -1 when it was not sent.
	Tokens, SentTokens int
	// Fate indexes fates.
	Fate int
	// Preview is the end of the message's text, as RenderTranscript
	// keeps it.
	Preview string
}

// barView is the prefix (Turn 0) or one turn.
type barView struct {
	Turn int
	// Start and End are the input indices [Start, End) of its messages.
	Start, End int
	// Tokens is the count of its input messages; Drawn adds the messages
	// the trim inserted in it.
	Tokens, Drawn int
	// Fate is "prefix", "kept" or "dropped" (droppedTurns), as the
	// trim's Result counts them.
	Fate string
	// Msgs are its messages in drawing order, as indices into
	// trimView.Msgs: the input messages, with each inserted message just
	// before the message it was sent before.
	Msgs []int
}

// previewChars is the length of a preview, in characters.
const previewChars = 200

// newTrimView classifies every message of the trim of msgs into res;
// counts are the Counter's counts of msgs, c the Counter, opts the trim's
// options (for its turn rule).
func newTrimView(msgs []history.Message, res history.Result, counts []int, c history.Counter, opts ...history.Option) *trimView {
	v := &trimView{Msgs: make([]msgView, len(msgs), len(msgs)+2), Fates: make([]int, len(fates))}
	sentAt := sentPositions(len(msgs), res)
	swept := sweptMessages(msgs)
	turns := history.Turns(msgs, opts...) // the turns of the trim's rule
	prefixEnd := len(msgs)
	if len(turns) > 0 {
		prefixEnd = turns[0].Start
	}
	if prefixEnd > 0 {
		v.Bars = append(v.Bars, barView{Turn: 0, Start: 0, End: prefixEnd, Fate: "prefix"})
	}
	dropped := droppedTurns(turns, sentAt, swept, res.DroppedTurns)
	for n, t := range turns {
		fate := "kept"
		if dropped[n] {
			fate = "dropped"
		}
		v.Bars = append(v.Bars, barView{Turn: n + 1, Start: t.Start, End: t.End, Fate: fate})
	}
	modified := make([]bool, len(res.Messages))
	for _, j := range res.Modified {
		modified[j] = true
	}
	sentTokens := func(j int) int {
		if k := res.Kept[j]; k >= 0 && !modified[j] {
			return counts[k]
		}
		return c.CountMessage(res.Messages[j])
	}

	b := 0
	for i := range msgs {
		for b < len(v.Bars) && v.Bars[b].End <= i {
			b++
		}
		bar := &v.Bars[b]
		f := msgFacts{in: &msgs[i], swept: swept[i], prefix: i < prefixEnd}
		mv := msgView{Index: i, Bar: b, Role: roleName(msgs[i]), Tokens: counts[i], SentTokens: -1}
		if j := sentAt[i]; j >= 0 {
			f.sent = &res.Messages[j]
			f.lifted = !f.prefix && bar.Fate == "dropped"
			mv.SentTokens = sentTokens(j)
		}
		mv.Fate = fateOf(&f)
		mv.Preview = previewOf(msgs[i])
		v.Msgs[i] = mv
		bar.Tokens = satAdd(bar.Tokens, mv.Tokens)
		v.Before = satAdd(v.Before, mv.Tokens)
	}

	// Inserted messages: each is drawn in the bar of the next input
	// message sent, just before it (a breadcrumb where the dropped turns
	// were, a step breadcrumb after the task's opening message).
	before := make(map[int][]int) // input index -> inserted messages drawn before it
	var trailing []int
	v.Sent = make([]int, len(res.Kept))
	for j, k := range res.Kept {
		if k >= 0 {
			v.Sent[j] = k
			v.After = satAdd(v.After, v.Msgs[k].SentTokens)
			continue
		}
		f := msgFacts{sent: &res.Messages[j]}
		t := sentTokens(j)
		mv := msgView{Index: -1, Role: roleName(res.Messages[j]), Tokens: t, SentTokens: t, Fate: fateOf(&f), Preview: previewOf(res.Messages[j])}
		v.Sent[j] = len(v.Msgs)
		next := -1
		for _, kk := range res.Kept[j+1:] {
			if kk >= 0 {
				next = kk
				break
			}
		}
		switch {
		case next >= 0:
			mv.Bar = v.Msgs[next].Bar
			before[next] = append(before[next], len(v.Msgs))
		case len(v.Bars) > 0:
			mv.Bar = len(v.Bars) - 1
			trailing = append(trailing, len(v.Msgs))
		default: // nothing but notices: give them a bar
			v.Bars = append(v.Bars, barView{Fate: "prefix"})
			trailing = append(trailing, len(v.Msgs))
		}
		v.Msgs = append(v.Msgs, mv)
		v.After = satAdd(v.After, t)
	}
	for n := range v.Bars {
		bar := &v.Bars[n]
		bar.Msgs = make([]int, 0, bar.End-bar.Start)
		for i := bar.Start; i < bar.End; i++ {
			bar.Msgs = append(bar.Msgs, before[i]...)
			bar.Msgs = append(bar.Msgs, i)
		}
		if n == len(v.Bars)-1 {
			bar.Msgs = append(bar.Msgs, trailing...)
		}
		bar.Drawn = 0
		for _, m := range bar.Msgs {
			bar.Drawn = satAdd(bar.Drawn, v.Msgs[m].Tokens)
		}
	}
	for _, m := range v.Msgs {
		if m.Fate >= 0 {
			v.Fates[m.Fate]++
		}
	}
	return v
}

// droppedTurns reports, for each of turns, whether the trim into res
// dropped it; dropped is res.DroppedTurns. The core drops the oldest
// turns, not counting one whose every message is pinned (kept in effect),
// and still sends a dropped turn's pinned messages, lifted after the
// breadcrumb: its opening too when that is WithTask's goal, so a turn's
// opening being sent does not make it kept. A dropped turn is one of the
// oldest with a message not sent (the orphan sweep's aside); the latest
// turn is never dropped, so its dropped steps do not count.
func droppedTurns(turns []history.Turn, sentAt []int, swept []bool, dropped int) []bool {
	out := make([]bool, len(turns))
	for n, t := range turns {
		if dropped == 0 || n == len(turns)-1 {
			break
		}
		for i := t.Start; i < t.End; i++ {
			if sentAt[i] < 0 && !swept[i] {
				out[n] = true
				dropped--
				break
			}
		}
	}
	return out
}

// sentPositions returns, for each of the n input messages, its position
// in res.Messages, or -1 when it was not sent.
func sentPositions(n int, res history.Result) []int {
	at := make([]int, n)
	for i := range at {
		at[i] = -1
	}
	for j, k := range res.Kept {
		if k >= 0 {
			at[k] = j
		}
	}
	return at
}

// one counts every message as one token: a trim with it and an unlimited
// budget only sweeps.
var one = history.CounterFunc(func(history.Message) int { return 1 })

// sweptMessages reports, for each message of msgs, whether the orphan
// sweep removes it: a trim that keeps everything keeps exactly what the
// sweep leaves.
func sweptMessages(msgs []history.Message) []bool {
	swept := make([]bool, len(msgs))
	res, err := history.TrimToRecentTurns(msgs, math.MaxInt, history.WithCounter(one))
	if err != nil {
		return swept // msgs were trimmed without error before: unreachable
	}
	for i := range swept {
		swept[i] = true
	}
	for _, k := range res.Kept {
		if k >= 0 {
			swept[k] = false
		}
	}
	return swept
}

// roleName is the role, with the kind after a slash.
func roleName(m history.Message) string {
	if m.Kind == "" {
		return string(m.Role)
	}
	return string(m.Role) + "/" + string(m.Kind)
}

// previewOf returns the end of m's text, as RenderTranscript renders it
// into previewChars characters: "role: content", calls as "[called
// name(arguments)]", cut on a word or character boundary behind a "…". A
// message the transcript format leaves out (a breadcrumb, one with only
// images or reasoning) is previewed as its role, content and part types.
func previewOf(m history.Message) string {
	opts := history.RenderOptions{Marker: "…", Separator: " "}
	if s := history.RenderTranscript([]history.Message{m}, previewChars, opts); s != "" {
		return s
	}
	opts.Format = func(m history.Message) string {
		var b strings.Builder
		b.WriteString(string(m.Role))
		b.WriteByte(':')
		if m.Content != "" {
			b.WriteByte(' ')
			b.WriteString(m.Content)
		}
		for _, p := range m.Parts {
			b.WriteString(" [")
			b.WriteString(string(p.Type))
			b.WriteByte(']')
		}
		return b.String()
	}
	return history.RenderTranscript([]history.Message{m}, previewChars, opts)
}
