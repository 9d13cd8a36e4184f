package main

import (
	"fmt"
	"log"
	"time"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/cachesim"
)

// summaryRun is one row of the summary tables.
type summaryRun struct {
	name string
	cfg  cachesim.SummaryConfig
	// safe: the summariser runs on the conversation's model, so its
	// requests can take the cache-safe form.
	safe bool
}

// summaries prints issue 27's measurement for session s: the trigger
// policy with elision and step trimming, alone and with a simulated
// summariser (2 s a call, 1,000 tokens out) written synchronously or in
// the background, with the summariser's input bound at the budget (the
// conversation's own model) and at an eighth of it (a smaller model,
// folding in chunks), and in the background with requests closer than a
// summary takes.
func summaries(name string, s []history.Message, budget int) {
	base := triggerPolicy(budget)
	small := budget / 8
	tight := base
	tight.Spacing = time.Second // a summary takes two requests
	runs := []summaryRun{
		{"none (elision alone)", cachesim.SummaryConfig{Base: base}, true},
		{"synchronous", cachesim.SummaryConfig{Base: base, Mode: cachesim.SummarySync}, true},
		{"background", cachesim.SummaryConfig{Base: base, Mode: cachesim.SummaryBackground}, true},
		{fmt.Sprintf("synchronous, input %d", small), cachesim.SummaryConfig{Base: base, Mode: cachesim.SummarySync, InputTokens: small}, false},
		{fmt.Sprintf("background, input %d", small), cachesim.SummaryConfig{Base: base, Mode: cachesim.SummaryBackground, InputTokens: small}, false},
		{"background, requests 1 s apart", cachesim.SummaryConfig{Base: tight, Mode: cachesim.SummaryBackground}, true},
	}
	stats := make([]cachesim.SummaryStats, len(runs))
	for i, r := range runs {
		st, err := cachesim.ReplaySummaries(s, r.cfg)
		if err != nil {
			log.Fatal(err)
		}
		if st.Broken != 0 || st.OverInput != 0 {
			log.Fatalf("%s, %s: %d prompts with broken pairs, %d summary requests over their input bound", name, r.name, st.Broken, st.OverInput)
		}
		if r.cfg.Mode == cachesim.SummaryBackground && st.Waited != 0 {
			log.Fatalf("%s, %s: requests waited %v for background summaries", name, r.name, st.Waited)
		}
		stats[i] = st
	}

	fmt.Printf("\nSummaries: %s, budget %d, trigger 0.6, mark 0.36, elision (keep 1, min 64), step trim; summariser %v a call, %d tokens out (MaxTokens %d), requests %v apart unless said\n\n",
		name, budget, cachesim.SummaryLatency, cachesim.SummaryOutput, cachesim.SummaryOutput+100, 30*time.Second)
	fmt.Println("| summaries | maintenance points | dropping turns | added latency there: p50 / p90 / max | requests' total wait | started / swapped in / calls | pending | max input / bound | max cache-safe request | prefix rewrites | mean prompt at limit (x budget) | messages / turns at limit |")
	fmt.Println("|---|---:|---:|---|---:|---|---:|---|---:|---:|---:|---|")
	for i, r := range runs {
		st := &stats[i]
		per := func(n int) float64 { return float64(n) / float64(max(st.AtLimit, 1)) }
		input, safe := "—", "—"
		if st.Calls > 0 {
			input = fmt.Sprintf("%d / %d", st.MaxInput, st.InputBound)
			if r.safe {
				safe = fmt.Sprint(st.MaxSafeRequest)
			}
		}
		fmt.Printf("| %s | %d | %d | %v / %v / %v | %v | %d / %d / %d | %d | %s | %s | %d | %.2f | %.0f / %.1f |\n",
			r.name, st.MaintenancePoints, len(st.Latencies), st.Percentile(0.5), st.Percentile(0.9), st.Percentile(1), st.Waited,
			st.Jobs, st.Outcomes[history.SummaryWritten], st.Calls, st.Outcomes[history.SummaryPending], input, safe,
			st.Rewrites, st.MeanKept(budget), per(st.MessagesAtLimit), per(st.TurnsAtLimit))
	}

	fmt.Printf("\nBilled, in millions of uncached input tokens (the summaries' output at the provider's output price). Over elision alone: the session's bill (cache-safe form where the summariser runs on the conversation's model, else plain) minus the first row's, minus the summaries' output, and minus also what carrying the summaries in the prompts costs\n\n")
	fmt.Println("| summaries | prices | requests | of which carrying the summaries | summary requests: plain / cache-safe | summaries' output | session bill: cache-safe / plain | vs elision alone | over elision alone beyond the output | beyond the output and the carrying |")
	fmt.Println("|---|---|---:|---:|---|---:|---|---|---:|---:|")
	for _, p := range cachesim.SummaryPrices {
		alone := stats[0].Bill(p).Total(true)
		for i, r := range runs {
			b := stats[i].Bill(p)
			safe, total, best := "—", "—", b.Total(false)
			if r.safe {
				safe, total, best = m(b.Safe), m(b.Total(true)), b.Total(true)
			}
			fmt.Printf("| %s | %s | %s | %s | %s / %s | %s | %s / %s | %+.1f%% / %+.1f%% | %+.2f M | %+.2f M |\n",
				r.name, p.Name, m(b.Requests), m(b.Carry), m(b.Plain), safe, m(b.Output), total, m(b.Total(false)),
				100*(best/alone-1), 100*(b.Total(false)/alone-1), (best-alone-b.Output)/1e6, (best-alone-b.Output-b.Carry)/1e6)
		}
	}
}

// m prints n in millions.
func m(n float64) string { return fmt.Sprintf("%.2f M", n/1e6) }
