package tiktoken

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/histrim/history"
)

// FuzzCountText checks, for any text and both chat encodings:
//
//   - no panic; 0 tokens for empty text, at least 1 otherwise;
//   - at most one token per byte of the text as tokenized (an invalid byte
//     is U+FFFD, three bytes): every token stands for at least one byte;
//   - text of at most maxRepeat characters, where no repetition of the
//     pattern can reach the bound, counts exactly as the reference;
//   - CountMessage and CountRequest add exactly their framing to CountText,
//     wherever the text sits (content, name, tool call, parts); IDs are
//     free.
func FuzzCountText(f *testing.F) {
	for _, class := range hostileClasses {
		f.Add(hostileText(class, 300))
	}
	for _, s := range []string{
		"", "\x00", strings.Repeat("\x00", 600), "\xff\xfe", strings.Repeat("\xff\xfe", 200),
		"<|endoftext|>", " \n \r\n\t", "'s'T'LL'd", "e\u0301", "👍🏽", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		strings.Repeat(" ", maxRepeat+1) + "x", strings.Repeat("A", 300) + "a", strings.Repeat("\n ", 200),
		strings.Repeat("漢", maxRepeat) + "a", strings.Repeat("/", 600), "hello world",
	} {
		f.Add(s)
	}
	counters := []*Counter{mustNew(f, O200kBase), mustNew(f, Cl100kBase)}
	f.Fuzz(func(t *testing.T, s string) {
		var counts [2]int
		for i, c := range counters {
			n := c.CountText(s)
			counts[i] = n
			if (n == 0) != (s == "") || n < 0 {
				t.Fatalf("%s: CountText(%q) = %d", c.Encoding(), s, n)
			}
			if b := tokenizedBytes(s); n > b {
				t.Fatalf("%s: CountText(%q) = %d tokens for %d bytes", c.Encoding(), s, n, b)
			}
			if utf8.RuneCountInString(s) <= maxRepeat {
				if ref := referenceCount(t, c.Encoding(), s); n != ref {
					t.Fatalf("%s: CountText(%q) = %d, reference %d", c.Encoding(), s, n, ref)
				}
			}
		}
		// The entry points: s in every text field of one message. Checked
		// with one encoding, since each field costs a count of s.
		c, n := counters[0], counts[0]
		m := history.Message{Role: history.RoleTool, ToolCallID: s, Content: s, Name: s,
			ToolCalls: []history.ToolCall{{ID: s, Name: s, Arguments: s}},
			Parts:     []history.Part{{Type: history.PartText, Text: s}, {Type: history.PartReasoning, Text: s}}}
		want := 4 + n + 3 + 2*n + 2*n // framing and role, content, tool call, parts
		if s != "" {
			want += 1 + n // the name
		}
		if got := c.CountMessage(m); got != want {
			t.Fatalf("CountMessage(every field %q) = %d, want %d", s, got, want)
		}
		tool := history.Message{Role: history.RoleTool, Content: s}
		if got := c.CountRequest([]history.Message{tool}); got != 3+4+n {
			t.Fatalf("CountRequest(tool message %q) = %d, want %d", s, got, 3+4+n)
		}
	})
}

// tokenizedBytes returns the length of s as the tokenizer sees it: each
// invalid byte becomes U+FFFD, three bytes.
func tokenizedBytes(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += utf8.RuneLen(utf8.RuneError)
		} else {
			n += size
		}
		i += size
	}
	return n
}
