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

// text is a string given as the concatenation of sources, and each source
// as a run of pieces, none of them copied: a message is rendered in the
// default format without building its string, or even a list of its pieces.
type text []source

// source is a message in the default format (m != nil), or the plain string
// s: a custom Format's result, or a separator.
type source struct {
	m         *Message
	s         string
	n         int  // pieces
	firstPart int  // the first text part with text, or len(m.Parts)
	hasText   bool // m has content or a text part with text
}

// piece returns piece i of c, in [0, c.n). Pieces may be empty. The default
// format lays a message out as:
//
//	role, " (", ToolCallID, ")" (tool messages only), ": ", Content,
//	per part: "\n" (a text part after earlier text), Text (text parts),
//	per tool call: " " (after earlier text or calls), "[called ", Name, "(", Arguments, ")]"
func (c *source) piece(i int) string {
	m := c.m
	if m == nil {
		return c.s
	}
	switch i {
	case 0:
		if m.Kind == KindSummary {
			return "summary"
		}
		return string(m.Role)
	case 1, 2, 3:
		switch {
		case m.Role != RoleTool:
			return ""
		case i == 1:
			return " ("
		case i == 2:
			return m.ToolCallID
		}
		return ")"
	case 4:
		return ": "
	case 5:
		return m.Content
	}
	i -= 6
	if i < 2*len(m.Parts) {
		k := i / 2
		p := &m.Parts[k]
		switch {
		case p.Type != PartText || p.Text == "":
			return ""
		case i%2 == 1:
			return p.Text
		case m.Content != "" || k > c.firstPart:
			return "\n"
		}
		return ""
	}
	i -= 2 * len(m.Parts)
	k := i / 6
	switch i % 6 {
	case 0:
		if k > 0 || c.hasText {
			return " "
		}
		return ""
	case 1:
		return "[called "
	case 2:
		return m.ToolCalls[k].Name
	case 3:
		return "("
	case 4:
		return m.ToolCalls[k].Arguments
	}
	return ")]"
}

// pos is a position in a text: a byte offset in a piece of a source. The
// same place may have several positions (the end of a piece and the start
// of the next); code compares positions only as shortcuts, and relies on
// prev and next to tell the start and the end.
type pos struct{ src, piece, off int }

func (t text) end() pos {
	c := &t[len(t)-1]
	return pos{len(t) - 1, c.n - 1, len(c.piece(c.n - 1))}
}

// count returns the number of characters (runes; an invalid byte is one) of
// t, or bound+1 when there are more than bound. It reads at most bound+1
// characters.
func (t text) count(bound int) int {
	n := 0
	for si := range t {
		c := &t[si]
		for i := range c.n {
			s := c.piece(i)
			if len(s) <= bound-n {
				n += utf8.RuneCountInString(s)
				continue
			}
			for j := 0; j < len(s); n++ {
				if n > bound {
					return n
				}
				_, size := utf8.DecodeRuneInString(s[j:])
				j += size
			}
			if n > bound {
				return n
			}
		}
	}
	return n
}

// prev returns the character before p and its position, or false at the
// start of t.
func (t text) prev(p pos) (rune, pos, bool) {
	for p.off == 0 {
		switch {
		case p.piece > 0:
			p.piece--
		case p.src > 0:
			p.src--
			p.piece = t[p.src].n - 1
		default:
			return 0, p, false
		}
		p.off = len(t[p.src].piece(p.piece))
	}
	r, size := utf8.DecodeLastRuneInString(t[p.src].piece(p.piece)[:p.off])
	p.off -= size
	return r, p, true
}

// next returns the character at p and the position after it, or false at
// the end of t.
func (t text) next(p pos) (rune, pos, bool) {
	s := t[p.src].piece(p.piece)
	for p.off == len(s) {
		switch {
		case p.piece < t[p.src].n-1:
			p.piece++
		case p.src < len(t)-1:
			p.src++
			p.piece = 0
		default:
			return 0, p, false
		}
		p.off = 0
		s = t[p.src].piece(p.piece)
	}
	r, size := utf8.DecodeRuneInString(s[p.off:])
	p.off += size
	return r, p, true
}

// boundary reports whether a cut at p falls between two grapheme clusters.
func (t text) boundary(p pos) bool {
	r, _, ok := t.next(p)
	if !ok {
		return true
	}
	prev, q, ok := t.prev(p)
	if !ok {
		return true
	}
	if joins(prev, r) {
		return false
	}
	if isRegional(r) && isRegional(prev) {
		// Indicators pair up from the start of their run: a cut is
		// inside a pair when an odd number of them precede it.
		n := 0
		for ok && isRegional(prev) {
			n++
			prev, q, ok = t.prev(q)
		}
		return n%2 == 0
	}
	return true
}

// tail returns the longest suffix of t of at most n characters that starts
// on a cluster boundary, preferring a word start within 32 characters of the
// cut, as valid UTF-8.
func (t text) tail(n int) string {
	if n <= 0 {
		return ""
	}
	end := t.end()
	p := end
	for range n {
		_, q, ok := t.prev(p)
		if !ok {
			return t.slice(p, end) // all of t fits
		}
		p = q
	}
	if _, _, ok := t.prev(p); !ok {
		return t.slice(p, end)
	}
	for p != end && !t.boundary(p) {
		_, p, _ = t.next(p)
	}
	// Prefer starting right after a space, if one is close.
	q := p
	for range 32 {
		r, after, ok := t.next(q)
		if !ok {
			break
		}
		if before, _, ok := t.prev(q); ok && unicode.IsSpace(before) && !unicode.IsSpace(r) && t.boundary(q) {
			p = q
			break
		}
		q = after
	}
	return t.slice(p, end)
}

// head returns the longest prefix of t of at most n characters that ends on
// a cluster boundary, as valid UTF-8.
func (t text) head(n int) string {
	if n <= 0 {
		return ""
	}
	start, end := pos{}, t.end()
	p := start
	for range n {
		_, q, ok := t.next(p)
		if !ok {
			return t.slice(start, end) // all of t fits
		}
		p = q
	}
	for p != start && !t.boundary(p) {
		_, p, _ = t.prev(p)
	}
	return t.slice(start, p)
}

// slice returns t from a to b as valid UTF-8.
func (t text) slice(a, b pos) string {
	size := 0
	t.pieces(a, b, func(s string) { size += len(s) })
	var sb strings.Builder
	sb.Grow(size)
	t.pieces(a, b, func(s string) { writeValid(&sb, s) })
	return sb.String()
}

// pieces calls f with the bytes of t from a to b, piece by piece.
func (t text) pieces(a, b pos, f func(string)) {
	for p := (pos{a.src, a.piece, 0}); ; {
		s := t[p.src].piece(p.piece)
		if p.src == b.src && p.piece == b.piece {
			s = s[:b.off]
		}
		if p.src == a.src && p.piece == a.piece {
			s = s[a.off:]
		}
		f(s)
		switch {
		case p.src == b.src && p.piece == b.piece:
			return
		case p.piece < t[p.src].n-1:
			p.piece++
		default:
			p.src++
			p.piece = 0
		}
	}
}

// writeText writes all of t to b as valid UTF-8.
func writeText(b *strings.Builder, t text) {
	for si := range t {
		c := &t[si]
		for i := range c.n {
			writeValid(b, c.piece(i))
		}
	}
}

// writeValid writes s to b with each invalid byte replaced by U+FFFD, so
// that the output has as many characters as utf8.RuneCountInString(s).
func writeValid(b *strings.Builder, s string) {
	for len(s) > 0 {
		i := 0
		for i < len(s) {
			if s[i] < utf8.RuneSelf {
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		b.WriteString(s[:i])
		if i == len(s) {
			return
		}
		b.WriteRune(utf8.RuneError)
		s = s[i+1:]
	}
}

// validString returns s with each invalid byte replaced by U+FFFD.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	writeValid(&b, s)
	return b.String()
}

// joins reports whether r continues the grapheme cluster of prev, so that a
// cut between them would split a character. It follows Unicode's extended
// grapheme cluster rules (UAX #29) pairwise, and errs towards joining: any
// mark joins, even after a control character, and so does anything after a
// zero-width joiner. Regional indicators need their run: see boundary.
func joins(prev, r rune) bool {
	switch {
	case isExtend(r): // GB9, GB9a, and against GB4/GB5 after a control
		return true
	case prev == '\r':
		return r == '\n' // GB3
	case prev == 0x200D: // GB11, widened
		return true
	}
	return hangulJoins(prev, r)
}

// isExtend reports whether r never starts a grapheme cluster after another
// character: marks (Mn, Me, Mc: combining, enclosing and spacing marks,
// variation selectors), the zero-width non-joiner and joiner, emoji
// modifiers, tag characters and the half-width voiced sound marks.
func isExtend(r rune) bool {
	if r < 0x0300 {
		return false
	}
	switch {
	case r == 0x200C, r == 0x200D,
		r >= 0x1F3FB && r <= 0x1F3FF,
		r >= 0xE0020 && r <= 0xE007F,
		r == 0xFF9E, r == 0xFF9F:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

func isRegional(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

// Hangul syllable types, for rules GB6 to GB8.
const (
	hangulNone = iota
	hangulL    // leading consonant
	hangulV    // vowel
	hangulT    // trailing consonant
	hangulLV   // syllable without a trailing consonant
	hangulLVT  // syllable with one
)

func hangulType(r rune) int {
	switch {
	case r < 0x1100:
		return hangulNone
	case r <= 0x115F, r >= 0xA960 && r <= 0xA97C:
		return hangulL
	case r <= 0x11A7, r >= 0xD7B0 && r <= 0xD7C6:
		return hangulV
	case r <= 0x11FF, r >= 0xD7CB && r <= 0xD7FB:
		return hangulT
	case r >= 0xAC00 && r <= 0xD7A3:
		if (r-0xAC00)%28 == 0 {
			return hangulLV
		}
		return hangulLVT
	}
	return hangulNone
}

func hangulJoins(prev, r rune) bool {
	a := hangulType(prev)
	if a == hangulNone {
		return false
	}
	switch b := hangulType(r); a {
	case hangulL:
		return b != hangulNone && b != hangulT // GB6
	case hangulLV, hangulV:
		return b == hangulV || b == hangulT // GB7
	default: // hangulLVT, hangulT
		return b == hangulT // GB8
	}
}

func runes(s string) int { return utf8.RuneCountInString(s) }

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
