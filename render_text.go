// This file owns the text a transcript renders into: messages formatted as
// pieces read without copying, and how the renderer cuts them, on
// character boundaries that never split a grapheme cluster (an emoji, a
// flag, a Hangul syllable).

package history

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

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

// Hangul syllable types, for rules GB6 to GB8.
const (
	hangulNone = iota
	hangulL    // leading consonant
	hangulV    // vowel
	hangulT    // trailing consonant
	hangulLV   // syllable without a trailing consonant
	hangulLVT  // syllable with one
)
