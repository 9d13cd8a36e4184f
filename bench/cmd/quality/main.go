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
	lossFlag = flag.Bool("loss", false, "with -front, print under each candidate where the references it did not keep were lost")
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

// lossFlag is -loss.
var lossFlag *bool

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
				if *lossFlag {
					l := s.Loss
					fmt.Printf("|   | lost: %d of %d: over budget %d, with dropped steps %d, with older turns %d (of these, mentioned later %d), hidden in the result sent %d | | | | | | | | | |\n",
						l.Over+l.Step+l.Turn+l.Hidden, s.Refs, l.Over, l.Step, l.Turn, l.Mentioned, l.Hidden)
				}
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

// chart writes the front at 25% of each session's peak (budget 1 of st)
// to the SVG file svg ("": none): recall against the input billed, as a
// share of exact trimming's bill, one point per candidate on the coding
// sessions; the named policies labelled, the grid's points in grey.
func chart(st [][][]quality.Stats, svg string) {
	if svg == "" || len(st) < 2 {
		return
	}
	const (
		w, h           = 640, 420
		left, right    = 56, 20
		top, bottom    = 30, 46
		xMin, xMax     = 0.4, 1.3 // billed / exact
		yMin, yMax     = 0.3, 0.9 // recall
		plotW, plotH   = w - left - right, h - top - bottom
		named, palette = "exact a b c d fit cheaper more", "#555"
	)
	x := func(v float64) float64 { return left + (min(max(v, xMin), xMax)-xMin)/(xMax-xMin)*plotW }
	y := func(v float64) float64 { return top + (1-(min(max(v, yMin), yMax)-yMin)/(yMax-yMin))*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13">Reference recall against billed input, coding sessions, budget 25%% of each session's peak</text>`+"\n", left)
	for v := xMin; v <= xMax+1e-9; v += 0.1 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%.0f%%</text>`+"\n", x(v), top, x(v), top+plotH, x(v), top+plotH+14, 100*v)
	}
	for v := yMin; v <= yMax+1e-9; v += 0.1 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%.1f</text>`+"\n", left, y(v), left+plotW, y(v), left-6, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">billed input, share of exact trimming's (cached read 0.1x, write 1.25x)</text>`+"\n", left+plotW/2, h-8)
	fmt.Fprintf(&b, `<text transform="translate(14 %d) rotate(-90)" text-anchor="middle">reference recall</text>`+"\n", top+plotH/2)
	exact := st[1][0][0].Billed
	for pass := range 2 { // the grid first, the named points over it
		for c, cand := range candidates {
			s := st[1][c][0]
			px, py := x(s.Billed/exact), y(s.Recall())
			isNamed := strings.Contains(" "+named+" ", " "+cand.Label+" ")
			switch {
			case pass == 0 && !isNamed:
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="#bbb"><title>%s: recall %.3f, billed %.0f%%</title></circle>`+"\n", px, py, cand.Name, s.Recall(), 100*s.Billed/exact)
			case pass == 1 && isNamed:
				label := cand.Label
				if r := s.Billed / exact; r > xMax {
					label += fmt.Sprintf(" (billed %.0f%%, off the chart)", 100*r)
				}
				fill := palette
				if strings.HasPrefix(cand.Name, "fit") {
					fill = "#c03"
				}
				anchor, tx := "start", px+6
				if px > left+plotW*0.7 {
					anchor, tx = "end", px-6
				}
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s: recall %.3f, billed %.0f%%</title></circle><text x="%.1f" y="%.1f" fill="%s" text-anchor="%s">%s</text>`+"\n", px, py, fill, cand.Name, s.Recall(), 100*s.Billed/exact, tx, py-5, fill, anchor, label)
			}
		}
	}
	b.WriteString("</svg>\n")
	if err := os.WriteFile(svg, []byte(b.String()), 0o644); err != nil {
		log.Fatal(err)
	}
}
