// Command cachesim replays long sessions built from the shared corpus
// request by request under every trimming policy (no hysteresis, low-water
// 0.9/0.8/0.7/0.6) in both usage patterns, and prints what each bills under
// the prompt-cache price model of package cachesim. With -ladder it adds
// the Trimmer with elision and step trimming, the compact trigger policy,
// and that policy with tool-call arguments cleared (ClearArguments 64, 128
// and 256, and 64 with a lower mark). With -summaries it prints only the
// summary tables of issue 27 (see summaries.go).
//
// Usage (from the bench module):
//
//	go run ./cmd/cachesim [-corpus DIR] [-turns 400] [-ladder] [-cold] [-summaries]
package main

import (
	"flag"
	"fmt"
	"log"
	"time"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/cachesim"
	"github.com/histrim/history/bench/corpus"
)

type sessionSpec struct {
	name     string
	prefixes []string
	budget   int
}

func main() {
	dir := flag.String("corpus", corpus.DefaultDir, "directory of the shared corpus (*.jsonl)")
	turns := flag.Int("turns", 400, "minimum user turns per session")
	flag.Bool("ladder", false, "also run the Trimmer with elision and step trimming (the maintenance-point policy), and with a compact trigger")
	cold := flag.Bool("cold", false, "print the cold-resume A/B: idle gaps past the cache retention, with and without pruning")
	sums := flag.Bool("summaries", false, "print only issue 27's summary tables: the trigger policy alone and with a simulated summariser (2 s, 1,000 tokens), synchronous or in the background")
	flag.Parse()
	log.SetFlags(0)

	convs, err := corpus.Load(*dir)
	if err != nil {
		log.Fatal(err)
	}
	specs := []sessionSpec{
		{"coding (Claude Code, OpenHands, SWE-agent)", []string{"claude-code", "openhands", "swe-agent"}, 128_000},
		{"support (tau-bench, ToolBench, SWE-agent text)", []string{"tau-bench", "toolbench", "swe-agent__text"}, 32_000},
		{"all 61 conversations", []string{""}, 128_000},
	}
	lows := []float64{0, 0.9, 0.8, 0.7, 0.6}
	ladder := flag.Lookup("ladder").Value.(flag.Getter).Get().(bool)
	patterns := []cachesim.Pattern{cachesim.Persisted, cachesim.WithTrimmer, cachesim.Stateless}

	for _, sp := range specs {
		s := corpus.Session(corpus.Select(convs, sp.prefixes...), *turns)
		users := 0
		for _, m := range s {
			if m.Role == history.RoleUser {
				users++
			}
		}
		fmt.Printf("\n### Session: %s\n\n%d messages, %d user turns, %d tokens (history.Heuristic: %d), budget %d tokens\n",
			sp.name, len(s), users, history.Estimate(s, cachesim.Counter), history.Estimate(s, history.Heuristic()), sp.budget)
		if *sums {
			summaries(sp.name, s, sp.budget)
			continue
		}
		for _, p := range patterns {
			fmt.Printf("\nPattern %s\n\n", p)
			fmt.Println("| low-water | requests | at limit | prefix rewrites | read tok | write tok | uncached tok | billed (tok-equiv) | vs exact | vs no cache | mean prompt at limit (x budget) | min prompt at limit | messages / turns / placeholders / cleared calls per request at limit |")
			fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
			var exact float64
			runs := []cachesim.Config{}
			for _, lw := range lows {
				runs = append(runs, cachesim.Config{Pattern: p, Budget: sp.budget, LowWater: lw})
			}
			if ladder && p == cachesim.WithTrimmer {
				for _, lw := range []float64{0.7, 0.5, 0.3} {
					runs = append(runs, cachesim.Config{Pattern: p, Budget: sp.budget, LowWater: lw, Ladder: true})
				}
				runs = append(runs, triggerPolicy(sp.budget))
				for _, clear := range []int{64, 128, 256} {
					cfg := triggerPolicy(sp.budget)
					cfg.Elide.ClearArguments = clear
					runs = append(runs, cfg)
				}
				// The room cleared arguments free, spent on a lower mark.
				cfg := triggerPolicy(sp.budget)
				cfg.Elide.ClearArguments, cfg.LowWater = 64, 0.33
				runs = append(runs, cfg)
				// The goal-keeping preset (digests, the cut rung, cleared
				// arguments) at the same trigger and mark.
				cfg = triggerPolicy(sp.budget)
				cfg.Task = true
				runs = append(runs, cfg)
			}
			for _, cfg := range runs {
				lw := cfg.LowWater
				st, err := cachesim.Replay(s, cfg)
				if err != nil {
					log.Fatal(err)
				}
				if st.Broken != 0 {
					log.Fatalf("%s %v %.1f: %d prompts with broken pairs", sp.name, p, lw, st.Broken)
				}
				name := "none (exact)"
				if lw > 0 {
					name = fmt.Sprintf("%.1f", lw)
				} else {
					exact = st.Billed
				}
				if cfg.Ladder {
					name += " + elision, step trim"
				}
				if cfg.Trigger > 0 {
					name = fmt.Sprintf("trigger %.1f, %.2f + elision (keep %d, min %d), step trim", cfg.Trigger, lw, cfg.Elide.KeepRecent, cfg.Elide.MinTokens)
				}
				if cfg.Elide.ClearArguments > 0 {
					name += fmt.Sprintf(", arguments cleared from %d", cfg.Elide.ClearArguments)
				}
				if cfg.Task {
					name = fmt.Sprintf("trigger %.1f, %.2f + WithTask(goal, ElideOptions{KeepRecent: %d, MinTokens: %d})", cfg.Trigger, lw, cfg.Elide.KeepRecent, cfg.Elide.MinTokens)
				}
				per := func(n int) float64 { return float64(n) / float64(max(st.AtLimit, 1)) }
				fmt.Printf("| %s | %d | %d | %d | %d | %d | %d | %.0f | %+.1f%% | %+.1f%% | %.2f | %d | %.0f / %.1f / %.1f / %.1f |\n",
					name, st.Requests, st.AtLimit, st.Rewrites, st.Read, st.Write, st.Uncached, st.Billed,
					100*(st.Billed/exact-1), 100*(st.Billed/st.NoCache()-1), st.MeanKept(sp.budget), st.MinAtLimit,
					per(st.MessagesAtLimit), per(st.TurnsAtLimit), per(st.PlaceholdersAtLimit), per(st.ClearedAtLimit))
			}
		}
		if *cold {
			coldResume(s, sp.budget)
		}
	}
}

// triggerPolicy is the maintenance policy the docs recommend for long tool
// sessions: a compact trigger at 60% of the budget, down to 36%, eliding
// every result but the newest above 64 tokens.
func triggerPolicy(budget int) cachesim.Config {
	return cachesim.Config{Pattern: cachesim.WithTrimmer, Budget: budget, Trigger: 0.6, LowWater: 0.36, Ladder: true,
		Elide: history.ElideOptions{KeepRecent: 1, MinTokens: 64}}
}

// coldResume prints the A/B of pruning on a cold resume: requests a minute
// apart, every fifth user turn after a two-hour pause, a five-minute cache.
func coldResume(s []history.Message, budget int) {
	fmt.Printf("\nCold resume: requests 1 min apart, every 5th user turn after 2 h idle, cache retention 5 min (Anthropic's default)\n\n")
	fmt.Println("| policy | pruning on cold resume | cold requests | mean cold prompt (tokens) | billed on cold requests | billed, whole session | prefix rewrites |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	for _, base := range []cachesim.Config{
		{Pattern: cachesim.WithTrimmer, Budget: budget, LowWater: 0.7, Ladder: true},
		triggerPolicy(budget),
	} {
		base.Spacing, base.IdleEvery, base.Idle, base.Retention = time.Minute, 5, 2*time.Hour, 5*time.Minute
		name := fmt.Sprintf("low-water %.2f + ladder", base.LowWater)
		if base.Trigger > 0 {
			name = fmt.Sprintf("trigger %.1f, %.2f + ladder", base.Trigger, base.LowWater)
		}
		for _, prune := range []bool{false, true} {
			cfg := base
			cfg.ColdAfter = 1000 * time.Hour
			if prune {
				cfg.ColdAfter = cfg.Retention
			}
			st, err := cachesim.Replay(s, cfg)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("| %s | %v | %d | %.0f | %.0f | %.0f | %d |\n", name, prune, st.Cold,
				float64(st.ColdSent)/float64(max(st.Cold, 1)), st.ColdBilled, st.Billed, st.Rewrites)
		}
	}
}
