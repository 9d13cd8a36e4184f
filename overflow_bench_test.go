package history

// Benchmarks of the overflow classifier on hostile errors. Speed targets
// live here, never in timed unit tests. Each case reports ns/byte: the time
// of one classification divided by the total length of the texts in the
// error tree (every Error() text and response body), which stays flat when
// the cost is linear in the text.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// treeTextBytes sums the lengths of every Error() text and RawJSON body in
// err's tree (a plain walk: the benchmarked trees have no cycles).
func treeTextBytes(err error) int {
	n := 0
	stack := []error{err}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e == nil {
			continue
		}
		n += len(e.Error())
		if r, ok := e.(interface{ RawJSON() string }); ok {
			n += len(r.RawJSON())
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			stack = append(stack, u.Unwrap())
		case interface{ Unwrap() []error }:
			stack = append(stack, u.Unwrap()...)
		}
	}
	return n
}

// noiseText returns n bytes of distinct pseudo-random lowercase words,
// deterministic in seed (a linear congruential generator).
func noiseText(seed uint64, n int) string {
	b := make([]byte, n)
	x := seed
	for i := range b {
		x = x*6364136223846793005 + 1442695040888963407
		if c := x >> 59; c < 26 {
			b[i] = 'a' + byte(c)
		} else {
			b[i] = ' '
		}
	}
	return string(b)
}

// hostileErrors are the pathological trees of docs/overflow.md.
func hostileErrors() []struct {
	name string
	err  error
} {
	overflow := errors.New(`400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`)
	var join []error
	for i := range 64 {
		join = append(join, errors.New(noiseText(uint64(i)+1, 256<<10)))
	}
	join = append(join, overflow)
	fmtChain := overflow
	for range 10000 {
		fmtChain = fmt.Errorf("w: %w", fmtChain)
	}
	prose := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 1<<20/56)
	body := `{"error":{"message":"prompt is too long: 1200000 tokens > 1000000 maximum","type":"invalid_request_error"},"input":"` + prose + `"}`
	return []struct {
		name string
		err  error
	}{
		{"typical", fmt.Errorf("agent turn 7: %w", fmt.Errorf("provider call: %w", overflow))},
		{"join64x256KB", errors.Join(join...)},
		{"chain10k", chain(overflow, 10000)},
		{"fmtChain10k", fmtChain},
		{"text1MB", errors.New(body)},
		{"rawJSON1MB", &openAIv3{body}},
	}
}

func BenchmarkClassifyHostile(b *testing.B) {
	for _, c := range hostileErrors() {
		n := treeTextBytes(c.err)
		b.Run(c.name, func(b *testing.B) {
			if !IsContextOverflow(c.err) {
				b.Fatal("not classified as an overflow")
			}
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				ParseOverflow(c.err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/byte")
		})
	}
}
