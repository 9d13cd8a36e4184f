// Package cachesim replays long agent sessions request by request, trims
// the history before every request the way a runtime would, and bills each
// request under a prompt-cache price model, to measure what trimming costs
// in cache misses and what hysteresis (history.WithLowWater) and a
// history.Trimmer save.
//
// # Price model
//
// A request's prompt is a list of messages, each with a token count. The
// provider keeps the previous request's prompt in its cache (a cache
// breakpoint on the last message of every request, the usual setting for
// agent loops, and requests close enough together that the cache is warm).
// For request r with prompt P and previous prompt Q:
//
//   - L is the longest common prefix of P and Q in whole messages (two
//     messages are equal when all their fields are).
//   - Cached read: the tokens of P[:L], billed at Prices.Read (0.1x).
//   - Cache write: the tokens of P[L:], billed at Prices.Write (1.25x):
//     everything after the common prefix is processed and written to the
//     cache for the next request.
//   - Uncached: a prompt under MinCacheable tokens (providers do not cache
//     short prompts, 1024 tokens for most models) is billed entirely at
//     Prices.Uncached (1x), and the next request reads nothing from it.
//     The first request of a session has no previous prompt: it is all
//     write.
//   - A prefix rewrite is a request whose prompt does not start with the
//     whole previous prompt (L < len(Q)): something before the new
//     messages changed, typically because the trim moved its cut.
//   - Retention: with Config.Retention set, requests are placed in time
//     (Config.Spacing apart, and Config.Idle before every IdleEvery-th user
//     turn); a request more than Retention after the previous one finds
//     the cache expired and reads nothing: it is all write, a cold request.
//     Each request refreshes the cache, as Anthropic's does.
//
// Output tokens are not billed here: they are the same whatever the
// trimming.
//
// # Usage patterns
//
// Persisted (a): the runtime stores the trimmed history it sent, and
// appends the model's reply and the next messages to it; it trims that
// stored history with TrimToRecentTurns before each request. Transcript
// (b): the runtime keeps the full transcript and trims a view of it before
// each request, either statelessly with TrimToRecentTurns or with a
// history.Trimmer.
//
// # Replicas
//
// With Config.Replicas, pattern (b) with a Trimmer runs on several
// replicas of the runtime, each request sent to one of them at random (as
// a load balancer does), each replica keeping its own Trimmer for the
// conversation. With Config.State they are history.Conversations sharing
// that StateStore (a Trimmer's state loaded and saved around every
// request); without it, nothing is shared, as before the library could
// save a Trimmer's state. The price model is the same: the provider's
// cache is one, whichever replica sends the request.
package cachesim

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	history "github.com/histrim/history"
)

// Prices are the multipliers of the price model, relative to an uncached
// input token.
type Prices struct {
	Read, Write, Uncached float64
}

// DefaultPrices are the model: cached read 0.1x, cache write
// 1.25x, uncached 1x (Anthropic's published multipliers for a 5-minute
// cache).
var DefaultPrices = Prices{Read: 0.1, Write: 1.25, Uncached: 1}

// MinCacheable is the smallest prompt, in tokens, that the model caches.
const MinCacheable = 1024

// Counter is the simulator's token counter: one token per 3.5 bytes of
// text (the average rate of code, JSON and prose in the shared corpus,
// docs/tokens.md) plus 4 tokens of framing per message and 3 per tool
// call, computed from field lengths only, so that replaying thousands of
// requests over megabytes of transcript stays fast. The cmd/cachesim output
// prints its total next to history.Heuristic's for each session; the
// results are ratios between policies and do not depend on the rate.
var Counter = history.CounterFunc(func(m history.Message) int {
	b := len(m.Content) + len(m.ToolCallID)
	n := 4
	if m.Name != "" {
		n++
		b += len(m.Name)
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		n += 3
		b += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	for i := range m.Parts {
		b += len(m.Parts[i].Text)
	}
	return n + (b*286+999)/1000
})

// Pattern is how the runtime holds its history.
type Pattern int

// The usage patterns.
const (
	// Persisted is pattern (a): the runtime stores the trimmed history it
	// sent and appends to it.
	Persisted Pattern = iota
	// Stateless is pattern (b) with a stateless TrimToRecentTurns of the
	// full transcript before each request.
	Stateless
	// WithTrimmer is pattern (b) with a history.Trimmer.
	WithTrimmer
)

// String names the pattern as the tables do.
func (p Pattern) String() string {
	switch p {
	case Persisted:
		return "a: persisted + TrimToRecentTurns"
	case Stateless:
		return "b: transcript + TrimToRecentTurns"
	default:
		return "b: transcript + Trimmer"
	}
}

// Config is one simulated policy.
type Config struct {
	Pattern Pattern
	Budget  int
	// LowWater is the WithLowWater fraction; 0 means none (trim to the
	// exact budget).
	LowWater float64
	// Ladder adds history.WithElision (default ElideOptions) and
	// history.WithStepTrim: elision first, then steps of the latest turn.
	// With a Trimmer, a maintenance point elides every eligible result.
	Ladder bool
	// Elide are the elision options of the ladder (zero: the defaults).
	Elide history.ElideOptions
	// Task replaces the ladder's options by history.WithTask(goal,
	// Elide), goal the session's first user message: the goal-keeping
	// preset (digests, the cut rung, the injected-message turn rule).
	Task bool
	// Trigger is the history.WithTrigger fraction; 0 means none (a trim
	// starts past the budget).
	Trigger float64
	Prices  Prices

	// Time. Spacing is the time between requests (0: 30 seconds); every
	// IdleEvery-th user turn (0: none) starts Idle after the previous
	// request. Retention is the provider's cache retention (0: the cache
	// never expires). ColdAfter is the Trimmer's history.WithColdAfter (0:
	// the library's default); with the ladder, a Trimmer prunes on a
	// request that comes later than that (a cold resume).
	Spacing, Idle        time.Duration
	IdleEvery            int
	Retention, ColdAfter time.Duration

	// Summarize adds history.WithSummarizer with Summarizer (MaxTokens
	// SummaryTokens): a summary of about SummaryTokens/2 tokens that
	// numbers its calls, so that no two are the same, as a model's are
	// not.
	Summarize bool

	// Replicas, above 1, sends each request to one of that many replicas
	// at random (from Seed), each with its own Trimmer (pattern
	// WithTrimmer). State, when set, is the StateStore they share through
	// history.Conversations (with Replicas 0 or 1: one replica through
	// it), under the conversation key Key ("session").
	Replicas int
	Seed     uint64
	State    history.StateStore
	Key      string
	// OnPrompt, when set, is called with every request's prompt, in order.
	OnPrompt func(request int, prompt []history.Message)
}

// SummaryTokens is the summaries' budget (SummaryOptions.MaxTokens) with
// Config.Summarize.
const SummaryTokens = 2048

// summarizer returns the simulation's summariser: a summary of about half
// its budget, numbered by call.
func summarizer() history.Summarizer {
	n := 0
	body := strings.Repeat("The user and the agent worked on the task; files read, edits made, tests run. ", 40)
	return history.SummarizerFunc(func(_ context.Context, dropped []history.Message, _ *history.Message) (history.Message, error) {
		n++
		return history.Message{Role: history.RoleUser, Content: "Summary " + strconv.Itoa(n) + " of " + strconv.Itoa(len(dropped)) + " messages. " + body}, nil
	})
}

// Stats are the totals of one replay.
type Stats struct {
	Requests int
	// Rewrites counts prefix rewrites (see the package doc).
	Rewrites int
	// Trims counts requests whose prompt left out part of the transcript.
	Trims int
	// Read, Write and Uncached are token totals by price class; Billed is
	// their price-weighted sum in uncached-token units.
	Read, Write, Uncached int
	Billed                float64
	// Sent is the total of prompt tokens over all requests; NoCache is
	// what they would bill with no cache (Sent at 1x).
	Sent int
	// AtLimit counts the requests whose full transcript exceeded the
	// budget; SentAtLimit is their prompt tokens and FullAtLimit what the
	// full transcripts would have been. SentAtLimit/AtLimit/Budget is the
	// context kept when trimming is active.
	AtLimit     int
	SentAtLimit int
	MinAtLimit  int // smallest prompt among them
	// OverBudget counts prompts over the budget (a latest turn too large).
	OverBudget int
	// Broken counts prompts with broken tool pairs (must stay 0).
	Broken int
	// What the model saw at the limit, summed over those requests:
	// messages sent, placeholders among them (elided results), user
	// turns, and tool calls whose arguments were cleared
	// (history.ElideOptions.ClearArguments).
	MessagesAtLimit, PlaceholdersAtLimit, TurnsAtLimit, ClearedAtLimit int
	// Cold counts the requests that found the cache expired (Retention);
	// ColdSent is their prompt tokens and ColdBilled what they billed.
	// ColdPrunes counts the Trimmer's cold resumes among them.
	Cold, ColdSent, ColdPrunes int
	ColdBilled                 float64
	// ColdResumes counts every cold resume of the Trimmers (Event.Reason
	// history.ReasonColdResume), on a cold request or not: a replica
	// that has not seen the conversation for longer than ColdAfter takes
	// a warm request for one.
	ColdResumes int
	// Summaries counts the summaries written (Event.Summary "written").
	Summaries int
	// States counts the events of a run through Conversations by their
	// Event.State.
	States map[string]int
}

// NoCache returns what the requests would bill with no prompt cache.
func (s Stats) NoCache() float64 { return float64(s.Sent) }

// MeanKept returns the mean prompt, in tokens, over the requests at the
// limit, as a fraction of budget.
func (s Stats) MeanKept(budget int) float64 {
	if s.AtLimit == 0 || budget <= 0 {
		return 0
	}
	return float64(s.SentAtLimit) / float64(s.AtLimit) / float64(budget)
}

// Replay runs session through cfg. A request is sent before every
// assistant message of session (the model's reply), with every message
// before it as the transcript.
func Replay(session []history.Message, cfg Config) (Stats, error) {
	if cfg.Prices == (Prices{}) {
		cfg.Prices = DefaultPrices
	}
	opts := []history.Option{history.WithCounter(Counter)}
	if cfg.LowWater > 0 {
		opts = append(opts, history.WithLowWater(cfg.LowWater))
	}
	switch {
	case cfg.Task:
		goal := slices.IndexFunc(session, func(m history.Message) bool { return m.Role == history.RoleUser })
		opts = append(opts, history.WithTask(goal, cfg.Elide))
	case cfg.Ladder:
		opts = append(opts, history.WithElision(cfg.Elide), history.WithStepTrim())
	}
	if cfg.Trigger > 0 {
		opts = append(opts, history.WithTrigger(cfg.Trigger))
	}
	spacing := cfg.Spacing
	if spacing == 0 {
		spacing = 30 * time.Second
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	coldResume := false
	tropts := append(slices.Clip(opts), history.WithClock(func() time.Time { return now }))
	if cfg.ColdAfter > 0 {
		tropts = append(tropts, history.WithColdAfter(cfg.ColdAfter))
	}
	summaries, colds := 0, 0
	states := map[string]int{}
	tropts = append(tropts, history.WithOnTrim(func(e history.Event) {
		coldResume = coldResume || e.Reason == history.ReasonColdResume
		if e.Reason == history.ReasonColdResume {
			colds++
		}
		if e.Summary == history.SummaryWritten {
			summaries++
		}
		if e.State != "" {
			states[e.State]++
		}
	}))
	if cfg.Summarize {
		tropts = append(tropts, history.WithSummarizer(summarizer(), history.SummaryOptions{MaxTokens: SummaryTokens}))
	}
	trim := replicas(cfg, tropts)

	var (
		st     Stats
		stored []history.Message // pattern (a): the persisted history
		prev   []history.Message // the previous prompt
		meter  = Meter{Prices: cfg.Prices}
		next   int // first message of session not yet in stored
		users  int // user turns so far
		seen   int // messages of session looked at for user turns
	)
	st.MinAtLimit = -1
	p := cfg.Prices
	for i := range session {
		if session[i].Role != history.RoleAssistant || i == 0 {
			continue
		}
		transcript := session[:i]
		gap := spacing
		for ; seen < i; seen++ {
			if m := session[seen]; m.Role == history.RoleUser && m.Kind == "" {
				users++
				if cfg.IdleEvery > 0 && users > 1 && users%cfg.IdleEvery == 0 {
					gap = cfg.Idle
				}
			}
		}
		now = now.Add(gap)
		expired := cfg.Retention > 0 && gap > cfg.Retention
		coldResume = false
		var (
			res history.Result
			err error
		)
		switch cfg.Pattern {
		case Persisted:
			stored = append(stored, session[next:i]...)
			next = i
			res, err = history.TrimToRecentTurns(stored, cfg.Budget, opts...)
		case Stateless:
			res, err = history.TrimToRecentTurns(transcript, cfg.Budget, opts...)
		default:
			res, err = trim(transcript, cfg.Budget)
		}
		if err != nil && !isBudgetError(err) {
			return st, err
		}
		prompt := res.Messages
		if cfg.OnPrompt != nil {
			cfg.OnPrompt(st.Requests, prompt)
		}
		if cfg.Pattern == Persisted {
			// Persist what was sent, then the reply (next request's input).
			stored = append(slices.Clip(prompt), session[i])
			next = i + 1
		}

		tokens := st.count(transcript, prompt, cfg.Budget, res.Trimmed)
		b := meter.Add(prompt, tokens, expired)
		if b.Rewrite {
			st.Rewrites++
		}
		st.Read += b.Read
		st.Write += b.Write
		st.Uncached += b.Uncached
		bill := b.Billed
		if expired && prev != nil {
			st.Cold++
			st.ColdSent += tokens
			st.ColdBilled += bill
			if coldResume {
				st.ColdPrunes++
			}
		}
		prev = prompt
	}
	if st.MinAtLimit < 0 {
		st.MinAtLimit = 0
	}
	st.ColdResumes, st.Summaries, st.States = colds, summaries, states
	st.Billed = p.Read*float64(st.Read) + p.Write*float64(st.Write) + p.Uncached*float64(st.Uncached)
	return st, nil
}

// replicas returns the Trimmer the config sends its requests to: one, or
// one of cfg.Replicas at random, each its own or through Conversations
// sharing cfg.State.
func replicas(cfg Config, opts []history.Option) func([]history.Message, int) (history.Result, error) {
	n := max(cfg.Replicas, 1)
	rnd := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	if cfg.State != nil {
		key := cfg.Key
		if key == "" {
			key = "session"
		}
		convs := make([]*history.Conversations, n)
		for i := range convs {
			convs[i] = history.NewConversations(cfg.State, opts...)
		}
		return func(msgs []history.Message, budget int) (history.Result, error) {
			return convs[rnd.IntN(n)].Trim(context.Background(), key, msgs, budget)
		}
	}
	trs := make([]*history.Trimmer, n)
	for i := range trs {
		trs[i] = history.NewTrimmer(opts...)
	}
	return func(msgs []history.Message, budget int) (history.Result, error) {
		return trs[rnd.IntN(n)].Trim(msgs, budget)
	}
}

// count records a request: its prompt, of tokens (returned), trimmed from
// transcript or not, within budget or over it, with the broken pairs it
// has, and what the model saw when the transcript was over budget.
func (st *Stats) count(transcript, prompt []history.Message, budget int, trimmed bool) (tokens int) {
	st.Requests++
	tokens = history.Estimate(prompt, Counter)
	st.Sent += tokens
	if tokens > budget {
		st.OverBudget++
	}
	if _, rep := history.SweepOrphans(prompt); rep.Total()+rep.Messages > 0 {
		st.Broken++
	}
	if trimmed {
		st.Trims++
	}
	if history.Estimate(transcript, Counter) <= budget {
		return tokens
	}
	st.AtLimit++
	st.SentAtLimit += tokens
	if st.MinAtLimit < 0 || tokens < st.MinAtLimit {
		st.MinAtLimit = tokens
	}
	st.MessagesAtLimit += len(prompt)
	for _, m := range prompt {
		switch {
		case m.Kind == history.KindElided:
			st.PlaceholdersAtLimit++
		case m.Role == history.RoleUser && m.Kind == "":
			st.TurnsAtLimit++
		}
		for _, c := range m.ToolCalls {
			if strings.HasPrefix(c.Arguments, clearedArgs) {
				st.ClearedAtLimit++
			}
		}
	}
	return tokens
}

// clearedArgs starts the arguments history.ElideOptions.ClearArguments
// leaves in a call (its documented form).
const clearedArgs = `{"elided":"[arguments elided: `

func isBudgetError(err error) bool {
	var be *history.BudgetError
	return errors.As(err, &be)
}

// commonPrefix returns the number of leading messages a and b share.
func commonPrefix(a, b []history.Message) int {
	n := min(len(a), len(b))
	for i := range n {
		if !same(&a[i], &b[i]) {
			return i
		}
	}
	return n
}

func same(a, b *history.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || a.Name != b.Name || a.Kind != b.Kind {
		return false
	}
	return slices.Equal(a.ToolCalls, b.ToolCalls) && reflect.DeepEqual(a.Parts, b.Parts)
}
