package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
	"github.com/histrim/history/internal/refs"
)

// A pricePreset names one of the core's price presets for -prices.
type pricePreset struct {
	Name   string
	Prices history.Prices
}

// pricePresets are the -prices values, the first the default; a new
// preset in the core is one more row.
var pricePresets = []pricePreset{
	{"anthropic", history.AnthropicPrices},
	{"anthropic1h", history.AnthropicPrices1h},
	{"openai", history.OpenAIPrices},
	{"gemini", history.GeminiPrices},
}

// presetNames lists the presets for messages: "a, b, c or d".
func presetNames() string {
	s := ""
	for i, p := range pricePresets {
		switch {
		case i == 0:
		case i == len(pricePresets)-1:
			s += " or "
		default:
			s += ", "
		}
		s += p.Name
	}
	return s
}

// replayView is a session replayed request by request with one
// history.Trimmer: what each request sends, reads from the provider's
// prompt cache, writes to it and bills. Its JSON form is the "replay"
// object of -json.
type replayView struct {
	// Prices is the preset's name; Read and Write its prices, in
	// multiples of an uncached input token.
	Prices   string        `json:"prices"`
	Read     float64       `json:"read_price"`
	Write    float64       `json:"write_price"`
	Requests []requestView `json:"requests"`
	Totals   replayTotals  `json:"totals"`
	// Front puts the options of the trim beside package fit's three
	// policies and whole turns alone, each replayed on the same session:
	// what each keeps of what the agent goes on to use against what it
	// bills (the first point is the options of the trim).
	Front []frontPoint `json:"front"`
}

// frontPoint is one policy replayed on the session: its reference recall
// (see bench/quality: the share of the tokens the agent took from a tool
// result that the request for its reply still shows) against its bill.
type frontPoint struct {
	Policy     string  `json:"policy"`
	Recall     float64 `json:"recall"`
	References int     `json:"references"`
	Billed     float64 `json:"billed"`
	Rewrites   int     `json:"rewrites"`
	Sent       int     `json:"sent"`
}

// frontPolicies are the policies a replay's front compares with the
// options of the trim.
var frontPolicies = []struct {
	name string
	opts []history.Option
}{
	{"whole turns (no ladder)", nil},
	{"fit's default", fit.Policy()},
	{"fit.Cheaper()", []history.Option{fit.Cheaper()}},
	{"fit.KeepMore()", []history.Option{fit.KeepMore()}},
}

// front replays msgs under each of frontPolicies (with c, as the replay
// rv of the trim's options was) and returns rv's point, then theirs.
func front(rv *replayView, msgs []history.Message, counts []int, c history.Counter, budget int, preset pricePreset) ([]frontPoint, error) {
	out := []frontPoint{rv.Totals.point("the options of this trim")}
	for _, p := range frontPolicies {
		o, err := replay(msgs, counts, c, budget, append(slices.Clip(p.opts), history.WithCounter(c)), preset)
		if err != nil {
			return nil, err
		}
		out = append(out, o.Totals.point(p.name))
	}
	return out, nil
}

// point returns the totals as a point of the front.
func (t *replayTotals) point(name string) frontPoint {
	recall := 0.0
	if t.References > 0 {
		recall = float64(t.Kept) / float64(t.References)
	}
	return frontPoint{Policy: name, Recall: recall, References: t.References, Billed: t.Billed, Rewrites: t.Rewrites, Sent: t.Sent}
}

// requestView is one request of a replay.
type requestView struct {
	// N numbers the requests from 1.
	N int `json:"request"`
	// Before is the index of the assistant message the request produced:
	// the transcript is the Before messages before it.
	Before int `json:"before_message"`
	// Transcript is the tokens of the whole transcript; Prompt those of
	// the prompt sent, Messages its number of messages.
	Transcript int `json:"transcript_tokens"`
	Prompt     int `json:"prompt_tokens"`
	Messages   int `json:"prompt_messages"`
	// Read is the tokens of the prompt's longest common prefix (in whole
	// messages) with the previous prompt, read from the cache; Write the
	// rest, processed and written to it.
	Read  int `json:"cache_read"`
	Write int `json:"cache_write"`
	// Billed is Read and Write at the preset's prices, in uncached-token
	// units.
	Billed float64 `json:"billed"`
	// Rewrite marks a maintenance point: the prompt does not start with
	// the whole previous prompt.
	Rewrite bool `json:"rewrite"`
	// Trimmed reports that the prompt leaves part of the transcript out;
	// Over that it exceeds the budget (its latest turn does not fit).
	Trimmed bool `json:"trimmed"`
	Over    bool `json:"over_budget"`
	// Event is the event of the Trimmer's new plan, nil when it reused its
	// plan or had nothing to trim.
	Event *history.Event `json:"event,omitempty"`
}

// replayTotals are the totals bench/cachesim prints for one policy.
type replayTotals struct {
	Requests int `json:"requests"`
	// AtLimit counts the requests whose transcript exceeded the budget.
	AtLimit    int `json:"at_limit"`
	Trims      int `json:"trims"`
	Rewrites   int `json:"rewrites"`
	OverBudget int `json:"over_budget"`
	// Read, Write and Sent (= Read + Write) are token sums; Billed the
	// billed input; NoCache what Sent bills without a cache (1x).
	Read    int     `json:"cache_read"`
	Write   int     `json:"cache_write"`
	Sent    int     `json:"sent"`
	Billed  float64 `json:"billed"`
	NoCache float64 `json:"no_cache"`
	// MeanAtLimit is the mean prompt of the requests at the limit, as a
	// share of the budget; MinAtLimit the smallest of them (0 when none).
	MeanAtLimit float64 `json:"mean_prompt_at_limit"`
	MinAtLimit  int     `json:"min_prompt_at_limit"`
	// References counts the references of the requests (a token of a
	// tool result that the reply goes on to use; see internal/refs), Kept
	// those the prompt still shows (none in a prompt over the budget).
	References int `json:"references"`
	Kept       int `json:"references_kept"`
}

// replay sends a request before every assistant message of msgs but the
// first message (the model's reply; the transcript is every message before
// it, as bench/cachesim does) through one Trimmer with opts and prices p,
// and bills it. counts are c's counts of msgs.
func replay(msgs []history.Message, counts []int, c history.Counter, budget int, opts []history.Option, preset pricePreset) (*replayView, error) {
	rv := &replayView{Prices: preset.Name, Read: preset.Prices.Read, Write: preset.Prices.Write, Requests: []requestView{}}
	var ev *history.Event
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := history.NewTrimmer(append(slices.Clip(opts),
		history.WithPrices(preset.Prices),
		history.WithClock(func() time.Time { return now }), // 30 s apart: the cache stays warm
		history.WithOnTrim(func(e history.Event) { ev = &e }))...)

	var prev prompt
	full := 0 // tokens of msgs[:i]
	t := &rv.Totals
	rest := refs.Of(msgs)
	for i := range msgs {
		if i == 0 || msgs[i].Role != history.RoleAssistant {
			full = satAdd(full, counts[i])
			continue
		}
		for len(rest) > 0 && rest[0].T < i {
			rest = rest[1:]
		}
		var mine []refs.Ref
		mine, rest = refs.At(rest, i)
		now = now.Add(30 * time.Second)
		ev = nil
		res, err := tr.Trim(msgs[:i], budget)
		if err != nil && !errors.As(err, new(*history.BudgetError)) {
			return nil, err
		}
		p := newPrompt(res, counts, c)
		l := p.commonPrefix(&prev)
		r := requestView{
			N: len(rv.Requests) + 1, Before: i, Transcript: full, Prompt: res.TokensAfter, Messages: len(res.Messages),
			Rewrite: prev.kept != nil && l < len(prev.kept), Trimmed: res.Trimmed, Over: res.TokensAfter > budget, Event: ev,
		}
		if prev.kept != nil {
			for _, n := range p.tokens[:l] {
				r.Read = satAdd(r.Read, n)
			}
		}
		r.Write = r.Prompt - min(r.Read, r.Prompt)
		r.Billed = float64(r.Read)*preset.Prices.Read + float64(r.Write)*preset.Prices.Write
		rv.Requests = append(rv.Requests, r)
		t.add(&r, budget)
		t.References += len(mine)
		if !r.Over && len(mine) > 0 {
			kept, _ := refs.Kept(msgs[:i], &res, mine)
			t.Kept += kept
		}
		prev = p
		full = satAdd(full, counts[i])
	}
	t.finish(budget)
	return rv, nil
}

// add counts r in the totals.
func (t *replayTotals) add(r *requestView, budget int) {
	t.Requests++
	t.Read = satAdd(t.Read, r.Read)
	t.Write = satAdd(t.Write, r.Write)
	t.Sent = satAdd(t.Sent, r.Prompt)
	t.Billed += r.Billed
	if r.Rewrite {
		t.Rewrites++
	}
	if r.Trimmed {
		t.Trims++
	}
	if r.Over {
		t.OverBudget++
	}
	if r.Transcript > budget {
		t.AtLimit++
		t.MeanAtLimit += float64(r.Prompt)
		if t.AtLimit == 1 || r.Prompt < t.MinAtLimit {
			t.MinAtLimit = r.Prompt
		}
	}
}

// finish turns the sums into the totals' means.
func (t *replayTotals) finish(budget int) {
	t.NoCache = float64(t.Sent)
	if t.AtLimit > 0 {
		t.MeanAtLimit /= float64(t.AtLimit) * float64(budget)
	}
}

// prompt is one request's prompt, as the cache sees it.
type prompt struct {
	res      history.Result
	kept     []int  // res.Kept
	modified []bool // messages sent changed (elided, cleared, stripped)
	tokens   []int  // each message's count
}

// newPrompt counts res's messages: an unchanged message of the transcript
// has its count from counts, the others are counted with c.
func newPrompt(res history.Result, counts []int, c history.Counter) prompt {
	p := prompt{res: res, kept: res.Kept, modified: make([]bool, len(res.Kept)), tokens: make([]int, len(res.Kept))}
	for _, j := range res.Modified {
		p.modified[j] = true
	}
	for j, k := range res.Kept {
		if k >= 0 && !p.modified[j] {
			p.tokens[j] = counts[k]
		} else {
			p.tokens[j] = c.CountMessage(res.Messages[j])
		}
	}
	return p
}

// commonPrefix returns how many leading messages p shares with q, as the
// provider's cache sees them: equal in every field. (The same message of
// the transcript sent unchanged is equal without a look: the transcript
// only grows. Two positions may hold equal messages, so other pairs are
// compared.)
func (p *prompt) commonPrefix(q *prompt) int {
	n := min(len(p.kept), len(q.kept))
	for j := range n {
		if p.kept[j] == q.kept[j] && p.kept[j] >= 0 && !p.modified[j] && !q.modified[j] {
			continue
		}
		if !sameMessage(&p.res.Messages[j], &q.res.Messages[j]) {
			return j
		}
	}
	return n
}

// sameMessage reports whether a and b are equal in every field.
func sameMessage(a, b *history.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Kind == b.Kind && a.ToolCallID == b.ToolCallID &&
		a.Name == b.Name && slices.Equal(a.ToolCalls, b.ToolCalls) && slices.Equal(a.Parts, b.Parts)
}

// write prints the replay for the text report.
func (rv *replayView) write(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	t := &rv.Totals
	p("\nreplay:  %d requests, one Trimmer, prices %s (read %gx, write %gx)\n", t.Requests, rv.Prices, rv.Read, rv.Write)
	p("totals:  %d at the limit, %d trimmed, %d maintenance points, %d over budget\n", t.AtLimit, t.Trims, t.Rewrites, t.OverBudget)
	saving := 0.0
	if t.NoCache > 0 {
		saving = 100 * (t.Billed/t.NoCache - 1)
	}
	p("cache:   %d read, %d written; billed %.0f, %.0f without a cache (%+.1f%%)\n", t.Read, t.Write, t.Billed, t.NoCache, saving)
	if t.AtLimit > 0 {
		p("limit:   mean prompt %.2fx the budget, smallest %d tokens\n", t.MeanAtLimit, t.MinAtLimit)
	}
	if len(rv.Front) > 0 {
		p("\nfront:   each policy replayed on this session; recall of the %d references against the bill\n", rv.Front[0].References)
		for _, f := range rv.Front {
			recall := "–"
			if f.References > 0 {
				recall = strconv.FormatFloat(f.Recall, 'f', 3, 64)
			}
			p("  %-26s  recall %5s  billed %10.0f  rewrites %4d\n", f.Policy, recall, f.Billed, f.Rewrites)
		}
	}
	p("\nrequests:\n  request  before  transcript  prompt    read   write    billed\n")
	for i := range rv.Requests {
		q := &rv.Requests[i]
		note := requestNote(q)
		if note != "" {
			note = "  " + note
		}
		p("  %7d  %6d  %10d  %6d  %6d  %6d  %8.1f%s\n", q.N, q.Before, q.Transcript, q.Prompt, q.Read, q.Write, q.Billed, note)
	}
}

// requestNote says what happened at a request: a maintenance point and its
// event, a prompt over the budget.
func requestNote(q *requestView) string {
	var parts []string
	if q.Rewrite {
		parts = append(parts, "maintenance point: prefix rewritten")
	}
	if e := q.Event; e != nil {
		s := "new plan (" + e.Reason + "): " + strconv.Itoa(e.DroppedTurns) + " turns dropped"
		if e.DroppedSteps > 0 {
			s += ", " + strconv.Itoa(e.DroppedSteps) + " steps"
		}
		if e.ElidedResults > 0 {
			s += ", " + strconv.Itoa(e.ElidedResults) + " results elided"
		}
		s += "; event: rewritten " + num(e.Rewritten) + ", billed " + fnum(e.Billed)
		parts = append(parts, s)
	}
	if q.Over {
		parts = append(parts, "over the budget")
	}
	return strings.Join(parts, "; ")
}

// satAdd returns a+b for non-negative counts, saturating at math.MaxInt.
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
