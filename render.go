// This file owns RenderTranscript: a transcript rendered into a character
// budget, keeping its tail and its summaries (render_text.go cuts the
// text), and Summaries.

package history

import (
	"strings"
)

// Summaries returns the indices of the summary messages (KindSummary) in
// msgs, oldest first, or nil when there are none.
//
// Trims never lose a summary: summaries right after the leading system
// messages are pinned in the prefix, and when a trim drops turns or steps
// that contain summaries, the newest of them is moved into the prefix (it
// supersedes the older ones it was dropped with), counted toward the budget.
// When the pinned summaries alone exceed the budget, the latest turn is still
// kept and the *BudgetError's Pinned field says so.
func Summaries(msgs []Message) []int {
	var out []int
	for i := range msgs {
		if msgs[i].Kind == KindSummary {
			out = append(out, i)
		}
	}
	return out
}

// DefaultRenderMarker is the line RenderTranscript puts where older text was
// cut.
const DefaultRenderMarker = "[earlier conversation truncated]"

// RenderOptions configures RenderTranscript. The zero value works.
type RenderOptions struct {
	// Marker is the line that says older text was cut. "" means
	// DefaultRenderMarker.
	Marker string
	// Separator goes between rendered messages. "" means "\n".
	Separator string
	// Format renders one message as text; "" leaves the message out. nil
	// means the default: "role: content", tool calls as
	// "assistant: [called name(arguments)]", tool results as
	// "tool (id): content"; breadcrumbs are left out.
	Format func(m Message) string
}

// RenderTranscript renders msgs as plain text of at most maxChars
// characters (runes), for runtimes that re-seed a fresh model session with
// the prior conversation. It keeps the most recent text and drops the
// oldest: when anything is cut, the text starts with the marker line.
//
// Guarantees, in every case:
//   - utf8.RuneCountInString(result) <= maxChars; maxChars <= 0 gives "".
//     The marker and separators count inside the limit. A huge maxChars
//     (up to math.MaxInt) is a limit like any other.
//   - The result is valid UTF-8: each invalid byte of the input is written
//     as U+FFFD, one character for one byte.
//   - No cut splits a character (a grapheme cluster): the text never starts
//     or ends inside one, nor starts with a combining mark. Clusters follow
//     Unicode's extended grapheme cluster rules as far as the standard
//     library can tell them apart: combining and enclosing marks, spacing
//     marks, variation selectors, emoji modifiers and tags, zero-width
//     joiners and the character after one, pairs of regional indicators
//     (flags), Hangul jamo sequences, and CR LF (docs/rendering.md lists
//     what is not handled). A cut inside a message falls on a word boundary
//     when one is within 32 characters.
//   - The marker never stands alone: if no content fits beside it, the
//     result is the newest content that fits, without a marker.
//   - A leading summary (KindSummary in the prefix) is pinned at the top.
//     If the summary alone does not fit, its head is kept, marked, and the
//     newest conversation still gets at least half of the space.
//
// Cost: the work follows the output, not the input. Messages are formatted
// newest first, and only until the cap is reached; the default Format reads
// a message in place (its content, parts and tool calls are neither copied
// nor listed) and no message is scanned past maxChars characters, so
// rendering the end of a 100 MB message, or of one with a million tool
// calls, at a small cap reads and allocates a few hundred bytes. (A custom
// Format returns whole strings, which it allocates itself.) The exceptions
// are linear scans without allocation: a long run of regional indicators is
// read back to its start to pair them, and trailing parts or tool calls
// without text are skipped over.
func RenderTranscript(msgs []Message, maxChars int, opts RenderOptions) string {
	if maxChars <= 0 {
		return ""
	}
	marker, sep := opts.Marker, opts.Separator
	if marker == "" {
		marker = DefaultRenderMarker
	}
	if sep == "" {
		sep = "\n"
	}
	r := &renderer{msgs: msgs, format: opts.Format, lead: leadEnd(msgs), bound: maxChars, next: len(msgs) - 1}
	r.pinSummaries()
	sepN, markN := runes(sep), runes(marker)

	// Does everything fit? Walk back from the newest message until the
	// total passes the cap.
	total := 0
	for k := 0; ; k++ {
		e, ok := r.entry(k)
		if !ok {
			var b strings.Builder
			for k--; k >= 0; k-- {
				writeText(&b, r.ents[k].t)
				if k > 0 {
					writeValid(&b, sep)
				}
			}
			return b.String()
		}
		if k > 0 {
			total = satAdd(total, sepN)
		}
		if total = satAdd(total, e.n); total > maxChars {
			break
		}
	}

	// Something must go. Pinned summary first, then the marker, then the
	// newest text.
	var summary text
	for i, e := range r.pinned {
		if i > 0 {
			summary = append(summary, source{s: sep, n: 1})
		}
		summary = append(summary, e.t...)
	}
	room := maxChars
	if len(summary) == 0 {
		return r.tailText(sep, marker, room)
	}
	sumN := summary.count(maxChars)
	// The tail keeps at least half of the space when the summary is too
	// large; the summary otherwise fits whole.
	if satAdd(sumN, sepN) > room/2 && satAdd(satAdd(sumN, sepN), satAdd(satAdd(markN, sepN), 1)) > room {
		share := room / 2
		head := summary.head(share - min(satAdd(satAdd(sepN, markN), sepN), share+1))
		if head == "" {
			return r.tailText(sep, marker, maxChars)
		}
		room -= runes(head) + sepN + markN + sepN // > 0: the head left room for these
		if tail := r.keepTail(sep, room); strings.TrimSpace(tail) != "" {
			return head + validString(sep) + validString(marker) + validString(sep) + tail
		}
		return head + validString(sep) + validString(marker)
	}
	var b strings.Builder
	writeText(&b, summary)
	if tail := r.tailText(sep, marker, room-sumN-sepN); tail != "" {
		writeValid(&b, sep)
		b.WriteString(tail)
	}
	return b.String()
}

// renderer formats the messages of one RenderTranscript call lazily, newest
// first, and remembers what it formatted.
type renderer struct {
	msgs   []Message
	format func(Message) string // nil: the default format
	lead   int                  // leadEnd(msgs)
	bound  int                  // entry counts are exact up to bound
	next   int                  // the next message to format, walking back; -1 when done
	ents   []entry              // the non-empty messages formatted so far, newest first
	pinned []entry              // the non-empty pinned summaries, oldest first
	unmet  int                  // pinned[:unmet] are not yet in ents
}

// entry is one formatted message.
type entry struct {
	t      text
	n      int // characters in t, or bound+1 when there are more than bound
	index  int // in msgs
	pinned bool
}

// pinSummaries formats the pinned summaries: the summaries in the leading
// block.
func (r *renderer) pinSummaries() {
	for i := range r.lead {
		if r.msgs[i].Kind == KindSummary {
			if t := r.render(i); len(t) > 0 {
				r.pinned = append(r.pinned, entry{t: t, n: t.count(r.bound), index: i, pinned: true})
			}
		}
	}
	r.unmet = len(r.pinned)
}

// entry returns the k-th newest non-empty message, formatting older
// messages as needed, and false when there are fewer than k+1.
func (r *renderer) entry(k int) (entry, bool) {
	for len(r.ents) <= k {
		if r.next < 0 {
			return entry{}, false
		}
		i := r.next
		r.next--
		if r.unmet > 0 && r.pinned[r.unmet-1].index == i {
			r.unmet--
			r.ents = append(r.ents, r.pinned[r.unmet])
			continue
		}
		if i < r.lead && r.msgs[i].Kind == KindSummary {
			continue // a pinned summary that renders empty
		}
		if t := r.render(i); len(t) > 0 {
			r.ents = append(r.ents, entry{t: t, n: t.count(r.bound), index: i})
		}
	}
	return r.ents[k], true
}

func (r *renderer) render(i int) text {
	if r.format == nil {
		return formatMessage(&r.msgs[i])
	}
	if s := r.format(r.msgs[i]); s != "" {
		return text{{s: s, n: 1}}
	}
	return nil
}

// tailText returns marker + sep + the newest text of the body that fits in
// room characters, or the newest text alone when no content fits beside
// the marker.
func (r *renderer) tailText(sep, marker string, room int) string {
	if over := satAdd(runes(marker), runes(sep)); room > over {
		if tail := r.keepTail(sep, room-over); strings.TrimSpace(tail) != "" {
			return validString(marker) + validString(sep) + tail
		}
	}
	if tail := r.keepTail(sep, room); strings.TrimSpace(tail) != "" {
		return tail
	}
	return ""
}

// keepTail joins the newest body messages (all but the pinned summaries)
// that fit in room characters, cutting the oldest of them at its start if
// needed.
func (r *renderer) keepTail(sep string, room int) string {
	if room <= 0 {
		return ""
	}
	sepN := runes(sep)
	var kept []int // indices into r.ents, newest first
	used := 0
	cut := ""
	for k := 0; ; k++ {
		e, ok := r.entry(k)
		if !ok {
			break
		}
		if e.pinned {
			continue
		}
		need := e.n
		if len(kept) > 0 {
			need = satAdd(need, sepN)
		}
		if satAdd(used, need) > room {
			// Part of this older message fits.
			left := room - used
			if len(kept) > 0 {
				left -= sepN
			}
			cut = e.t.tail(left)
			break
		}
		used += need
		kept = append(kept, k)
	}
	var b strings.Builder
	b.WriteString(cut)
	for j := len(kept) - 1; j >= 0; j-- {
		if cut != "" || j < len(kept)-1 {
			writeValid(&b, sep)
		}
		writeText(&b, r.ents[kept[j]].t)
	}
	return b.String()
}

// formatMessage is RenderTranscript's default Format, as one source that
// reads the message's strings in place (see source.piece): "role: content",
// text parts after the content on their own lines, each tool call as
// "[called name(arguments)]", tool results as "tool (id): content".
// Breadcrumbs and messages with neither text nor tool calls render empty
// (nil); reasoning is the model's private scratchpad and stays out of a
// transcript.
func formatMessage(m *Message) text {
	if m.Kind == KindBreadcrumb {
		return nil
	}
	first := len(m.Parts)
	for i := range m.Parts {
		if m.Parts[i].Type == PartText && m.Parts[i].Text != "" {
			first = i
			break
		}
	}
	hasText := m.Content != "" || first < len(m.Parts)
	if !hasText && len(m.ToolCalls) == 0 {
		return nil
	}
	return text{{m: m, n: 6 + 2*len(m.Parts) + 6*len(m.ToolCalls), firstPart: first, hasText: hasText}}
}
