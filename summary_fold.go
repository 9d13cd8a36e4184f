// This file owns the bounded input of a Summarizer: what it is handed never
// exceeds SummaryOptions.InputTokens; the dropped messages are elided, then
// folded in chunks with the summary of the chunks before them.

package history

import (
	"context"
	"strings"
)

// fold writes the summary of dropped, folding in previous, with calls of
// the Summarizer that are each handed at most the input bound (see
// SummaryOptions.InputTokens; budget is the trim's, the default bound).
func fold(ctx context.Context, o *options, dropped []Message, previous *Message, budget int) (Message, string) {
	s := o.summarizer
	limit := s.opts.InputTokens
	if limit == 0 {
		limit = budget
	}
	limit = max(limit, s.opts.MaxTokens)
	size := func(ms []Message) int { return sumCounts(ms, o.counter) }
	prevTok := 0
	if previous != nil {
		prevTok = clampCount(o.counter.CountMessage(*previous))
	}
	if satAdd(size(dropped), prevTok) > limit {
		// Tool results go first: a placeholder says what they were.
		if el, err := ElideToolResults(dropped, ElideOptions{KeepRecent: -1, MinTokens: -1, Counter: o.counter}); err == nil {
			dropped = el.Messages
		}
	}
	if satAdd(size(dropped), prevTok) <= limit {
		return callSummarizer(ctx, s, dropped, previous)
	}
	// Chunks, oldest first, each ending between exchanges and holding,
	// with the summary so far, at most limit; the summary so far is at
	// most MaxTokens, so a chunk always has limit - MaxTokens of room.
	room := max(limit-s.opts.MaxTokens, 1)
	for len(dropped) > 0 {
		chunk, rest := nextChunk(dropped, room, o.counter)
		dropped = rest
		sum, status := callSummarizer(ctx, s, chunk, previous)
		if status != SummaryWritten {
			return Message{}, status
		}
		if clampCount(o.counter.CountMessage(sum)) > s.opts.MaxTokens {
			return Message{}, SummaryTooLarge
		}
		previous = &sum
	}
	return *previous, SummaryWritten
}

// nextChunk splits msgs after the longest run of whole exchanges (an
// assistant message with its results and nudges, or one other message)
// that fits room; a first exchange that does not fit alone is cut down to
// room.
func nextChunk(msgs []Message, room int, c Counter) (chunk, rest []Message) {
	end, tok := 0, 0
	for end < len(msgs) {
		next := end + 1
		for next < len(msgs) && (msgs[next].Role == RoleTool || msgs[next].Kind == KindNudge) {
			next++
		}
		t := sumCounts(msgs[end:next], c)
		if satAdd(tok, t) > room {
			if end == 0 {
				return shrink(msgs[:next], room, c), msgs[next:]
			}
			break
		}
		end, tok = next, tok+t
	}
	return msgs[:end], msgs[end:]
}

// shrink returns copies of ex whose contents are cut, largest first, to
// their head and tail, until the whole counts at most room (or nothing is
// left to cut).
func shrink(ex []Message, room int, c Counter) []Message {
	out := make([]Message, len(ex))
	copy(out, ex)
	for range 64 {
		total := sumCounts(out, c)
		if total <= room {
			break
		}
		big := 0
		for i := range out {
			if len(out[i].Content) > len(out[big].Content) {
				big = i
			}
		}
		m := &out[big]
		if len(m.Content) < 64 {
			break
		}
		// Keep as much of it as the excess leaves, at least half less.
		keep := min(len(m.Content)/2, max(len(m.Content)*room/max(total, 1), 32))
		m.Content = headTail(m.Content, keep)
		m.Parts = nil
	}
	return out
}

// headTail returns s cut to about n bytes: its head and tail, on UTF-8
// boundaries, around a marker.
func headTail(s string, n int) string {
	h, t := n/2, n-n/2
	for h > 0 && !isRuneStart(s[h]) {
		h--
	}
	start := len(s) - t
	for start < len(s) && !isRuneStart(s[start]) {
		start++
	}
	var b strings.Builder
	b.WriteString(s[:h])
	b.WriteString("\n[... cut to fit the summariser's input ...]\n")
	b.WriteString(s[start:])
	return b.String()
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// sumCounts sums c's counts of msgs, clamped and saturated.
func sumCounts(msgs []Message, c Counter) int {
	n := 0
	for i := range msgs {
		n = satAdd(n, clampCount(c.CountMessage(msgs[i])))
	}
	return n
}
