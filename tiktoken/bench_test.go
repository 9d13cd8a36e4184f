package tiktoken

import (
	"strconv"
	"testing"

	"github.com/histrim/history"
)

// BenchmarkCountText measures tokenization throughput on every text field
// of the shared corpus (content, tool-call names and arguments).
func BenchmarkCountText(b *testing.B) {
	texts := corpusTexts(loadCorpus(b))
	size := 0
	for _, s := range texts {
		size += len(s)
	}
	for _, enc := range []string{Cl100kBase, O200kBase} {
		b.Run(enc, func(b *testing.B) {
			c := mustNew(b, enc)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range texts {
					c.CountText(s)
				}
			}
		})
	}
}

// BenchmarkCountHostile measures CountText on hostile input (see
// hostileText) at 10 KB and 100 KB: with linear counting, MB/s is the same
// at both sizes.
func BenchmarkCountHostile(b *testing.B) {
	for _, enc := range []string{O200kBase, Cl100kBase} {
		c := mustNew(b, enc)
		benchHostile(b, enc, func(s string) { c.CountText(s) })
	}
}

// benchHostile runs f on every hostile class at 10 KB and 100 KB, one
// sub-benchmark each, named enc/class/size, reporting bytes per second.
func benchHostile(b *testing.B, enc string, f func(string)) {
	for _, class := range hostileClasses {
		for _, size := range []int{10_000, 100_000} {
			s := hostileText(class, size)
			b.Run(enc+"/"+class+"/"+strconv.Itoa(size/1000)+"KB", func(b *testing.B) {
				b.SetBytes(int64(len(s)))
				b.ReportAllocs()
				for b.Loop() {
					f(s)
				}
			})
		}
	}
}

// BenchmarkSplit measures the pre-tokenization alone (the Counter's
// bounded regular expression) on hostile input: the splitter runs over a
// vocabulary of single bytes, so merging finds nothing to merge and costs
// one pass per piece.
func BenchmarkSplit(b *testing.B) {
	bytes := make(map[string]int, 256)
	for i := range 256 {
		bytes[string([]byte{byte(i)})] = i
	}
	for _, enc := range []string{O200kBase, Cl100kBase} {
		split, err := newEncoder(bytes, nil, specs[enc].boundedPattern())
		if err != nil {
			b.Fatal(err)
		}
		benchHostile(b, enc, func(s string) { split.EncodeOrdinary(s) })
	}
}

// BenchmarkInit measures the first-use cost of each encoding: parsing the
// embedded vocabulary and building the encoder, as New does once per
// process.
func BenchmarkInit(b *testing.B) {
	for _, enc := range []string{Cl100kBase, O200kBase, P50kBase, R50kBase} {
		b.Run(enc, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := build(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// largestConversation returns the corpus conversation with the most bytes.
func largestConversation(tb testing.TB) corpusConv {
	convs := loadCorpus(tb)
	best, bestSize := convs[0], 0
	for _, c := range convs {
		size := 0
		for _, m := range c.msgs {
			size += len(m.Content)
			for _, tc := range m.ToolCalls {
				size += len(tc.Name) + len(tc.Arguments)
			}
		}
		if size > bestSize {
			best, bestSize = c, size
		}
	}
	return best
}

// BenchmarkTrimLargest trims the largest corpus conversation to half its
// size with the exact o200k counter: cold counts every message (no cache),
// warm trims it again with one new message appended through a warm cache,
// the per-request pattern of an agent runtime.
func BenchmarkTrimLargest(b *testing.B) {
	conv := largestConversation(b)
	c := mustNew(b, O200kBase)
	msgs := conv.msgs
	budget := history.Estimate(msgs, c) / 2
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		b.ReportMetric(float64(len(msgs)), "msgs")
		for b.Loop() {
			if _, err := history.TrimToRecentTurns(msgs, budget, history.WithCounter(c)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		cache := history.NewCache(c, 0)
		opt := history.WithCounter(cache)
		if _, err := history.TrimToRecentTurns(msgs, budget, opt); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ReportMetric(float64(len(msgs)+1), "msgs")
		i := 0
		for b.Loop() {
			// A new message each iteration, as in a live session.
			i++
			next := append(msgs[:len(msgs):len(msgs)], history.Message{Role: history.RoleUser, Content: "next question " + strconv.Itoa(i)})
			if _, err := history.TrimToRecentTurns(next, budget, opt); err != nil {
				b.Fatal(err)
			}
		}
	})
}
