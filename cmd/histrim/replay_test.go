package main

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/refs"
)

// corpusDir is the shared corpus of real transcripts, beside the
// repository.
const corpusDir = "../../../shared/corpus/real"

// corpusFiles returns the corpus's sessions, or skips t when the corpus is
// not there.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skip("the shared corpus is not beside the repository (" + corpusDir + " from cmd/histrim): no real session to replay")
	}
	return files
}

// readSession parses a JSONL session.
func readSession(t testing.TB, path string) []history.Message {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := parse(data, formatJSONL)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return msgs
}

// countAll returns c's count of every message.
func countAll(msgs []history.Message, c history.Counter) []int {
	counts := make([]int, len(msgs))
	for i := range msgs {
		counts[i] = c.CountMessage(msgs[i])
	}
	return counts
}

// ladders are the option sets the replay tests run with.
var ladders = []struct {
	name   string
	opts   func() []history.Option
	reason string
}{
	{"turns", func() []history.Option { return nil }, "whole turns only: a stateless-looking trim, remembered"},
	{"lowwater", func() []history.Option { return []history.Option{history.WithLowWater(0.7)} }, "hysteresis: fewer maintenance points"},
	{"ladder", func() []history.Option {
		return []history.Option{history.WithElision(history.ElideOptions{ClearArguments: 32}), history.WithStepTrim(), history.WithLowWater(0.7)}
	}, "elided results and cleared arguments are changed copies: the prefix check must compare them"},
	{"trigger", func() []history.Option {
		return []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim(), history.WithTrigger(0.6), history.WithLowWater(0.36)}
	}, "a compact trigger below the budget"},
}

// checkReplay replays msgs and holds every request to an independent
// recount: its own Trimmer, prompts compared field by field, and the
// core's own figures (Event.Rewritten, Event.Billed) at every maintenance
// point.
func checkReplay(t *testing.T, msgs []history.Message, budget int, opts []history.Option, preset pricePreset) *replayView {
	t.Helper()
	c := history.Heuristic()
	counts := countAll(msgs, c)
	rv, err := replay(msgs, counts, c, budget, append(opts, history.WithCounter(c)), preset)
	if err != nil {
		t.Fatal(err)
	}

	tr := history.NewTrimmer(append(opts, history.WithCounter(c))...)
	var prev []history.Message
	var want replayTotals
	all := refs.Of(msgs)
	n := 0
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role != history.RoleAssistant {
			continue
		}
		res, err := tr.Trim(msgs[:i], budget)
		if err != nil && !errors.As(err, new(*history.BudgetError)) {
			t.Fatal(err)
		}
		if n >= len(rv.Requests) {
			t.Fatalf("%d requests replayed, want more: one before every assistant message after the first message", len(rv.Requests))
		}
		got := rv.Requests[n]
		n++
		tokens := make([]int, len(res.Messages))
		sum := 0
		for j, m := range res.Messages {
			tokens[j] = c.CountMessage(m)
			sum += tokens[j]
		}
		l := 0
		for l < len(prev) && l < len(res.Messages) && reflect.DeepEqual(prev[l], res.Messages[l]) {
			l++
		}
		read := 0
		if prev != nil {
			for _, k := range tokens[:l] {
				read += k
			}
		}
		full := 0
		for _, k := range counts[:i] {
			full += k
		}
		wantReq := requestView{N: n, Before: i, Transcript: full, Prompt: sum, Messages: len(res.Messages), Read: read, Write: sum - read,
			Billed:  float64(read)*preset.Prices.Read + float64(sum-read)*preset.Prices.Write,
			Rewrite: prev != nil && l < len(prev), Trimmed: res.Trimmed, Over: sum > budget}
		gotCmp := got
		gotCmp.Event = nil
		if !reflect.DeepEqual(gotCmp, wantReq) {
			t.Fatalf("request %d:\n got %+v\nwant %+v", n, gotCmp, wantReq)
		}
		if e := got.Event; e != nil && prev != nil {
			// The core's figures for a new plan, under WithPrices, compare
			// the prompts by content, as the provider's cache does: they
			// match the recount.
			if e.Rewritten != sum-read {
				t.Errorf("request %d: the event says %d tokens rewritten, a recount %d", n, e.Rewritten, sum-read)
			}
			if b := wantReq.Billed; math.Abs(e.Billed-b) > 1e-6*max(1, b) {
				t.Errorf("request %d: the event bills %.3f, a recount %.3f", n, e.Billed, b)
			}
		}
		if got.Rewrite && got.Event == nil {
			// (A new plan may also extend the previous prompt: after a
			// prompt over the budget, say.)
			t.Errorf("request %d: the prefix was rewritten without a new plan", n)
		}
		if !got.Rewrite && prev != nil && got.Read != rv.Requests[n-2].Prompt {
			t.Errorf("request %d: between maintenance points the prompt only grows, but it reads %d of the previous %d tokens", n, got.Read, rv.Requests[n-2].Prompt)
		}
		want.add(&wantReq, budget)
		// The references of the reply, kept when the prompt (within the
		// budget) shows each of their tokens in their result.
		for _, r := range all {
			if r.T != i {
				continue
			}
			want.References++
			j := slices.Index(res.Kept, r.R)
			if wantReq.Over || j < 0 {
				continue
			}
			shown := true
			for _, tok := range r.Tokens {
				shown = shown && (res.Messages[j].Content == msgs[r.R].Content || refs.Visible(refs.Text(&res.Messages[j]), tok))
			}
			if shown {
				want.Kept++
			}
		}
		prev = res.Messages
	}
	want.finish(budget)
	if n != len(rv.Requests) {
		t.Errorf("%d requests replayed, want %d", len(rv.Requests), n)
	}
	if !reflect.DeepEqual(rv.Totals, want) {
		t.Errorf("totals:\n got %+v\nwant %+v", rv.Totals, want)
	}
	if rv.Totals.Read+rv.Totals.Write != rv.Totals.Sent {
		t.Errorf("read %d + write %d != sent %d", rv.Totals.Read, rv.Totals.Write, rv.Totals.Sent)
	}
	return rv
}

// TestReplay replays the small sessions of testdata under every ladder
// and price preset.
func TestReplay(t *testing.T) {
	cases := []struct {
		file   string
		budget int
		reason string
	}{
		{"testdata/chat.jsonl", 900, "whole turns, a nudge in the last turn"},
		{"testdata/agent.jsonl", 2000, "elision, cleared arguments, a summary in a dropped turn, an orphan"},
		{"testdata/agent.jsonl", 1000, "the latest turn's steps are dropped too"},
	}
	for _, c := range cases {
		msgs := readSession(t, c.file)
		for _, l := range ladders {
			for _, p := range pricePresets {
				t.Run(filepath.Base(c.file)+"/"+l.name+"/"+p.Name, func(t *testing.T) {
					rv := checkReplay(t, msgs, c.budget, l.opts(), p)
					if rv.Totals.Rewrites == 0 {
						t.Errorf("no maintenance point (%s; %s): the case does not test the prefix check", c.reason, l.reason)
					}
				})
			}
		}
	}
}

// TestReplayCorpus replays every real session at a quarter of its size.
func TestReplayCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every session of the corpus")
	}
	if race.Enabled {
		t.Skip("single-goroutine replays of every corpus session, checked by the plain run (the race detector checks the calls, some ten times slower)")
	}
	files := corpusFiles(t)
	rewrites := 0
	for _, f := range files {
		msgs := readSession(t, f)
		total := 0
		for _, k := range countAll(msgs, history.Heuristic()) {
			total += k
		}
		for _, l := range ladders {
			t.Run(filepath.Base(f)+"/"+l.name, func(t *testing.T) {
				rv := checkReplay(t, msgs, max(total/4, 500), l.opts(), pricePresets[0])
				rewrites += rv.Totals.Rewrites
			})
		}
	}
	if rewrites == 0 {
		t.Error("no maintenance point in the whole corpus: the replay trims nothing")
	}
}

// TestPricePresets holds -prices to the core's presets.
func TestPricePresets(t *testing.T) {
	want := map[string]history.Prices{
		"anthropic": history.AnthropicPrices, "anthropic1h": history.AnthropicPrices1h,
		"openai": history.OpenAIPrices, "gemini": history.GeminiPrices,
	}
	if len(pricePresets) != len(want) {
		t.Errorf("%d presets, want %d", len(pricePresets), len(want))
	}
	for _, p := range pricePresets {
		if w, ok := want[p.Name]; !ok || p.Prices != w {
			t.Errorf("preset %s = %+v, want the core's %+v", p.Name, p.Prices, w)
		}
	}
	if pricePresets[0].Name != "anthropic" {
		t.Errorf("default preset %s, want anthropic (docs/cli.md)", pricePresets[0].Name)
	}
}

// TestReplayFront replays the coding sessions of the corpus at a quarter
// of their size and reads the front back: the trim's own point is its
// replay's totals, every policy of the front is there, and on the whole
// the task preset of fit's default keeps more of what the agent goes on to
// use than whole turns alone, for less input billed.
func TestReplayFront(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the coding sessions of the corpus five times")
	}
	if race.Enabled {
		t.Skip("single-goroutine replays of the corpus's long sessions, checked by the plain run (the race detector checks the calls, some ten times slower)")
	}
	var whole, def frontPoint
	sessions := 0
	for _, f := range corpusFiles(t) {
		if !strings.HasPrefix(filepath.Base(f), "claude-code") {
			continue
		}
		msgs := readSession(t, f)
		c := history.Heuristic()
		counts := countAll(msgs, c)
		total := 0
		for _, k := range counts {
			total += k
		}
		budget := max(total/4, 500)
		opts := []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim(), history.WithLowWater(0.7), history.WithCounter(c)}
		rv, err := replay(msgs, counts, c, budget, opts, pricePresets[0])
		if err != nil {
			t.Fatal(err)
		}
		pts, err := front(rv, msgs, counts, c, budget, pricePresets[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != 1+len(frontPolicies) || pts[0] != rv.Totals.point("the options of this trim") {
			t.Fatalf("%s: front %+v: the trim's point first, then each policy", f, pts)
		}
		for i, p := range frontPolicies {
			if pts[i+1].Policy != p.name || pts[i+1].References != rv.Totals.References {
				t.Errorf("%s: point %d is %+v, want %s on the same %d references", f, i+1, pts[i+1], p.name, rv.Totals.References)
			}
		}
		sessions++
		whole.References += pts[1].References
		whole.Recall += pts[1].Recall * float64(pts[1].References)
		whole.Billed += pts[1].Billed
		def.References += pts[2].References
		def.Recall += pts[2].Recall * float64(pts[2].References)
		def.Billed += pts[2].Billed
	}
	if sessions == 0 {
		t.Skip("no coding session in the corpus")
	}
	t.Logf("%d sessions: whole turns recall %.3f billed %.0f; fit's default recall %.3f billed %.0f", sessions,
		whole.Recall/float64(max(whole.References, 1)), whole.Billed, def.Recall/float64(max(def.References, 1)), def.Billed)
	if def.Recall <= whole.Recall || def.Billed >= whole.Billed {
		t.Errorf("fit's default does not keep more for less than whole turns alone")
	}
}
