package tiktoken

import (
	"testing"
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
