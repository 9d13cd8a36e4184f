package history

// This file owns the text side of the overflow classifier: how an error text
// is normalized (case, white space, JSON and Python escapes) and how the
// phrases of the provider table (overflow_providers.go) are found in it, as
// whole words, in one pass.

import (
	"slices"
	"unicode/utf8"
)

// normalizeText appends to dst the normalized form of s and returns it:
//
//   - ASCII letters are lowercased; other bytes are kept as they are;
//   - escapes are decoded, so a JSON or Python body quoted inside another
//     string reads like the plain message: \" \' \/ \` stand for the
//     character, \n \r \t \f \b \v for white space, \uXXXX for its code
//     point. A run of backslashes counts as one, so doubly escaped bodies
//     (a JSON string inside a JSON string) decode too. A backslash before
//     anything else is dropped;
//   - backticks are dropped (Anthropic and TGI quote parameter names);
//   - every run of white space becomes one space, with none at the start
//     or the end (SDKs and logs re-wrap long messages).
//
// It runs in one pass, in time linear in len(s).
func normalizeText(dst []byte, s string) []byte {
	// The output is never longer than s: an escape decodes to fewer bytes
	// than it spans, and a space stands for at least one byte of s. No two
	// spaces are ever adjacent in the output, so "the last byte written is
	// a space" is the whole white-space state.
	start := len(dst)
	dst = slices.Grow(dst, len(s))[:start+len(s)]
	w := start
	for i := 0; i < len(s); i++ {
		c := s[i]
		if t := normByte[c]; t != 0 {
			dst[w] = t
			w++
			continue
		}
		if c == '\\' {
			j := i + 1
			for j < len(s) && s[j] == '\\' {
				j++
			}
			if j == len(s) {
				break
			}
			i = j
			switch e := s[j]; e {
			case 'n', 'r', 't', 'f', 'b', 'v':
				c = ' '
			case 'u':
				r, ok := hex4(s, j+1)
				if !ok {
					c = 'u'
					break
				}
				i = j + 4
				if r >= utf8.RuneSelf {
					w += utf8.EncodeRune(dst[w:], r)
					continue
				}
				c = byte(r)
			default: // \" \' \/ \` and any other: the character itself
				c = e
			}
			if t := normByte[c]; t != 0 {
				dst[w] = t
				w++
				continue
			}
		}
		if c == '`' || c == '\\' {
			continue
		}
		// White space (and NUL): one space, never first, never doubled.
		if w > start && dst[w-1] != ' ' {
			dst[w] = ' '
			w++
		}
	}
	if w > start && dst[w-1] == ' ' {
		w--
	}
	return dst[:w]
}

// normByte maps each byte that normalizes to itself or to its lowercase form
// to that form, and every other byte (white space, NUL, backslash, backtick)
// to 0.
var normByte = func() (t [256]byte) {
	for c := 1; c < 256; c++ {
		switch b := byte(c); {
		case b == ' ', b == '\t', b == '\n', b == '\r', b == '\v', b == '\f', b == '\\', b == '`':
		case 'A' <= b && b <= 'Z':
			t[c] = b + 'a' - 'A'
		default:
			t[c] = b
		}
	}
	return t
}()

// hex4 decodes the four hex digits at s[i:i+4].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// isWordByte reports whether c belongs to a word: ASCII letters and digits
// of normalized text, and every byte of a multi-byte UTF-8 character. Every
// other byte (white space, punctuation, '_', '-', quotes) separates words.
func isWordByte(c byte) bool { return wordByte[c] }

var wordByte = func() (t [256]bool) {
	for c := range 256 {
		b := byte(c)
		t[c] = 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b >= utf8.RuneSelf
	}
	return t
}()

// phraseWords splits a phrase of the provider table into its words, with
// the same rules as the text it is matched against.
func phraseWords(p string) []string {
	b := normalizeText(nil, p)
	var words []string
	for i, j := nextWord(b, 0); i < len(b); i, j = nextWord(b, j) {
		words = append(words, string(b[i:j]))
	}
	return words
}

// nextWord returns the next word of b at or after from, as b[i:j]; i is
// len(b) when there is none. A word is a run of bytes for which isWordByte
// holds.
func nextWord(b []byte, from int) (i, j int) {
	i = from
	for i < len(b) && !isWordByte(b[i]) {
		i++
	}
	j = i
	for j < len(b) && isWordByte(b[j]) {
		j++
	}
	return i, j
}

// maxPhraseWords bounds the length of a table phrase, in words.
const maxPhraseWords = 16

// phrase is one entry of a phraseIndex.
type phrase struct {
	words []string
	veto  bool // a not-overflow phrase; otherwise an overflow signal
}

// phraseIndex finds table phrases in normalized text as runs of whole,
// consecutive words. It is keyed by each phrase's last word, so a scan costs
// one map lookup per word of text plus a comparison per candidate.
type phraseIndex struct {
	byLast map[string][]phrase
	// maybe has the bit wordKey(w) set for the last word w of every phrase:
	// a cheap test that spares nearly every word of a text the map lookup.
	maybe [1 << 16 / 64]uint64
}

// wordKey hashes a word's length and first, middle and last bytes to 16 bits.
func wordKey(w []byte) uint32 {
	n := len(w)
	return (uint32(n)*0x9E37 ^ uint32(w[0])<<8 ^ uint32(w[n/2])<<4 ^ uint32(w[n-1])) & 0xFFFF
}

func (x *phraseIndex) mayEnd(w []byte) bool {
	k := wordKey(w)
	return x.maybe[k>>6]&(1<<(k&63)) != 0
}

// maxLastWord bounds the length of a phrase's last word.
const maxLastWord = 40

func newPhraseIndex(signals, vetoes []string) phraseIndex {
	x := &phraseIndex{byLast: map[string][]phrase{}}
	add := func(p string, veto bool) {
		w := phraseWords(p)
		if len(w) == 0 || len(w) > maxPhraseWords || len(w[len(w)-1]) > maxLastWord {
			panic("history: bad overflow table phrase " + quote(p))
		}
		last := w[len(w)-1]
		k := wordKey([]byte(last))
		x.maybe[k>>6] |= 1 << (k & 63)
		for _, q := range x.byLast[last] {
			if q.veto == veto && equalWords(q.words, w) {
				return
			}
		}
		x.byLast[last] = append(x.byLast[last], phrase{words: w, veto: veto})
	}
	for _, p := range signals {
		add(p, false)
	}
	for _, p := range vetoes {
		add(p, true)
	}
	return *x
}

func equalWords(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// span is a half-open byte range of normalized text.
type span struct{ start, end int }

// scan calls match for every table phrase found in the normalized text b,
// in text order, with the span of the phrase. It stops early when match
// returns false. It runs in one pass over b.
func (x *phraseIndex) scan(b []byte, match func(p *phrase, at span) bool) {
	var ring [maxPhraseWords]span // the last words, ring[n%len] newest
	n := 0
	for i, j := nextWord(b, 0); i < len(b); i, j = nextWord(b, j) {
		ring[n%maxPhraseWords] = span{i, j}
		n++
		if j-i > maxLastWord || !x.mayEnd(b[i:j]) {
			continue
		}
		cands := x.byLast[string(b[i:j])]
		for k := range cands {
			p := &cands[k]
			w := len(p.words)
			if w > n {
				continue
			}
			ok := true
			for back := 1; back < w && ok; back++ {
				s := ring[(n-1-back)%maxPhraseWords]
				ok = string(b[s.start:s.end]) == p.words[w-1-back]
			}
			if ok {
				first := ring[(n-w)%maxPhraseWords]
				if !match(p, span{first.start, j}) {
					return
				}
			}
		}
	}
}
