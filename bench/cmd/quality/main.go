// Command quality replays every session of the shared corpus request by
// request under several trimming policies and budgets, and prints what
// each keeps of what the agent goes on to use: reference recall (package
// quality), recall by tokens, the requests sent over budget and the mean
// tokens sent. With -samples N it prints N references drawn at random
// (a fixed seed) for judging; it prints the precision judged on the
// sample in testdata/judged.tsv.
//
// Then it prints the front: the candidate default policies
// (quality.Candidates), stateless and through a Trimmer, each replayed
// once per session and budget, with recall against the tokens sent and
// the input billed under bench/cachesim's price model, and the prefix
// rewrites, on the coding sessions and on all of them. -front prints only
// that; -svg FILE also draws it as a chart (recall against the bill, one
// point per policy, at 25% of each session's peak).
//
// Usage (from the bench module):
//
//	go run ./cmd/quality [-corpus DIR] [-samples N] [-front] [-svg FILE]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/cachesim"
	"github.com/histrim/history/bench/corpus"
	"github.com/histrim/history/bench/quality"
)

func main() {
	dir := flag.String("corpus", corpus.DefaultDir, "directory of the shared corpus (*.jsonl)")
	samples := flag.Int("samples", 0, "print `n` references drawn for judging, and stop")
	judged := flag.String("judged", "quality/testdata/judged.tsv", "`file` of judged references (see -samples)")
	frontOnly := flag.Bool("front", false, "print only the front of the candidate default policies")
	match := flag.String("match", "", "replay only the candidates whose label matches `regexp` (and exact trimming, the bill's reference)")
	longOnly := flag.Bool("long", false, "print only the front on bench/cachesim's long sessions (400 user turns, budget 128k, cachesim.Counter)")
	svg := flag.String("svg", "", "also write the front at 25% of each session's peak as an SVG chart to `file`")
	flag.Parse()
	log.SetFlags(0)
	convs, err := corpus.Load(*dir)
	if err != nil {
		log.Fatal(err)
	}
	sessions := make([]quality.Session, len(convs))
	refs := 0
	for i, c := range convs {
		sessions[i] = quality.NewSession(c.Name, c.Messages)
		refs += len(sessions[i].Refs)
	}
	fmt.Printf("%d sessions, %d references\n\n", len(sessions), refs)
	if *samples > 0 {
		byName := map[string][]history.Message{}
		for _, s := range sessions {
			byName[s.Name] = s.Messages
		}
		for _, sm := range quality.Draw(sessions, *samples) {
			fmt.Print(quality.Describe(sm, byName[sm.Session]))
		}
		return
	}
	budgets := []quality.Budget{
		{Name: "10% of peak", Share: 0.10},
		{Name: "25% of peak", Share: 0.25},
		{Name: "50% of peak", Share: 0.50},
		{Name: "32k", Tokens: 32_000},
		{Name: "128k", Tokens: 128_000},
	}
	candidates = quality.Candidates()
	if *match != "" {
		re, err := regexp.Compile(*match)
		if err != nil {
			log.Fatalf("-match: %v", err)
		}
		candidates = slices.DeleteFunc(candidates[1:], func(c quality.Candidate) bool { return !re.MatchString(c.Label) })
		candidates = append(quality.Candidates()[:1], candidates...)
	}
	perSession := func(i, k int) bool { return inSlice(sessions[i].Name, k) }
	if *longOnly {
		ls := long(convs, 400)
		fmt.Printf("long sessions: %d and %d references\n", len(ls[0].Refs), len(ls[1].Refs))
		front(ls, func(i, k int) bool { return i == k }, []quality.Budget{{Name: "128k", Tokens: 128_000}})
		return
	}
	if *frontOnly {
		chart(front(sessions, perSession, budgets[:3]), *svg)
		return
	}
	if j, err := quality.Judged(*judged); err != nil {
		fmt.Printf("judged precision: no judgements (%v)\n\n", err)
	} else {
		real, n := 0, 0
		for _, sm := range quality.Draw(sessions, len(j)) {
			if v, ok := j[sm.Key()]; ok {
				n++
				if v {
					real++
				}
			}
		}
		fmt.Printf("judged precision: %d of %d sampled references are real uses (%.2f); %d of the sample no longer drawn\n\n",
			real, n, float64(real)/float64(max(n, 1)), len(j)-n)
	}
	fmt.Println("| budget | policy | requests | over budget (floor / step floor) | recall | lenient | by tokens | mean tokens sent (x budget) |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|")
	for _, b := range budgets {
		for _, p := range quality.Policies() {
			var st quality.Stats
			for i := range sessions {
				s, err := quality.Replay(&sessions[i], b.For(&sessions[i]), p)
				if err != nil {
					log.Fatalf("%s, %s, %s: %v", sessions[i].Name, b.Name, p.Name, err)
				}
				st.Add(s)
			}
			fmt.Printf("| %s | %s | %d | %d (%d / %d) | %.3f | %.3f | %.3f | %.0f (%.2f) |\n", b.Name, p.Name, st.Requests, st.Over, st.Floor, st.StepFloor,
				st.Recall(), st.RecallLenient(), st.RecallTokens(), st.MeanSent(), float64(st.Sent)/float64(max(st.Budget, 1)))
		}
	}
	chart(front(sessions, perSession, budgets[:3]), *svg)
}

// candidates are the policies of the front, exact trimming first.
var candidates []quality.Candidate

// sliceNames and slicePrefixes are the corpus slices of the front: a
// session is in a slice when its name has one of the prefixes (cachesim's
// coding session is built from the same conversations).
var (
	sliceNames    = []string{"coding (Claude Code, OpenHands, SWE-agent)", "all 61"}
	slicePrefixes = [][]string{{"claude-code", "openhands", "swe-agent"}, {""}}
)

// inSlice reports whether the session named name is in slice k.
func inSlice(name string, k int) bool {
	for _, p := range slicePrefixes[k] {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// front replays every candidate on every session at each budget, once,
// and prints the front per slice and budget (member reports whether
// session i counts in slice k); it returns the totals, [budget][candidate][slice].
func front(sessions []quality.Session, member func(i, k int) bool, budgets []quality.Budget) [][][]quality.Stats {
	cands := candidates
	st := make([][][]quality.Stats, len(budgets))
	for b, bud := range budgets {
		st[b] = make([][]quality.Stats, len(cands))
		for c, cand := range cands {
			st[b][c] = make([]quality.Stats, len(sliceNames))
			start := time.Now()
			for i := range sessions {
				s, err := quality.Replay(&sessions[i], bud.For(&sessions[i]), cand.Policy)
				if err != nil {
					log.Fatalf("%s, %s, %s: %v", sessions[i].Name, bud.Name, cand.Name, err)
				}
				for k := range sliceNames {
					if member(i, k) {
						st[b][c][k].Add(s)
					}
				}
			}
			fmt.Fprintf(os.Stderr, "%s, %s: %.1f s\n", bud.Name, cand.Label, time.Since(start).Seconds())
		}
	}
	for k, name := range sliceNames {
		for b, bud := range budgets {
			fmt.Printf("\n### Front: %s, budget %s\n\n", name, bud.Name)
			fmt.Println("| | policy | requests over budget (sent over) | recall | recall, every request | mean tokens sent (x budget) | tokens sent, every request | billed input | vs exact | vs (a) | prefix rewrites |")
			fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
			exact, a := st[b][0][k].Billed, 0.0
			for c, cand := range cands {
				if cand.Label == "a" {
					a = st[b][c][k].Billed
				}
			}
			for c, cand := range cands {
				s := st[b][c][k]
				vsA := "–"
				if a > 0 {
					vsA = fmt.Sprintf("%+.1f%%", 100*(s.Billed/a-1))
				}
				fmt.Printf("| %s | %s | %d (%d) | %.3f | %.3f | %.0f (%.2f) | %.2f M | %.2f M | %+.1f%% | %s | %d |\n", cand.Label, cand.Name,
					s.Requests, s.Over, s.Recall(), s.RecallAll(), s.MeanSent(), float64(s.Sent)/float64(max(s.Budget, 1)),
					float64(s.AllSent)/1e6, s.Billed/1e6, 100*(s.Billed/exact-1), vsA, s.Rewrites)
			}
		}
	}
	return st
}

// long returns the long sessions of bench/cachesim (the conversations of
// each slice concatenated until they hold turns user turns), counted by
// cachesim.Counter.
func long(convs []corpus.Conversation, turns int) []quality.Session {
	out := make([]quality.Session, len(sliceNames))
	for k := range sliceNames {
		msgs := corpus.Session(corpus.Select(convs, slicePrefixes[k]...), turns)
		out[k] = quality.NewCountedSession(sliceNames[k], msgs, cachesim.Counter)
	}
	return out
}

// chart writes the front at 25% of each session's peak to the SVG file
// svg ("": none).
func chart(st [][][]quality.Stats, svg string) {
	_ = st
	_ = svg
}
