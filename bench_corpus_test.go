package history_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/tiktoken"
)

// largestSession loads the largest conversation of the shared corpus (by
// file size), or skips when the corpus is not there.
func largestSession(b *testing.B) []history.Message {
	files, _ := filepath.Glob("../shared/corpus/real/*.jsonl")
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
	defer fh.Close()
	var msgs []history.Message
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m history.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// BenchmarkCorpusExact trims the largest corpus session to 10%, 30% and 50%
// of its exact o200k size: cold (no cache: a resumed session) and warm (a
// NewCache that has seen the history, the history one message longer).
func BenchmarkCorpusExact(b *testing.B) {
	msgs := largestSession(b)
	c, err := tiktoken.New(tiktoken.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	total := history.Estimate(msgs, c)
	for _, pct := range []int{10, 30, 50} {
		budget := total * pct / 100
		b.Run("cold/"+strconv.Itoa(pct)+"%", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := history.TrimToRecentTurns(msgs, budget, history.WithCounter(c)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("warm/"+strconv.Itoa(pct)+"%", func(b *testing.B) {
			cached := history.WithCounter(history.NewCache(c, 0))
			if _, err := history.TrimToRecentTurns(msgs[:len(msgs)-1], budget, cached); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := history.TrimToRecentTurns(msgs, budget, cached); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTrimmerReplay replays the largest corpus session request by
// request through one Trimmer (low-water 0.7 of a budget of a quarter of
// the session, counts cached), without and with an event callback: with
// one, the Trimmer keeps the keys of each prompt for the next event's
// Rewritten, carried over from the previous prompt where the plan is
// reused. It reports the time per request.
func BenchmarkTrimmerReplay(b *testing.B) {
	msgs := largestSession(b)
	var reqs [][]history.Message
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == history.RoleAssistant {
			reqs = append(reqs, msgs[:i])
		}
	}
	budget := max(history.Estimate(msgs, nil)/4, 4000)
	for _, events := range []bool{false, true} {
		b.Run("events="+strconv.FormatBool(events), func(b *testing.B) {
			opts := []history.Option{history.WithLowWater(0.7), history.WithCounter(history.NewCache(history.Heuristic(), 0))}
			if events {
				opts = append(opts, history.WithOnTrim(func(history.Event) {}))
			}
			b.ReportAllocs()
			for b.Loop() {
				tr := history.NewTrimmer(opts...)
				for _, req := range reqs {
					var be *history.BudgetError
					if _, err := tr.Trim(req, budget); err != nil && !errors.As(err, &be) {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(reqs)), "µs/req")
		})
	}
}

// BenchmarkCorpusTask trims the largest corpus session to a quarter of its
// size (Heuristic) with the README's policy before WithTask and with
// WithTask, whose trim also builds a digest for every result it elides:
// the cost of digests, which a trim pays only where it elides.
func BenchmarkCorpusTask(b *testing.B) {
	msgs := largestSession(b)
	msgs, _ = history.SweepOrphans(msgs)
	budget := history.Estimate(msgs, nil) / 4
	for _, p := range []struct {
		name string
		opts []history.Option
	}{
		{"elision+steps", []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}},
		{"WithTask", []history.Option{history.WithTask(0, history.ElideOptions{})}},
	} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := history.TrimToRecentTurns(msgs, budget, p.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
