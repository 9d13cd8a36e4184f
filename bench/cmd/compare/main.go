// Command compare times history.TrimToRecentTurns against the HeadOut
// strategy of trpc-agent-go v1.11.2 on identical inputs built from the
// shared corpus, in one process, and checks both outputs side by side.
//
// Usage (from the bench module):
//
//	go run ./cmd/compare [-corpus DIR] [-sizes 1000,10000,40000,100000] [-fraction 0.5] [-time 4s] [-export DIR]
//
// With -strategy our side is frameworks/trpc's Strategy, the
// model.TailoringStrategy a trpc-agent-go user swaps in: both sides then
// trim the peer's messages through TailorMessages, so our time includes
// converting them (go run ./cmd/compare -strategy -sizes 40001 -budget 8000).
//
// With -export it also writes each input as DIR/<size>.jsonl (one
// history.Message per line) with its budget in DIR/<size>.budget, for the
// LangChain.js script in bench/langchain.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/compare"
	"github.com/histrim/history/bench/corpus"
)

func main() {
	dir := flag.String("corpus", corpus.DefaultDir, "directory of the shared corpus (*.jsonl)")
	sizes := flag.String("sizes", "1000,10000,40000,100000", "input sizes in messages, comma-separated")
	fraction := flag.Float64("fraction", 0.5, "budget as a fraction of the input's tokens")
	budget := flag.Int("budget", 0, "if set, a fixed budget in tokens for every size instead of -fraction (e.g. 8000: a model's window, whatever the history's length)")
	total := flag.Duration("time", 4*time.Second, "measuring time per size and counter (both sides, interleaved)")
	export := flag.String("export", "", "if set, write the inputs as JSONL into this directory and skip timing")
	short := flag.Bool("short", false, "use histories of short messages (compare.Short) instead of the corpus")
	strategy := flag.Bool("strategy", false, "our side is frameworks/trpc's TailoringStrategy on the peer's messages, instead of TrimToRecentTurns")
	flag.Parse()
	log.SetFlags(0)

	convs, err := corpus.Load(*dir)
	if err != nil {
		log.Fatal(err)
	}
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			log.Fatalf("bad size %q", f)
		}
		ns = append(ns, n)
	}

	if *export != "" {
		if err := exportInputs(*export, convs, ns, *fraction); err != nil {
			log.Fatal(err)
		}
		return
	}

	budgetText := fmt.Sprintf("%.2f x input tokens", *fraction)
	if *budget > 0 {
		budgetText = fmt.Sprintf("%d tokens", *budget)
	}
	newInput := func(n int, c compare.Counting) compare.Input {
		msgs := corpus.History(convs, n)
		if *short {
			msgs = compare.Short(n)
		}
		in := compare.NewInput(strconv.Itoa(n), msgs, *fraction, c)
		if *budget > 0 {
			in.Budget = *budget
		}
		return in
	}
	fmt.Printf("go %s, GOMAXPROCS %d, budget = %s, both sides interleaved in ~100 ms batches (each ending with a timed GC) for %v per row\n",
		runtime.Version(), runtime.GOMAXPROCS(0), budgetText, *total)
	for _, c := range []compare.Counting{compare.Runes, compare.Bytes} {
		fmt.Printf("\nCounter on both sides: %s\n\n", c)
		fmt.Println("| messages | input tokens | budget | ours ns/op | peer ns/op | speed-up (wall) | ours CPU ns/op | peer CPU ns/op | speed-up (CPU) | ours allocs/op | peer allocs/op | ours B/op | peer B/op |")
		fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, n := range ns {
			in := newInput(n, c)
			measure := compare.Measure
			if *strategy {
				measure = compare.MeasureStrategy
			}
			m := measure(in, *total)
			o, p := m.Ours, m.Peer
			fmt.Printf("| %d | %d | %d | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx | %d | %d | %d | %d |\n",
				n, in.Total, in.Budget, o.NsPerOp, p.NsPerOp, m.Speedup, o.CPUNsPerOp, p.CPUNsPerOp, m.CPUSpeedup,
				o.AllocsPerOp, p.AllocsPerOp, o.BytesPerOp, p.BytesPerOp)
		}
	}

	fmt.Println("\nOutputs on the same inputs:")
	fmt.Println("\n| input | side | messages | tokens | fits | pairs intact | orphans | keeps last message | error |")
	fmt.Println("|---|---|---:|---:|---|---|---:|---|---|")
	for _, n := range ns {
		in := newInput(n, compare.Runes)
		printChecks(in.Name+" msgs", in, *strategy)
	}
	if !*strategy {
		correctness(convs)
	}
}

func printChecks(name string, in compare.Input, strategy bool) {
	outputs := compare.Outputs
	if strategy {
		outputs = compare.StrategyOutputs
	}
	o, p, oe, pe := outputs(in)
	row := func(side string, c compare.Check, err error) {
		e := ""
		if err != nil {
			e = err.Error()
		}
		fmt.Printf("| %s | %s | %d | %d | %v | %v | %d | %v | %s |\n", name, side, c.Messages, c.Tokens, c.Fits, c.Paired, c.Broken, c.KeepsLast, e)
	}
	row("ours", o, oe)
	row("peer", p, pe)
}

// correctness compares the two on the raw corpus files (as published, with
// their trailing unanswered calls) at half their size, and on histories
// that fit their budget.
func correctness(convs []corpus.Conversation) {
	var (
		files, oursBroken, peerBroken, oursOver, peerOver int
		fitFiles, oursChanged, peerChanged, peerDropsLast int
	)
	for _, c := range convs {
		if len(c.Raw) < 3 {
			continue
		}
		files++
		in := compare.NewInput(c.Name, c.Raw, 0.5, compare.Runes)
		o, p, _, _ := compare.Outputs(in)
		if !o.Paired {
			oursBroken++
		}
		if !p.Paired {
			peerBroken++
		}
		if !o.Fits {
			oursOver++
		}
		if !p.Fits {
			peerOver++
		}

		// Nothing to trim: the cleaned conversation fits its budget.
		fit := compare.NewInput(c.Name, c.Messages, 1, compare.Runes)
		fitFiles++
		r, _ := compare.Ours(fit.Ours, fit.Budget, fit.Count)
		if len(r.Messages) != len(fit.Ours) {
			oursChanged++
		}
		pm, _ := compare.PeerTrim(compare.Peer(fit.Count), fit.Peer, fit.Budget)
		if len(pm) != len(fit.Peer) {
			peerChanged++
		}
		if last := fit.Ours[len(fit.Ours)-1]; last.Role == history.RoleAssistant && len(pm) < len(fit.Peer) {
			peerDropsLast++
		}
	}
	fmt.Println("\n(peer orphans: it drops tool results whose content is empty, leaving their calls unanswered)")
	fmt.Printf("\nRaw corpus files (%d, as published, budget = half their tokens):\n", files)
	fmt.Printf("- outputs with broken tool pairs: ours %d, peer %d\n", oursBroken, peerBroken)
	fmt.Printf("- outputs over budget: ours %d, peer %d (ours reports ErrLatestTurnTooLarge for each)\n", oursOver, peerOver)
	fmt.Printf("Cleaned files that fit their budget (%d): changed by ours %d, by peer %d (peer dropped a trailing assistant message in %d)\n",
		fitFiles, oursChanged, peerChanged, peerDropsLast)
}

func exportInputs(dir string, convs []corpus.Conversation, ns []int, fraction float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range ns {
		in := compare.NewInput(strconv.Itoa(n), corpus.History(convs, n), fraction, compare.Runes)
		f, err := os.Create(filepath.Join(dir, in.Name+".jsonl"))
		if err != nil {
			return err
		}
		enc := json.NewEncoder(f)
		for _, m := range in.Ours {
			if err := enc.Encode(m); err != nil {
				f.Close()
				return err
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, in.Name+".budget"), []byte(strconv.Itoa(in.Budget)+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}
