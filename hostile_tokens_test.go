package history

import (
	"math"
	bigint "math/big"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// This file feeds hostile values to every counter and estimator of the
// package: binary and invalid UTF-8 text, control bytes, long runs, combining
// marks, and the extremes of every integer a caller can set (Part.Tokens,
// Size, Width, Height, Budget fields, a Counter's result).

// TestEstimateTextHostile pins the Heuristic's prices for bytes that are not
// text. Each o200k figure is tiktoken's count for the same input (see
// docs/tokens.md for how it was measured).
func TestEstimateTextHostile(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		want   int
		reason string
	}{
		{"one invalid byte", "\xff", 1, "a lone invalid byte: 1.75 units capped at one token per byte (o200k 1)"},
		{"invalid pair", "\xff\xfe", 2, "one run: 1.75 + 0.125 (o200k 1, cl100k 1)"},
		{"invalid run 8", strings.Repeat("\xff", 8), 3, "one run: 1.75 + 7/8 (o200k 1, cl100k 2)"},
		{"invalid run 4096", strings.Repeat("\xff", 4096), 514, "o200k merges U+FFFD eight at a time: 512 (the old rule said 4096)"},
		{"separate runs", "\xffab\xffab\xffab\xff", 9, "each run is new: 4 x 1.75 + 6 letters (1.24)"},
		{"cap at one per byte", "\xffa\xffa\xffa\xff", 7, "4 x 1.75 + 0.62 is capped at the 7 bytes"},
		{"truncated sequence", "\xe6\x97", 2, "an incomplete character is a run of two invalid bytes"},
		{"stray bytes in text", strings.Repeat("the quick brown fox jumps over\xff the dog ", 100), 901, "a run start also splits its word (o200k 901)"},
		{"latin-1 text", strings.Repeat("caf\xe9 na\xefve r\xe9sum\xe9 ", 100), 960, "Latin-1 read as UTF-8: one run per accent (o200k 901)"},
		{"NUL run", strings.Repeat("\x00", 4096), 4096, "controls cost a token each (cl100k 4096, o200k 2048)"},
		{"DEL run", strings.Repeat("\x7f", 4096), 4096, "DEL costs a token (o200k and cl100k 4096)"},
		{"whitespace controls", strings.Repeat("\t\n\r\v\f", 100), 302, "tab, newline, CR, VT and FF are syntax, not controls"},
		{"escape sequences", strings.Repeat("\x1b[1;31mERROR\x1b[0m: failed\n", 100), 1024, "ANSI colours: ESC is a control (o200k 1400, cl100k 1200)"},
		{"combining marks", "a" + strings.Repeat("\u0301", 2000), 1201, "a mark is a 2-byte character (o200k 2001)"},
		{"valid after invalid", "\xff\u00e9", 3, "a valid character ends the run: 1.75 + 0.6"},
	}
	for _, tc := range tests {
		if got := EstimateText(tc.text); got != tc.want {
			t.Errorf("%s: EstimateText = %d, want %d: %s", tc.name, got, tc.want, tc.reason)
		}
	}
}

// estimateTextRef is EstimateText's rule one byte at a time, written
// independently of the word arithmetic and the price table.
func estimateTextRef(s string) int {
	units, end := 0, -1
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
				units += letterRate
			case c == ' ':
				units += spaceRate
			case c < '\t', '\r' < c && c < ' ', c == 0x7f:
				units += controlRate
			default:
				units += symbolRate
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1 && i == end:
			units += invalidRun
		case r == utf8.RuneError && size == 1:
			units += invalidRate
		default:
			units += int(runeRate(r, size))
		}
		if r == utf8.RuneError && size == 1 {
			end = i + 1
		}
		i += size
	}
	return min((units+rateScale-1)/rateScale, len(s))
}

// FuzzCounters feeds hostile text and integers to every counter and
// estimator: none may panic, return a negative count or wrap around, and
// adding to a message never lowers its count.
func FuzzCounters(f *testing.F) {
	f.Add("hello world", 0, 1024, 1024, int64(4000), "high", 0)
	f.Add("\xff\xfe\x00\x01 binary \x7f\x1b[0m", math.MaxInt, math.MaxInt, 1, int64(math.MaxInt64), "low", math.MaxInt)
	f.Add(strings.Repeat("\xff", 100)+"a\u0301\u0301\u0301", -1, 10000, 1, int64(-1), "", math.MinInt)
	f.Add("cafe\u0301 👨\u200d👩\u200d👧 🇫🇷", 42, math.MinInt, math.MaxInt, int64(math.MinInt64), "auto", -1)
	f.Add(strings.Repeat("\x00", 64)+"\xe6\x97", math.MinInt, 0, 0, int64(0), "LOW", 1)
	f.Fuzz(func(t *testing.T, text string, tokens, width, height int, size int64, detail string, count int) {
		est := EstimateText(text)
		if est < 0 || est > len(text) || (est == 0) != (text == "") {
			t.Fatalf("EstimateText(%q) = %d: want 0 for \"\" only, else 1..%d", text, est, len(text))
		}
		if ref := estimateTextRef(text); est != ref {
			t.Fatalf("EstimateText(%q) = %d, byte-at-a-time rule %d", text, est, ref)
		}

		img := ImageTokens(width, height, detail)
		switch {
		case strings.EqualFold(detail, "low"):
			if img != 85 {
				t.Fatalf("low detail %d", img)
			}
		case width <= 0 || height <= 0:
			if img != 765 {
				t.Fatalf("unknown size %dx%d: %d", width, height, img)
			}
		case img < 255 || img > 1445 || (img-85)%170 != 0:
			t.Fatalf("ImageTokens(%d, %d) = %d: want 85 + 170k, 1 <= k <= 8", width, height, img)
		}

		parts := []Part{
			{Type: PartText, Text: text, Tokens: tokens},
			{Type: PartReasoning, Text: text},
			{Type: PartImage, Width: width, Height: height, Detail: detail, Tokens: tokens},
			{Type: PartFile, Size: size, MIMEType: detail},
			{Type: PartFile, Size: size, MIMEType: "text/plain", Tokens: tokens},
			{Type: PartType(detail), Size: size},
		}
		m := Message{Role: Role(detail), Content: text}
		prev := Heuristic().CountMessage(m)
		if prev < tokensPerMessage {
			t.Fatalf("CountMessage = %d, below the framing", prev)
		}
		for _, p := range parts {
			pt := PartTokens(p, nil)
			if pt < 0 || (p.Tokens > 0 && pt != p.Tokens) {
				t.Fatalf("PartTokens(%+v) = %d", p, pt)
			}
			if p.Type == PartFile && p.Tokens <= 0 && size > 0 && pt != fileTokensRef(size, p.MIMEType) {
				t.Fatalf("PartTokens(%+v) = %d, want %d", p, pt, fileTokensRef(size, p.MIMEType))
			}
			m.Parts = append(m.Parts, p)
			n := Heuristic().CountMessage(m)
			if n < prev || n != satAdd(prev, pt) {
				t.Fatalf("adding %+v (%d tokens) took the count from %d to %d", p, pt, prev, n)
			}
			prev = n
		}
		m.Name = text
		m.ToolCalls = []ToolCall{{ID: "c", Name: detail, Arguments: text}}
		if n := Heuristic().CountMessage(m); n < prev {
			t.Fatalf("a name and a tool call lowered the count from %d to %d", prev, n)
		}

		msgs := []Message{m, m, {Role: RoleUser}}
		c := CounterFunc(func(Message) int { return count })
		if got, want := Estimate(msgs, c), satMulRef(len(msgs), count); got != want {
			t.Fatalf("Estimate of 3 messages at %d = %d, want %d", count, got, want)
		}
		if e, one := Estimate(msgs, nil), Heuristic().CountMessage(m); e < one {
			t.Fatalf("Estimate %d below one of its messages %d", e, one)
		}

		b := Budget{Window: width, Output: height, Reserve: tokens, Limit: count}
		if got, want := b.Input(), budgetRef(b); got != want {
			t.Fatalf("%+v.Input() = %d, want %d", b, got, want)
		}
	})
}

// satMulRef is n*max(k, 0) saturated at math.MaxInt, by 128-bit product.
func satMulRef(n, k int) int {
	if k <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(n), uint64(k))
	if hi != 0 || lo > math.MaxInt {
		return math.MaxInt
	}
	return int(lo)
}

// fileTokensRef is ceil(size/per) in arbitrary precision, capped at MaxInt.
func fileTokensRef(size int64, mime string) int {
	per := int64(binaryFileBytesPerToken)
	if textLike(mime) {
		per = textFileBytesPerToken
	}
	q := new(bigint.Int).Add(bigint.NewInt(size), bigint.NewInt(per-1))
	q.Div(q, bigint.NewInt(per))
	if !q.IsInt64() || q.Int64() > math.MaxInt {
		return math.MaxInt
	}
	return int(q.Int64())
}

// budgetRef is Budget.Input's documented rule in arbitrary precision.
func budgetRef(b Budget) int {
	if b.Window <= 0 {
		return max(b.Limit, 0)
	}
	in := bigint.NewInt(int64(b.Window))
	in.Sub(in, bigint.NewInt(int64(max(b.Output, 0))))
	in.Sub(in, bigint.NewInt(int64(max(b.Reserve, 0))))
	n := 0
	if in.Sign() > 0 {
		n = int(in.Int64())
	}
	if b.Limit > 0 {
		n = min(n, b.Limit)
	}
	return n
}

// hostileText returns n bytes of one kind of hostile input, the same for
// every call.
func hostileText(kind string, n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	switch kind {
	case "binary": // uniformly random bytes
		for i := range b {
			b[i] = byte(r.Uint32())
		}
	case "invalid": // one long run of bytes that are never valid UTF-8
		for i := range b {
			b[i] = 0xff
		}
	case "nul":
	case "control": // random C0 control bytes
		for i := range b {
			b[i] = byte(r.IntN(0x20))
		}
	case "marks": // a base letter buried under combining marks
		return ("a" + strings.Repeat("\u0301", n/2))[:n]
	}
	return string(b)
}

var hostileKinds = []string{"binary", "invalid", "nul", "control", "marks"}

// BenchmarkEstimateTextHostile shows EstimateText linear on hostile input:
// the same ns/byte at 10 KB and at 1 MB. Each iteration reads the next
// chunk of an 8 MB buffer, so that a small input is not the same bytes
// every time (a branch predictor learns 10 KB of random bytes by heart,
// which real inputs never let it do).
func BenchmarkEstimateTextHostile(b *testing.B) {
	for _, kind := range hostileKinds {
		pool := hostileText(kind, 8<<20)
		for _, n := range []int{10 << 10, 1 << 20} {
			b.Run(kind+"/"+strconv.Itoa(n>>10)+"KB", func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				off := 0
				for b.Loop() {
					EstimateText(pool[off : off+n])
					off = (off + n) % (len(pool) - n)
				}
			})
		}
	}
}

// BenchmarkHeuristicHostile counts a message whose content, name, tool-call
// arguments and parts are all 1 MB of random bytes.
func BenchmarkHeuristicHostile(b *testing.B) {
	s := hostileText("binary", 1<<20)
	m := Message{Role: RoleTool, Content: s, Name: s[:1024],
		ToolCalls: []ToolCall{{Name: s[:64], Arguments: s}},
		Parts:     []Part{{Type: PartText, Text: s}, {Type: PartImage, Width: math.MaxInt, Height: 1}, {Type: PartFile, Size: math.MaxInt64}}}
	b.SetBytes(int64(3*len(s) + 1024 + 64))
	b.ReportAllocs()
	for b.Loop() {
		Heuristic().CountMessage(m)
	}
}
