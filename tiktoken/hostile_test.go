package tiktoken

import (
	"strconv"
	"strings"
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
