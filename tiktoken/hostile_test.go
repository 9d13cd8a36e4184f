package tiktoken

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/race"
	tk "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// hostileClasses are the kinds of input that pre-tokenize to long pieces
// (or, for digits, base64 and JSON, to many short ones), in the order the
// tests and benchmarks report them.
var hostileClasses = []string{"spaces", "letters", "digits", "invalid", "dots", "cjk", "base64", "json"}

// hostileText returns about n bytes (at least n, less than n plus one
// unit) of one class of hostile input, deterministically:
//
//   - spaces: one run of ASCII spaces (indentation gone wrong);
//   - letters: random lowercase ASCII letters, one long word;
//   - digits: random ASCII digits (p50k and r50k keep them in one piece);
//   - invalid: "\xff\xfe" repeated, binary data read as text (each byte
//     counts as U+FFFD);
//   - dots: a run of '.' (test-runner progress output);
//   - cjk: random CJK ideographs, one piece in o200k_base;
//   - base64: random base64 alphabet, no padding or line breaks;
//   - json: minified JSON objects, one line.
func hostileText(class string, n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	x := uint32(12345)
	next := func() uint32 { x = x*1664525 + 1013904223; return x >> 8 }
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for b.Len() < n {
		switch class {
		case "spaces":
			b.WriteByte(' ')
		case "letters":
			b.WriteByte(byte('a' + next()%26))
		case "digits":
			b.WriteByte(byte('0' + next()%10))
		case "invalid":
			b.WriteString("\xff\xfe")
		case "dots":
			b.WriteByte('.')
		case "cjk":
			b.WriteRune(rune(0x4e00 + next()%2000))
		case "base64":
			b.WriteByte(b64[next()%64])
		case "json":
			b.WriteString(`{"id":`)
			b.WriteString(strconv.Itoa(int(next() % 100000)))
			b.WriteString(`,"name":"item`)
			b.WriteString(strconv.Itoa(int(next() % 1000)))
			b.WriteString(`","ok":true},`)
		default:
			panic("hostileText: unknown class " + class)
		}
	}
	return b.String()
}

// referenceEncoders builds, once per encoding, tiktoken-go's encoder with
// the reference pattern, whose repetitions are unbounded: the reference
// counts. Its merging is quadratic in the length of a piece, so tests only
// give it short text.
var referenceEncoders = func() map[string]func() (*tk.Tiktoken, error) {
	m := make(map[string]func() (*tk.Tiktoken, error), len(specs))
	for name, s := range specs {
		m[name] = sync.OnceValues(func() (*tk.Tiktoken, error) {
			ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(s.file)
			if err != nil {
				return nil, err
			}
			return newEncoder(ranks, s.special, s.pattern)
		})
	}
	return m
}()

func newEncoder(ranks, special map[string]int, pattern string) (*tk.Tiktoken, error) {
	bpe, err := tk.NewCoreBPE(ranks, special, pattern)
	if err != nil {
		return nil, err
	}
	return tk.NewTiktoken(bpe, &tk.Encoding{PatStr: pattern, MergeableRanks: ranks, SpecialTokens: special}, nil), nil
}

// referenceCount returns the reference count of s: tiktoken-go with the
// unbounded pattern.
func referenceCount(tb testing.TB, enc, s string) int {
	tb.Helper()
	e, err := referenceEncoders[enc]()
	if err != nil {
		tb.Fatal(err)
	}
	return len(e.EncodeOrdinary(s))
}

// deviationBound is the most a count may differ from the reference: one
// token per maxRepeat characters. It holds for every hostile class in the
// tests; most classes deviate by zero (see TestHostileDeviation).
func deviationBound(s string) int {
	return (utf8.RuneCountInString(s) + maxRepeat - 1) / maxRepeat
}

func TestBoundRepetitions(t *testing.T) {
	tests := []struct {
		pattern, want, reason string
	}{
		{`a*`, `a{0,9}`, "star becomes {0,n}"},
		{`a+`, `a{1,9}`, "plus becomes {1,n}"},
		{`\s+(?!\S)|\s+`, `\s{1,9}(?!\S)|\s{1,9}`, "after an escape, and in every alternative"},
		{`\p{N}{1,3}`, `\p{N}{1,3}`, "bounded repetitions are kept"},
		{`[^\r\n\p{L}\p{N}]?\p{L}+`, `[^\r\n\p{L}\p{N}]?\p{L}{1,9}`, "? is bounded already; classes and \\p{..} pass through"},
		{`[+*]+`, `[+*]{1,9}`, "+ and * inside a class are literal"},
		{`\++\*`, `\+{1,9}\*`, "escaped + and * are literal"},
		{`[\]+]*`, `[\]+]{0,9}`, "an escaped ] does not end a class"},
		{`(?i:'s|'t)`, `(?i:'s|'t)`, "groups and flags pass through"},
		{`é+`, `é{1,9}`, "non-ASCII runes are copied whole"},
		{specs[Cl100kBase].pattern,
			`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}{1,9}|\p{N}{1,3}| ?[^\s\p{L}\p{N}]{1,9}[\r\n]{0,9}|\s{0,9}[\r\n]{1,9}|\s{1,9}(?!\S)|\s{1,9}`,
			"the cl100k_base pattern"},
		{specs[P50kBase].pattern,
			`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}{1,9}| ?\p{N}{1,9}| ?[^\s\p{L}\p{N}]{1,9}|\s{1,9}(?!\S)|\s{1,9}`,
			"the p50k_base and r50k_base pattern: digit runs are bounded too"},
	}
	for _, tt := range tests {
		if got := boundRepetitions(tt.pattern, 9); got != tt.want {
			t.Errorf("boundRepetitions(%q, 9) = %q, want %q: %s", tt.pattern, got, tt.want, tt.reason)
		}
	}
	// Every encoding's pattern: nothing unbounded is left outside classes.
	for name, s := range specs {
		p := s.boundedPattern()
		if _, err := tk.NewCoreBPE(map[string]int{}, nil, p); err != nil {
			t.Errorf("%s: bounded pattern does not compile: %v", name, err)
		}
		if boundRepetitions(p, maxRepeat) != p {
			t.Errorf("%s: bounded pattern %q still has an unbounded repetition", name, p)
		}
	}
}

// TestHostilePiecesBounded checks the structural guarantee: whatever the
// input, the pieces handed to byte-pair merging are bounded, so the merging
// work per byte is bounded. It builds each encoding's splitter (the
// Counter's bounded pattern, through the same tiktoken-go code) over a
// synthetic vocabulary that holds the single bytes and one long token,
// unit copies of one character: a piece of exactly that token is one token,
// and any other piece merges nothing and costs a token per byte. A run of
// 8*unit copies therefore counts 8 exactly when the splitter cut it into
// pieces of unit characters. The reference pattern, as a control, keeps the
// run in one piece.
func TestHostilePiecesBounded(t *testing.T) {
	tests := []struct {
		enc    string
		char   string
		unit   int
		reason string
	}{
		{O200kBase, " ", maxRepeat, `spaces: \s+(?!\S) is bounded`},
		{O200kBase, "\n", 2 * maxRepeat, `newlines: \s*[\r\n]+ chains two runs`},
		{O200kBase, "a", maxRepeat, "lowercase letters: the lowercase run of the first alternative"},
		{O200kBase, "A", maxRepeat, "uppercase letters: the second alternative"},
		{O200kBase, "漢", 2 * maxRepeat, "CJK (Lo) is in both letter runs of the first alternative"},
		{O200kBase, "\uFFFD", maxRepeat, "invalid UTF-8 is U+FFFD, a symbol: the punctuation run"},
		{O200kBase, ".", maxRepeat, "punctuation run"},
		{O200kBase, "/", 2 * maxRepeat, "the punctuation run chains [\\r\\n/]*"},
		{Cl100kBase, " ", maxRepeat, `spaces: \s+(?!\S) is bounded`},
		{Cl100kBase, "a", maxRepeat, `letters: \p{L}+`},
		{Cl100kBase, "漢", maxRepeat, `CJK: \p{L}+`},
		{Cl100kBase, "\uFFFD", maxRepeat, "invalid UTF-8: the punctuation run"},
		{P50kBase, "7", maxRepeat, `digits: p50k keeps \p{N}+ in one piece`},
		{R50kBase, "\uFFFD", maxRepeat, "invalid UTF-8: the punctuation run"},
	}
	for _, tt := range tests {
		s := specs[tt.enc]
		vocab := map[string]int{}
		for b := range 256 {
			vocab[string([]byte{byte(b)})] = b
		}
		vocab[strings.Repeat(tt.char, tt.unit)] = 256
		text := strings.Repeat(tt.char, 8*tt.unit)
		bounded, err := newEncoder(vocab, nil, s.boundedPattern())
		if err != nil {
			t.Fatal(err)
		}
		if got := len(bounded.EncodeOrdinary(text)); got != 8 {
			t.Errorf("%s %q x %d: %d tokens, want 8 pieces of %d characters: %s",
				tt.enc, tt.char, 8*tt.unit, got, tt.unit, tt.reason)
		}
		reference, err := newEncoder(vocab, nil, s.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(reference.EncodeOrdinary(text)), len(text); got != want {
			t.Errorf("control, reference pattern, %s %q x %d: %d tokens, want one unmerged piece of %d bytes",
				tt.enc, tt.char, 8*tt.unit, got, want)
		}
	}
}

// TestHostileDeviation compares counts of hostile text with the reference
// counts at 4 KB, where the reference is still cheap to compute: classes
// split into short pieces anyway (digits, base64, JSON) and runs whose
// longest tokens divide 256 (spaces, invalid UTF-8, dots) count exactly;
// random letters and CJK deviate by a few tokens; every class stays within
// deviationBound.
func TestHostileDeviation(t *testing.T) {
	tests := []struct {
		class  string
		exact  bool
		reason string
	}{
		{"spaces", true, "the longest space token (128 spaces) divides 256"},
		{"letters", false, "a cut inside one long word changes the merges around it"},
		{"digits", true, "cl100k and o200k split digits in threes"},
		{"invalid", true, "U+FFFD runs merge into tokens of 4 (cl100k) or 8 (o200k) U+FFFD, which divide 256"},
		{"dots", false, "a cut inside a run of dots can cost one token"},
		{"cjk", false, "a cut inside a CJK run changes the merges around it"},
		{"base64", true, "base64 splits at every digit, + and /"},
		{"json", true, "minified JSON is short pieces"},
	}
	for _, enc := range []string{O200kBase, Cl100kBase} {
		c := mustNew(t, enc)
		for _, tt := range tests {
			s := hostileText(tt.class, 4000)
			got, ref := c.CountText(s), referenceCount(t, enc, s)
			d := got - ref
			switch {
			case tt.exact && d != 0:
				t.Errorf("%s %s: %d tokens, reference %d: want exact: %s", enc, tt.class, got, ref, tt.reason)
			case d > deviationBound(s) || -d > deviationBound(s):
				t.Errorf("%s %s: %d tokens, reference %d: deviation %+d, want at most %d: %s",
					enc, tt.class, got, ref, d, deviationBound(s), tt.reason)
			}
		}
	}
}

// TestExactUpToMaxRepeat checks the other side of the bound: runs of
// exactly maxRepeat characters, and longer text of pieces no longer than
// that, count exactly as the reference.
func TestExactUpToMaxRepeat(t *testing.T) {
	tests := []struct {
		text, reason string
	}{
		{strings.Repeat(" ", maxRepeat) + "x", "a run of maxRepeat spaces before a word"},
		{strings.Repeat("a", maxRepeat), "a word of maxRepeat letters"},
		{strings.Repeat("\xff", maxRepeat), "maxRepeat invalid bytes"},
		{strings.Repeat(".", maxRepeat) + "\n", "a line of maxRepeat dots"},
		{strings.Repeat("-", 174) + "\n" + strings.Repeat("|---", 40), "the longest corpus pieces: rules of dashes"},
		{strings.Repeat("def f(x):\n    return x + 1\n\n", 200), "ordinary code, far longer than maxRepeat"},
		{strings.Repeat("word ", 2000), "ordinary prose, far longer than maxRepeat"},
	}
	for _, enc := range []string{O200kBase, Cl100kBase, P50kBase, R50kBase} {
		c := mustNew(t, enc)
		for _, tt := range tests {
			if got, ref := c.CountText(tt.text), referenceCount(t, enc, tt.text); got != ref {
				t.Errorf("%s: %d tokens, reference %d: %s", enc, got, ref, tt.reason)
			}
		}
	}
}

// TestHostileToolMessage is the regression test for quadratic counting:
// counting a tool message that carries 40 KB of binary data (a file read by
// a tool) took 7-11 s before repetitions were bounded, and 100 KB took
// 50 s. It asserts no time (TestHostilePiecesBounded is the structural
// guarantee); it checks the count of 40 KB of each hostile class against
// the reference count, computed once with the reference encoder
// (referenceCount takes up to 30 s on these inputs, hence constants).
func TestHostileToolMessage(t *testing.T) {
	tests := []struct {
		enc, class string
		ref        int
		reason     string
	}{
		{O200kBase, "invalid", 5000, "binary data: one run of 40,000 U+FFFD"},
		{O200kBase, "spaces", 313, "one run of 40,000 spaces"},
		{O200kBase, "letters", 20760, "one 40,000-letter word; deviates by +17"},
		{O200kBase, "digits", 13334, "digits: many pieces of three"},
		{O200kBase, "dots", 625, "one run of 40,000 dots"},
		{O200kBase, "cjk", 23531, "one run of 13,334 CJK ideographs"},
		{O200kBase, "base64", 27272, "base64: many short pieces"},
		{O200kBase, "json", 14062, "minified JSON: many short pieces"},
		{Cl100kBase, "invalid", 10000, "binary data: one run of 40,000 U+FFFD"},
		{Cl100kBase, "spaces", 313, "one run of 40,000 spaces"},
		{Cl100kBase, "letters", 21589, "one 40,000-letter word; deviates by +24"},
		{Cl100kBase, "digits", 13334, "digits: many pieces of three"},
		{Cl100kBase, "dots", 625, "one run of 40,000 dots"},
		{Cl100kBase, "cjk", 26981, "one run of 13,334 CJK ideographs"},
		{Cl100kBase, "base64", 28646, "base64: many short pieces"},
		{Cl100kBase, "json", 14062, "minified JSON: many short pieces"},
	}
	for _, tt := range race.Sample(tests, 4) { // (40 KB of each class, ten times the cost under the detector)
		c := mustNew(t, tt.enc)
		s := hostileText(tt.class, 40_000)
		m := history.Message{Role: history.RoleTool, ToolCallID: "a", Content: s}
		got := c.CountMessage(m) - 4 // framing: 3 + the role
		if d := got - tt.ref; d > deviationBound(s) || -d > deviationBound(s) {
			t.Errorf("%s %s: %d tokens, reference %d: deviation %+d, want at most %d: %s",
				tt.enc, tt.class, got, tt.ref, d, deviationBound(s), tt.reason)
		}
	}
}
