package history

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkTrimmerPlanCheck measures the check a Trimmer makes of its plan
// before every reuse (trimState.fault), on the requests of
// BenchmarkTrimmerReplay that reuse a plan (the largest corpus session,
// low-water 0.7 of a quarter of its size), and the whole Trim of those
// requests: the check's share of a reused request is the ratio of the
// two.
func BenchmarkTrimmerPlanCheck(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(sharedCorpus, "*.jsonl"))
	if len(files) == 0 {
		b.Skip("the shared corpus is not beside the repository (../shared/corpus/real)")
	}
	var best string
	var size int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			best, size = f, st.Size()
		}
	}
	fh, err := os.Open(best)
	if err != nil {
		b.Fatal(err)
	}
	var msgs []Message
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	fh.Close()
	budget := max(Estimate(msgs, nil)/4, 4000)
	opts := []Option{WithLowWater(0.7), WithCounter(NewCache(Heuristic(), 0))}
	type reused struct {
		msgs []Message
		st   trimState
		sum  summaryState
	}
	var rs []reused
	tr := NewTrimmer(opts...)
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role != RoleAssistant {
			continue
		}
		st, sum := tr.st, tr.sum
		if _, err := tr.Trim(msgs[:i], budget); err != nil && !isTooLarge(err) {
			b.Fatal(err)
		}
		if st.n > 0 && tr.st.n == st.n { // reused
			rs = append(rs, reused{msgs[:i], st, sum})
		}
	}
	o := newOptions(opts)
	defer o.release()
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range rs {
				if r := rs[i].st.fault(rs[i].msgs, &rs[i].sum, o); r != "" {
					b.Fatal(r)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rs)), "ns/reuse")
	})
	b.Run("trim", func(b *testing.B) {
		b.ReportAllocs()
		tr := NewTrimmer(opts...)
		for b.Loop() {
			for i := range rs {
				tr.mu.Lock()
				tr.st, tr.sum = rs[i].st, rs[i].sum
				tr.mu.Unlock()
				if _, err := tr.Trim(rs[i].msgs, budget); err != nil && !isTooLarge(err) {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rs)), "ns/reuse")
	})
}
