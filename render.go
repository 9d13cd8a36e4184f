package history

import (
	"strings"
	"unicode"
	"unicode/utf8"
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
//     The marker and separators count inside the limit.
//   - No UTF-8 sequence is split, nor a base character from its combining
//     marks (nor an emoji from its modifiers or joined parts). A cut inside
//     a message falls on a word boundary when one is near.
//   - The marker never stands alone: if no content fits beside it, the
//     result is the newest content that fits, without a marker.
//   - A leading summary (KindSummary in the prefix) is pinned at the top.
//     If the summary alone does not fit, its head is kept, marked, and the
//     newest conversation still gets at least half of the space.
func RenderTranscript(msgs []Message, maxChars int, opts RenderOptions) string {
	if maxChars <= 0 {
		return ""
	}
	marker, sep, format := opts.Marker, opts.Separator, opts.Format
	if marker == "" {
		marker = DefaultRenderMarker
	}
	if sep == "" {
		sep = "\n"
	}
	if format == nil {
		format = formatMessage
	}
	var pinned, body, all []string
	lead := leadEnd(msgs)
	for i := range msgs {
		s := format(msgs[i])
		if s == "" {
			continue
		}
		all = append(all, s)
		if i < lead && msgs[i].Kind == KindSummary {
			pinned = append(pinned, s)
		} else {
			body = append(body, s)
		}
	}
	if whole := strings.Join(all, sep); runes(whole) <= maxChars {
		return whole
	}
	sepN := utf8.RuneCountInString(sep)
	markN := utf8.RuneCountInString(marker)
	summary := strings.Join(pinned, sep)

	// Something must go. Pinned summary first, then the marker, then the
	// newest text.
	var b strings.Builder
	room := maxChars
	if summary != "" {
		sumN := runes(summary)
		// The tail keeps at least half of the space when the summary is
		// too large; the summary otherwise fits whole.
		if sumN+sepN > room/2 && sumN+sepN+markN+sepN+1 > room {
			share := room / 2
			head := cutHead(summary, share-sepN-markN-sepN)
			if head == "" {
				return tailText(body, sep, marker, maxChars)
			}
			b.WriteString(head)
			b.WriteString(sep)
			b.WriteString(marker)
			b.WriteString(sep)
			room -= runes(head) + sepN + markN + sepN
			if tail := keepTail(body, sep, room); strings.TrimSpace(tail) != "" {
				b.WriteString(tail)
				return b.String()
			}
			return strings.TrimSuffix(b.String(), sep)
		}
		b.WriteString(summary)
		b.WriteString(sep)
		room -= sumN + sepN
	}
	b.WriteString(tailText(body, sep, marker, room))
	return strings.TrimSuffix(b.String(), sep)
}

// tailText returns marker + sep + the newest text of body that fits in room
// runes, or the newest text alone when no content fits beside the marker.
func tailText(body []string, sep, marker string, room int) string {
	over := runes(marker) + runes(sep)
	if room > over {
		if tail := keepTail(body, sep, room-over); strings.TrimSpace(tail) != "" {
			return marker + sep + tail
		}
	}
	if tail := keepTail(body, sep, room); strings.TrimSpace(tail) != "" {
		return tail
	}
	return ""
}

// keepTail joins the newest entries of body that fit in room runes, cutting
// the oldest of them at its start if needed.
func keepTail(body []string, sep string, room int) string {
	if room <= 0 || len(body) == 0 {
		return ""
	}
	sepN := runes(sep)
	used, first := 0, len(body)
	for first > 0 {
		n := runes(body[first-1])
		if first < len(body) {
			n += sepN
		}
		if used+n > room {
			break
		}
		used += n
		first--
	}
	parts := body[first:]
	if first > 0 {
		// Part of the next older entry fits.
		left := room - used
		if first < len(body) {
			left -= sepN
		}
		if cut := cutTail(body[first-1], left); cut != "" {
			parts = append([]string{cut}, parts...)
		}
	}
	return strings.Join(parts, sep)
}

// cutTail returns the longest suffix of s of at most n runes that starts on
// a grapheme boundary, preferring a word boundary within the last 32 runes
// of the cut.
func cutTail(s string, n int) string {
	if n <= 0 {
		return ""
	}
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	start := len(rs) - n
	for start < len(rs) && continues(rs, start) {
		start++
	}
	// Prefer starting right after a space, if one is close.
	for j := start; j < len(rs) && j < start+32; j++ {
		if j > 0 && unicode.IsSpace(rs[j-1]) && !unicode.IsSpace(rs[j]) {
			start = j
			break
		}
	}
	return string(rs[start:])
}

// cutHead returns the longest prefix of s of at most n runes that ends on a
// grapheme boundary.
func cutHead(s string, n int) string {
	if n <= 0 {
		return ""
	}
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	end := n
	for end > 0 && continues(rs, end) {
		end--
	}
	return string(rs[:end])
}

// continues reports whether rs[i] continues the grapheme cluster of
// rs[i-1], so that a cut before i would split a character: combining marks,
// variation selectors, zero-width joiners and what follows them, emoji
// modifiers and tags, and the second of a pair of regional indicators.
func continues(rs []rune, i int) bool {
	if i <= 0 || i >= len(rs) {
		return false
	}
	r, prev := rs[i], rs[i-1]
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc),
		r == 0x200D, prev == 0x200D,
		r >= 0xFE00 && r <= 0xFE0F,
		r >= 0x1F3FB && r <= 0x1F3FF,
		r >= 0xE0020 && r <= 0xE007F:
		return true
	case isRegional(r) && isRegional(prev):
		// Pairs start at even positions within a run of indicators.
		n := 0
		for j := i - 1; j >= 0 && isRegional(rs[j]); j-- {
			n++
		}
		return n%2 == 1
	}
	return false
}

func isRegional(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

func runes(s string) int { return utf8.RuneCountInString(s) }

// formatMessage is RenderTranscript's default Format.
func formatMessage(m Message) string {
	if m.Kind == KindBreadcrumb {
		return ""
	}
	var b strings.Builder
	role := string(m.Role)
	if m.Kind == KindSummary {
		role = "summary"
	}
	text := m.Content
	for _, p := range m.Parts {
		// Text parts are rendered; reasoning is the model's private
		// scratchpad and stays out of a transcript.
		if p.Type == PartText && p.Text != "" {
			if text != "" {
				text += "\n"
			}
			text += p.Text
		}
	}
	if m.Role == RoleTool {
		role += " (" + m.ToolCallID + ")"
	}
	b.WriteString(role)
	b.WriteString(": ")
	b.WriteString(text)
	for i, c := range m.ToolCalls {
		if i > 0 || text != "" {
			b.WriteString(" ")
		}
		b.WriteString("[called " + c.Name + "(" + c.Arguments + ")]")
	}
	if text == "" && len(m.ToolCalls) == 0 {
		return ""
	}
	return b.String()
}
