// This file owns the measurement of issue 27: a simulated summariser (a
// latency and an output size, on the replay's virtual clock) in three
// modes, no summariser, synchronous summaries and background summaries,
// with the added latency at maintenance points, the input each summary
// request is handed, and the bill of the summary requests in their plain
// and cache-safe forms.

package cachesim

import (
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	history "github.com/histrim/history"
)

// SummaryMode is how a summary replay writes summaries.
type SummaryMode int

// The summary modes.
const (
	// SummaryNone: no summariser; the policy's elision and step trimming
	// alone, with a breadcrumb for the turns a maintenance point drops.
	SummaryNone SummaryMode = iota
	// SummarySync: history.WithSummarizer, the request waiting for the
	// summary at the maintenance point that drops turns.
	SummarySync
	// SummaryBackground: history.WithSummarizer with
	// history.SummaryOptions.Background: the summary starts when the
	// prompt crosses the trigger and is swapped in once ready.
	SummaryBackground
)

// String names the mode as the tables do.
func (m SummaryMode) String() string {
	switch m {
	case SummarySync:
		return "synchronous"
	case SummaryBackground:
		return "background"
	default:
		return "none (elision alone)"
	}
}

// Defaults of the simulated summariser (issue 27's acceptance).
const (
	// SummaryLatency is the time the simulated summariser takes per call,
	// on the replay's virtual clock.
	SummaryLatency = 2 * time.Second
	// SummaryOutput is the size of a simulated summary, in Counter
	// tokens: the model's output, billed at the output price.
	SummaryOutput = 1000
	// SummaryInstructionTokens is the summary instruction a summary
	// request appends to what it sends (the prompt of a ready-made
	// Summarizer, which asks to keep the task, decisions, files touched,
	// open questions and the user's constraints).
	SummaryInstructionTokens = 200
)

// SummaryConfig is one summary replay.
type SummaryConfig struct {
	// Base is the trimming policy (Budget, LowWater, Trigger, Ladder,
	// Elide, Spacing); the pattern is always a Trimmer (WithTrimmer).
	// Its replicas, state, time of idle gaps and retention, OnPrompt and
	// Summarize are not used: requests are Base.Spacing apart (0: 30
	// seconds) and the cache stays warm.
	Base Config
	// Mode is how summaries are written (SummaryNone: not at all).
	Mode SummaryMode
	// Latency is the simulated summariser's time per call (0:
	// SummaryLatency); Output the tokens of each summary (0:
	// SummaryOutput), which must be at least 1.
	Latency time.Duration
	Output  int
	// InputTokens is history.SummaryOptions.InputTokens (0: the budget,
	// a summariser on the conversation's own model). MaxTokens is
	// SummaryOptions.MaxTokens (0: Output plus 100, room for the line the
	// Trimmer puts before the summary).
	InputTokens, MaxTokens int
}

// SummaryStats are the totals of one summary replay. The embedded Stats
// count the conversation's requests as Replay does (Requests, Rewrites,
// Trims, Read, Write, Uncached, Billed at Base.Prices, Sent, AtLimit,
// SentAtLimit, MessagesAtLimit, TurnsAtLimit, OverBudget, Broken,
// Summaries); the other fields count the summaries.
type SummaryStats struct {
	Stats
	// MaintenancePoints counts the Trimmer's events; Latencies holds the
	// added latency of each one that dropped whole turns (where a summary
	// stands for them, or is written), in order: the virtual time the
	// request waited for the summariser during its Trim.
	MaintenancePoints int
	Latencies         []time.Duration
	// Waited is the virtual time all the requests waited for the
	// summariser, at maintenance points or not.
	Waited time.Duration
	// Outcomes counts the events by Event.Summary ("" when the event did
	// not involve a summary).
	Outcomes map[string]int
	// Jobs counts the summaries started (synchronous: the Trims that
	// called the summariser; background: the summaries the Trimmer
	// started); Calls counts the summariser's calls (a folded summary
	// makes several).
	Jobs, Calls int
	// InputBound is the bound on what one call is handed
	// (SummaryOptions.InputTokens, or the budget, and at least
	// MaxTokens); MaxInput is the largest input handed (the dropped
	// messages and the previous summary, counted with Counter), and
	// OverInput counts the calls handed more than InputBound (must be 0).
	InputBound, MaxInput, OverInput int
	// The summary requests, by price class. Plain form: each call sends
	// what it is handed and the instruction as a fresh request
	// (PlainUncached). Cache-safe form: each call sends the conversation's
	// last prompt (SafeRead, read from the cache; SafeUncached when that
	// prompt is under MinCacheable) and the instruction (SafeUncached).
	// MaxSafeRequest is the largest cache-safe request.
	PlainUncached, SafeRead, SafeUncached, MaxSafeRequest int
	// Output is the summaries' output tokens (Calls x Output).
	Output int
	// CarryRead, CarryWrite and CarryUncached are the tokens of the
	// summaries among the requests' Read, Write and Uncached: what
	// carrying a summary in the prompt costs.
	CarryRead, CarryWrite, CarryUncached int
}

// ProviderPrices are a provider's prices relative to its price for an
// uncached input token: the prompt cache's, and its output token's.
type ProviderPrices struct {
	// Name is the provider's, as the tables print it.
	Name string
	// Prices are the prompt cache's multipliers.
	Prices
	// Output is the multiplier of an output token.
	Output float64
	// Source is where the multipliers are published.
	Source string
}

// SummaryPrices are the rows a summary replay is billed with. The output
// multiplier is the ratio of the published output and input prices, the
// same across each provider's current models.
var SummaryPrices = []ProviderPrices{
	{Name: "Anthropic", Prices: DefaultPrices, Output: 5,
		Source: "platform.claude.com/docs/en/about-claude/pricing (Opus 5 $5/$25, Sonnet 5 $2/$10, Haiku 4.5 $1/$5 per MTok; reads 0.1x, 5-minute writes 1.25x)"},
	{Name: "OpenAI", Prices: Prices{Read: 0.1, Write: 1, Uncached: 1}, Output: 8,
		Source: "developers.openai.com/api/docs/pricing (GPT-5 $1.25/$10, GPT-5.2 $1.75/$14 per MTok; cached input 0.1x, no write premium)"},
}

// SessionBill is what a summary replay bills under one ProviderPrices, in
// uncached-input-token units.
type SessionBill struct {
	// Requests is the conversation's requests, of which Carry is the
	// summaries they carry; Plain and Safe the summary requests' input
	// in each form; Output the summaries' output.
	Requests, Carry, Plain, Safe, Output float64
}

// Total returns the session's bill: the requests, the summary requests
// in the cache-safe form (safe) or the plain one, and the summaries'
// output.
func (b SessionBill) Total(safe bool) float64 {
	if safe {
		return b.Requests + b.Safe + b.Output
	}
	return b.Requests + b.Plain + b.Output
}

// Bill prices the replay's tokens under p.
func (s *SummaryStats) Bill(p ProviderPrices) SessionBill {
	return SessionBill{
		Requests: p.Read*float64(s.Read) + p.Write*float64(s.Write) + p.Uncached*float64(s.Uncached),
		Carry:    p.Read*float64(s.CarryRead) + p.Write*float64(s.CarryWrite) + p.Uncached*float64(s.CarryUncached),
		Plain:    p.Uncached * float64(s.PlainUncached),
		Safe:     p.Read*float64(s.SafeRead) + p.Uncached*float64(s.SafeUncached),
		Output:   p.Output * float64(s.Output),
	}
}

// Percentile returns the q-quantile (0 to 1) of the added latencies,
// nearest rank; 0 when there are none.
func (s *SummaryStats) Percentile(q float64) time.Duration {
	if len(s.Latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.Latencies)
	slices.Sort(l)
	i := int(math.Ceil(q*float64(len(l)))) - 1
	return l[min(max(i, 0), len(l)-1)]
}

// ReplaySummaries replays session as Replay does for a Trimmer (a request
// before every assistant message, with everything before it as the
// transcript) under cfg.Base's policy and cfg.Mode's summaries, written
// by a simulated summariser that takes cfg.Latency per call and returns
// cfg.Output tokens.
//
// Time is virtual. In synchronous mode each call advances the clock while
// the request waits. In background mode the summariser blocks until the
// replay releases it, once the clock has passed the call's start plus the
// latency. The replay advances the clock only between requests, so a Trim
// that waited for a background summary would never return (the replay
// reports it as an error after a minute of real time). Before each
// request the replay lets the summary run up to the request's time and,
// once every call is released, waits for it to finish
// (history.Trimmer.SummaryDone), so that every run gives the same result.
func ReplaySummaries(session []history.Message, cfg SummaryConfig) (SummaryStats, error) {
	r, err := newSumReplay(cfg)
	if err != nil {
		return SummaryStats{}, err
	}
	defer r.tr.Close()
	for i := range session {
		if session[i].Role != history.RoleAssistant || i == 0 {
			continue
		}
		if err := r.request(session[:i]); err != nil {
			return r.st, err
		}
	}
	r.settle(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)) // what is in flight is finished, and billed
	r.st.Billed = r.st.Bill(ProviderPrices{Prices: r.cfg.Base.Prices}).Requests
	r.st.MinAtLimit = max(r.st.MinAtLimit, 0)
	return r.st, nil
}

// sumReplay is the state of one summary replay.
type sumReplay struct {
	cfg    SummaryConfig
	clock  *vclock
	sim    *simSummarizer
	tr     *history.Trimmer
	events []history.Event // of the current request

	prev  []history.Message // the previous prompt
	meter Meter             // bills the prompts; InCache: the previous one is cached
	st    SummaryStats

	// Background: the summary in flight (done is its SummaryDone channel,
	// nil when none), its call waiting for the clock (blocked), the
	// virtual time its current call started (at), and the prompt its
	// cache-safe requests send.
	done    <-chan struct{}
	blocked *simCall
	at      time.Time
	prefix  int
	cached  bool
}

// newSumReplay sets the config's defaults and builds the Trimmer.
func newSumReplay(cfg SummaryConfig) (*sumReplay, error) {
	b := &cfg.Base
	if b.Prices == (Prices{}) {
		b.Prices = DefaultPrices
	}
	if b.Spacing == 0 {
		b.Spacing = 30 * time.Second
	}
	if cfg.Latency == 0 {
		cfg.Latency = SummaryLatency
	}
	if cfg.Output == 0 {
		cfg.Output = SummaryOutput
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = cfg.Output + 100
	}
	if cfg.Output < 1 || cfg.Latency < 0 || b.Budget <= 0 {
		return nil, errors.New("cachesim: summary replay needs a positive budget and output, and a latency not negative")
	}
	r := &sumReplay{cfg: cfg, clock: &vclock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		st: SummaryStats{Outcomes: map[string]int{}}}
	r.st.MinAtLimit = -1
	r.sim = &simSummarizer{clock: r.clock, latency: cfg.Latency, output: cfg.Output}
	if cfg.Mode == SummaryBackground {
		r.sim.calls = make(chan *simCall)
	}
	opts := []history.Option{history.WithCounter(Counter)}
	if b.LowWater > 0 {
		opts = append(opts, history.WithLowWater(b.LowWater))
	}
	if b.Ladder {
		opts = append(opts, history.WithElision(b.Elide), history.WithStepTrim())
	}
	if b.Trigger > 0 {
		opts = append(opts, history.WithTrigger(b.Trigger))
	}
	opts = append(opts, history.WithClock(r.clock.now),
		history.WithOnTrim(func(e history.Event) { r.events = append(r.events, e) }))
	r.st.InputBound = max(cmp0(cfg.InputTokens, b.Budget), cfg.MaxTokens)
	if cfg.Mode != SummaryNone {
		opts = append(opts, history.WithSummarizer(r.sim, history.SummaryOptions{
			MaxTokens: cfg.MaxTokens, InputTokens: cfg.InputTokens,
			// Real time: far beyond what a replay takes between two requests,
			// so that no call ever times out.
			Timeout:    10 * time.Minute,
			Background: cfg.Mode == SummaryBackground,
		}))
	}
	r.tr = history.NewTrimmer(opts...)
	return r, nil
}

// cmp0 returns v, or def when v is 0.
func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// request sends one request: the clock moves to its time, a background
// summary runs up to it, the Trimmer trims the transcript, and the prompt,
// its events and the summaries it caused are counted and billed.
func (r *sumReplay) request(transcript []history.Message) error {
	r.clock.add(r.cfg.Base.Spacing)
	at := r.clock.now()
	r.settle(at)
	r.events = r.events[:0]
	calls := r.sim.count()
	res, err := r.trim(transcript)
	if err != nil && !isBudgetError(err) {
		return err
	}
	waited := r.clock.now().Sub(at)
	r.st.Waited += waited
	prompt := res.Messages
	r.countEvents(waited)
	if r.cfg.Mode == SummarySync {
		r.chargeSync(calls)
	}
	prevCache := r.meter.InCache()
	r.bill(transcript, res)
	if r.cfg.Mode == SummaryBackground {
		r.track(at, prompt, prevCache)
	}
	r.prev = prompt
	return nil
}

// trim calls the Trimmer. In background mode a Trim that waited for the
// summariser would wait forever (the replay releases calls only between
// requests): it is reported as an error after a minute instead.
func (r *sumReplay) trim(transcript []history.Message) (history.Result, error) {
	if r.cfg.Mode != SummaryBackground {
		return r.tr.Trim(transcript, r.cfg.Base.Budget)
	}
	type result struct {
		res history.Result
		err error
	}
	ch := make(chan result, 1)
	go func() {
		res, err := r.tr.Trim(transcript, r.cfg.Base.Budget)
		ch <- result{res, err}
	}()
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case x := <-ch:
		return x.res, x.err
	case <-t.C:
		return history.Result{}, errors.New("cachesim: a request waited for a background summary")
	}
}

// countEvents counts the request's maintenance point, if any, and the
// time it waited for the summariser when it dropped whole turns.
func (r *sumReplay) countEvents(waited time.Duration) {
	for _, e := range r.events {
		r.st.MaintenancePoints++
		r.st.Outcomes[e.Summary]++
		if e.Summary == history.SummaryWritten {
			r.st.Summaries++
		}
		if e.DroppedTurns > 0 {
			r.st.Latencies = append(r.st.Latencies, waited)
		}
	}
}

// chargeSync counts the calls a synchronous Trim made (those after the
// first calls of the summariser's record), each a summary request whose
// cache-safe form sends the previous prompt.
func (r *sumReplay) chargeSync(calls int) {
	inputs := r.sim.inputsFrom(calls)
	if len(inputs) > 0 {
		r.st.Jobs++
	}
	for _, in := range inputs {
		r.charge(in, history.Estimate(r.prev, Counter), r.meter.InCache())
	}
}

// charge counts one summariser call handed input tokens, whose cache-safe
// request sends a prompt of prefix tokens (cached or not) first.
func (r *sumReplay) charge(input, prefix int, cached bool) {
	st := &r.st
	st.Calls++
	st.Output += r.cfg.Output
	st.MaxInput = max(st.MaxInput, input)
	if input > st.InputBound {
		st.OverInput++
	}
	st.PlainUncached += input + SummaryInstructionTokens
	if cached && prefix >= MinCacheable {
		st.SafeRead += prefix
		st.SafeUncached += SummaryInstructionTokens
	} else {
		st.SafeUncached += prefix + SummaryInstructionTokens
	}
	st.MaxSafeRequest = max(st.MaxSafeRequest, prefix+SummaryInstructionTokens)
}

// bill counts the request's prompt as Replay does: the longest common
// prefix with the previous prompt read from the cache, the rest written;
// a prompt under MinCacheable uncached. The summaries it carries are
// counted apart too.
func (r *sumReplay) bill(transcript []history.Message, res history.Result) {
	st := &r.st
	prompt := res.Messages
	tokens := st.count(transcript, prompt, r.cfg.Base.Budget, res.Trimmed)
	b := r.meter.Add(prompt, tokens, false)
	if b.Rewrite {
		st.Rewrites++
	}
	st.Read += b.Read
	st.Write += b.Write
	st.Uncached += b.Uncached
	cached, l := b.Cached, b.Prefix
	for j := range prompt {
		if prompt[j].Kind != history.KindSummary {
			continue
		}
		switch n := Counter.CountMessage(prompt[j]); {
		case tokens < MinCacheable:
			st.CarryUncached += n
		case cached && j < l:
			st.CarryRead += n
		default:
			st.CarryWrite += n
		}
	}
}

// track notes a background summary the request's Trim started: it starts
// at the request's time, and its cache-safe requests send the prompt that
// holds the turns it covers, the request's own (read from the cache once
// the request has written it), or the previous one when the Trim was a
// maintenance point that dropped them already (prevCache: that one was
// cached). The summary then runs up
// to the request's time: its first call is made and waits for the clock.
func (r *sumReplay) track(at time.Time, prompt []history.Message, prevCache bool) {
	d := r.tr.SummaryDone()
	select {
	case <-d:
		return
	default:
	}
	if d != r.done {
		r.done, r.at = d, at
		r.st.Jobs++
		r.prefix, r.cached = history.Estimate(prompt, Counter), r.meter.InCache()
		if len(r.events) > 0 {
			r.prefix, r.cached = history.Estimate(r.prev, Counter), prevCache
		}
	}
	r.settle(at)
}

// settle runs the background summary in flight up to virtual time t: it
// releases each call once t has passed its start plus the latency (the
// next call starts then), and returns when the call waiting is not due by
// t, or when the summary has finished.
func (r *sumReplay) settle(t time.Time) {
	for r.done != nil {
		if r.blocked == nil {
			select {
			case <-r.done:
				r.done = nil
				return
			case c := <-r.sim.calls:
				r.charge(c.input, r.prefix, r.cached)
				c.due = r.at.Add(r.cfg.Latency)
				r.blocked = c
			}
			continue
		}
		if r.blocked.due.After(t) {
			return
		}
		r.at = r.blocked.due
		close(r.blocked.release)
		r.blocked = nil
	}
}

// vclock is the replay's virtual clock, read by the Trimmer
// (history.WithClock) and advanced by the replay and the synchronous
// summariser.
type vclock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *vclock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *vclock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// simCall is a background call of the simulated summariser, waiting for
// the replay to release it at due.
type simCall struct {
	input   int
	due     time.Time
	release chan struct{}
}

// simSummarizer is the simulated summariser: it records the input it is
// handed, takes latency (advancing the clock, or, in background mode,
// waiting for the replay on calls) and returns a summary of output tokens,
// numbered so that no two are the same (from 50 tokens up).
type simSummarizer struct {
	clock   *vclock
	latency time.Duration
	output  int
	calls   chan *simCall // background mode; nil: synchronous

	mu     sync.Mutex
	inputs []int
}

// Summarize implements history.Summarizer.
func (s *simSummarizer) Summarize(ctx context.Context, dropped []history.Message, previous *history.Message) (history.Message, error) {
	in := history.Estimate(dropped, Counter)
	if previous != nil {
		in += Counter.CountMessage(*previous)
	}
	s.mu.Lock()
	s.inputs = append(s.inputs, in)
	n := len(s.inputs)
	s.mu.Unlock()
	if s.calls == nil {
		s.clock.add(s.latency) // the request waits
	} else {
		c := &simCall{input: in, release: make(chan struct{})}
		select {
		case s.calls <- c:
		case <-ctx.Done():
			return history.Message{}, ctx.Err()
		}
		select {
		case <-c.release:
		case <-ctx.Done():
			return history.Message{}, ctx.Err()
		}
	}
	return history.Message{Role: history.RoleUser, Content: summaryText(n, s.output)}, nil
}

// count returns the number of calls so far.
func (s *simSummarizer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inputs)
}

// inputsFrom returns the inputs of the calls after the first n.
func (s *simSummarizer) inputsFrom(n int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.inputs[n:])
}

// summaryText returns summary n, exactly tokens long as Counter counts a
// user message holding it; two are different from 50 tokens up (shorter,
// the number is cut off).
func summaryText(n, tokens int) string {
	head := "Summary " + strconv.Itoa(n) + ": the task, the decisions made, the files touched, the open questions. "
	// Counter counts a user message by its length: the shortest content
	// that counts tokens.
	count := func(n int) int {
		return Counter.CountMessage(history.Message{Role: history.RoleUser, Content: strings.Repeat("x", n)})
	}
	size := sort.Search(8*tokens+8, func(n int) bool { return count(n) >= tokens })
	if size <= len(head) {
		return head[:size]
	}
	return head + strings.Repeat("Details of the work so far. ", (size-len(head))/28+1)[:size-len(head)]
}
