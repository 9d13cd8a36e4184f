// Command quality replays every session of the shared corpus request by
// request under several trimming policies and budgets, and prints what
// each keeps of what the agent goes on to use: reference recall (package
// quality), recall by tokens, the requests sent over budget and the mean
// tokens sent. With -samples N it prints N references drawn at random
// (a fixed seed) for judging; it prints the precision judged on the
// sample in testdata/judged.tsv.
//
// Usage (from the bench module):
//
//	go run ./cmd/quality [-corpus DIR] [-samples N]
package main

import (
	"flag"
	"fmt"
	"log"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/corpus"
	"github.com/histrim/history/bench/quality"
)

func main() {
	dir := flag.String("corpus", corpus.DefaultDir, "directory of the shared corpus (*.jsonl)")
	samples := flag.Int("samples", 0, "print `n` references drawn for judging, and stop")
	judged := flag.String("judged", "quality/testdata/judged.tsv", "`file` of judged references (see -samples)")
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
				s, err := quality.Replay(&sessions[i], b.For(&sessions[i]), p.Options(&sessions[i]), p.TurnStart, p.Pins(&sessions[i]))
				if err != nil {
					log.Fatalf("%s, %s, %s: %v", sessions[i].Name, b.Name, p.Name, err)
				}
				st.Add(s)
			}
			fmt.Printf("| %s | %s | %d | %d (%d / %d) | %.3f | %.3f | %.3f | %.0f (%.2f) |\n", b.Name, p.Name, st.Requests, st.Over, st.Floor, st.StepFloor,
				st.Recall(), st.RecallLenient(), st.RecallTokens(), st.MeanSent(), float64(st.Sent)/float64(max(st.Budget, 1)))
		}
	}
}
