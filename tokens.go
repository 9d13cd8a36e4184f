package history

import (
	"math/bits"
	"unicode/utf8"
)

// Counter reports how many tokens one message costs a model, framing
// overhead (role markers, separators, tool-call wrapping) included.
//
// Implementations must be deterministic and safe for concurrent use. The
// library calls CountMessage at most once per message per trim and sums the
// results, so a Counter never sees a whole history. Exact counters for
// OpenAI-family encodings live in the github.com/histrim/history/tiktoken
// package; NewCache memoizes any Counter.
//
// A negative count is treated as zero. Sums of counts saturate at
// math.MaxInt instead of wrapping, so a Counter that returns huge values
// makes a history cost "more than any budget", never less.
type Counter interface {
	CountMessage(m Message) int
}

// CounterFunc adapts an ordinary function to the Counter interface.
type CounterFunc func(m Message) int

// CountMessage returns f(m).
func (f CounterFunc) CountMessage(m Message) int { return f(m) }

// Heuristic is the dependency-free default Counter. It estimates without a
// vocabulary: ASCII text at a rate calibrated against the reference
// tokenizers on real agent transcripts (code, JSON, prose), CJK and other
// non-ASCII text per character, plus the same per-message, per-name and
// per-tool-call framing as the exact counters, and the Part rules of
// PartTokens. Its measured error is documented in docs/tokens.md. It never
// allocates and is safe for concurrent use. Heuristic is a function so that
// no package can replace the default Counter for the whole process.
func Heuristic() Counter { return heuristic{} }

// Framing overhead shared by the heuristic and the exact counters, as
// documented in docs/tokens.md: OpenAI's chat format spends 3 tokens per
// message plus its role (one token for each of the four roles), 1 per author
// name, and 3 per tool call besides its name and arguments.
const (
	tokensPerMessage  = 3
	tokensPerRole     = 1
	tokensPerName     = 1
	tokensPerToolCall = 3
)

type heuristic struct{}

// CountMessage sums with satAdd: every term is at least zero, so adding a
// name, a tool call or a part never lowers the count, and the sum stops at
// math.MaxInt.
func (heuristic) CountMessage(m Message) int {
	n := satAdd(tokensPerMessage, EstimateText(m.Content))
	switch m.Role {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		n = satAdd(n, tokensPerRole)
	default:
		n = satAdd(n, EstimateText(string(m.Role)))
	}
	if m.Name != "" {
		n = satAdd(n, satAdd(tokensPerName, EstimateText(m.Name)))
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		n = satAdd(n, tokensPerToolCall)
		n = satAdd(n, EstimateText(c.Name))
		n = satAdd(n, EstimateText(c.Arguments))
	}
	for i := range m.Parts {
		n = satAdd(n, PartTokens(m.Parts[i], EstimateText))
	}
	return n
}

// Estimate returns the total token count of msgs under c: the sum of
// c.CountMessage over every message. A nil c means [Heuristic]. It is the
// figure the trim functions compare with a budget.
//
// No messages cost 0. A negative count from c is treated as zero, and the
// sum saturates at math.MaxInt instead of wrapping, so the result is never
// negative and a history never "fits" because its count overflowed.
func Estimate(msgs []Message, c Counter) int {
	if c == nil {
		c = heuristic{}
	}
	n := 0
	for i := range msgs {
		n = satAdd(n, clampCount(c.CountMessage(msgs[i])))
	}
	return n
}

// Heuristic text rates, fitted on the shared corpus of real agent transcripts
// (code, JSON, shell output, prose) against o200k_base reference counts; see
// docs/tokens.md for the fit and the measured error. Rates are fixed-point:
// tokens = ceil(units/rateScale).
//
// ASCII bytes fall in four classes: letters (merged into word tokens, about
// 1 token per 4.8 letters), spaces (mostly absorbed into the following word),
// control bytes (C0 controls other than tab, newline, vertical tab, form feed
// and carriage return, and DEL: BPE vocabularies hardly merge them, 1 token
// each in o200k_base and cl100k_base) and everything else (digits,
// punctuation, whitespace controls: JSON and code syntax, about 1 token per
// 1.7 bytes). Non-ASCII text is counted per character. Invalid UTF-8 is
// counted per run, as measured against o200k_base (docs/tokens.md): each
// invalid byte becomes U+FFFD on the wire, which o200k_base merges eight at a
// time, so each byte of a run costs an eighth of a token after the first;
// the first costs 1.75: its own token and the split of the word it lands in.
const (
	rateScale   = 1000
	letterRate  = 207  // per ASCII letter
	spaceRate   = 105  // per ASCII space
	symbolRate  = 604  // per other ASCII byte: digits, punctuation, whitespace controls
	controlRate = 1000 // per C0 control byte other than \t \n \v \f \r, and per DEL
	cjkRate     = 1000 // per CJK, kana or hangul character: about 1 token in o200k
	latinRate   = 600  // per other 2-byte UTF-8 character (accented Latin, Greek, Cyrillic, ...)
	glyphRate   = 1900 // per other 3-byte character (punctuation, arrows, box drawing, ...), fitted
	astralRate  = 2000 // per character outside the BMP (emoji, ...)
	invalidRate = 1750 // per invalid UTF-8 byte that starts a run of them
	invalidRun  = 125  // per further invalid byte of the same run
)

// SWAR masks for classifying eight ASCII bytes at once.
const (
	lanes  = 0x0101010101010101
	highs  = 0x80 * lanes
	blanks = 0x20 * lanes
)

// asciiUnits is the cost in units of each ASCII byte, for the bytes the
// eight-at-a-time path leaves to the byte-at-a-time one. It prices the same
// classes as the word arithmetic (TestEstimateTextSWAR checks that they
// agree).
var asciiUnits = func() (t [utf8.RuneSelf]uint16) {
	for c := range t {
		switch {
		case c|0x20 >= 'a' && c|0x20 <= 'z':
			t[c] = letterRate
		case c == ' ':
			t[c] = spaceRate
		default: // control bytes too: EstimateText adds their surcharge
			t[c] = symbolRate
		}
	}
	return t
}()

// EstimateText estimates the tokens of s without a vocabulary. It is the text
// rule of [Heuristic], exported so that custom Counters can reuse it. It runs
// in a single pass over s, classifying eight ASCII bytes at a time with word
// arithmetic, and never allocates: its cost is linear in len(s) whatever the
// bytes are.
//
// The empty string is 0 tokens; any other string at least 1 and at most
// len(s), so the result never overflows. Bytes that are not text are priced
// as o200k_base prices them: control bytes a token each, a run of invalid
// UTF-8 1.75 tokens plus an eighth per further byte (the rates and their
// measurement are in docs/tokens.md).
func EstimateText(s string) int {
	if s == "" {
		return 0
	}
	// ASCII bytes met in words of eight are tallied by class and priced
	// once at the end; every other byte is priced as it is met, control
	// bytes as symbols. Control bytes are counted on the way, for their
	// surcharge: only in the blocks where the cheap rareMask sees a byte
	// below 0x20 (a line end, most often) is the exact controlMask
	// computed. Units never exceed 1750 per byte, so a uint64 holds them
	// for any string that fits in memory, and the final min keeps the int
	// conversion exact.
	var letters, spaces, ascii, units, controls uint64
	invalidEnd := -1 // index just past the last invalid byte
	i := 0
	for i < len(s) {
		// Fast path: sixteen, then eight ASCII bytes at a time. Letters
		// are the bytes whose lower-cased value lies in 'a'..'z'; spaces
		// the bytes equal to ' '. With bit 7 clear in every byte, the
		// additions below never carry into the next byte. The masks of
		// the second word move to bit 6 of each byte, so one count covers
		// both words.
		for ; i+16 <= len(s); i += 16 {
			w, v := word(s, i), word(s, i+8)
			if (w|v)&highs != 0 {
				break
			}
			letters += uint64(bits.OnesCount64(letterMask(w) | letterMask(v)>>1))
			spaces += uint64(bits.OnesCount64(nonSpaceMask(w) | nonSpaceMask(v)>>1))
			if (rareMask(w)|rareMask(v))&highs != 0 {
				controls += uint64(bits.OnesCount64(controlMask(w)&highs | (controlMask(v)&highs)>>1))
			}
			ascii += 16
		}
		for ; i+8 <= len(s); i += 8 {
			w := word(s, i)
			if w&highs != 0 {
				break
			}
			letters += uint64(bits.OnesCount64(letterMask(w)))
			spaces += uint64(bits.OnesCount64(nonSpaceMask(w)))
			if rareMask(w)&highs != 0 {
				controls += uint64(bits.OnesCount64(controlMask(w) & highs))
			}
			ascii += 8
		}
		if i >= len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			units += uint64(asciiUnits[c])
			if c < 0x09 || c > 0x0d && c < 0x20 || c == 0x7f {
				controls++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if i == invalidEnd {
				units += invalidRun
			} else {
				units += invalidRate
			}
			invalidEnd = i + 1
		} else {
			units += runeRate(r, size)
		}
		i += size
	}
	units += controls * (controlRate - symbolRate)
	spaces = ascii - spaces // the loops counted non-spaces
	units += letters*letterRate + spaces*spaceRate + (ascii-letters-spaces)*symbolRate
	return int(min((units+rateScale-1)/rateScale, uint64(len(s))))
}

// word returns the eight bytes of s at i as a little-endian word.
func word(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// letterMask sets bit 7 of each byte of the ASCII word w that is a letter.
func letterMask(w uint64) uint64 {
	lower := w | blanks
	return (lower + (0x80-'a')*lanes) &^ (lower + (0x7f-'z')*lanes) & highs
}

// nonSpaceMask sets bit 7 of each byte of the ASCII word w that is not ' '.
func nonSpaceMask(w uint64) uint64 {
	return ((w ^ blanks) + 0x7f*lanes) & highs
}

// rareMask sets bit 7 of each byte of the ASCII word w that is below 0x20
// (tabs and line ends too) or 0x7f, the only byte that carries into bit
// 7; other bits are noise. It is the cheap test of the main loop: only a
// block it flags is read with controlMask, which tells tabs and line ends
// (symbols) from the controls priced higher.
func rareMask(w uint64) uint64 {
	return ^(w + (0x80-0x20)*lanes) | (w + lanes)
}

// controlMask sets bit 7 of each byte of the ASCII word w that is a
// control byte countControls counts: below 0x09, 0x0e..0x1f, or 0x7f. No
// addition carries out of its byte (every byte is at most 0x7f); bits
// other than bit 7 are noise.
func controlMask(w uint64) uint64 {
	below09 := ^(w + (0x80-0x09)*lanes)
	in0e1f := ^(w + (0x80-0x20)*lanes) & (w + (0x80-0x0e)*lanes)
	del := w + lanes
	return below09 | in0e1f | del
}

// countControls counts the control bytes of s: below 0x20 other than
// \t..\r, and 0x7f, eight ASCII bytes at a time (the tests' reference for
// EstimateText's count on the way). Bytes of multi-byte UTF-8 sequences
// are never below 0x80, so every such byte is an ASCII control.
func countControls(s string) uint64 {
	var n uint64
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := word(s, i)
		if w&highs == 0 {
			n += uint64(bits.OnesCount64(controlMask(w) & highs))
			continue
		}
		for _, c := range []byte(s[i : i+8]) {
			if c < 0x09 || c > 0x0d && c < 0x20 || c == 0x7f {
				n++
			}
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x09 || c > 0x0d && c < 0x20 || c == 0x7f {
			n++
		}
	}
	return n
}

// runeRate is the cost in units of one valid non-ASCII character of size
// bytes.
func runeRate(r rune, size int) uint64 {
	switch {
	case r >= 0x1100 && r <= 0x11FF, // Hangul Jamo
		r >= 0x2E80 && r <= 0x9FFF,   // CJK radicals, kana, CJK unified
		r >= 0xAC00 && r <= 0xD7AF,   // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF,   // CJK compatibility
		r >= 0xFF00 && r <= 0xFFEF,   // full-width forms
		r >= 0x20000 && r <= 0x3FFFF: // CJK extensions
		return cjkRate
	case size == 2:
		return latinRate
	case size == 3:
		return glyphRate
	default:
		return astralRate
	}
}
