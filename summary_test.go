package history

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingSummarizer summarises by counting what it was given, and records
// every call.
type recordingSummarizer struct {
	mu    sync.Mutex
	calls []summaryCall
	reply func(dropped []Message, previous *Message) (Message, error)
}

type summaryCall struct {
	dropped  []Message
	previous *Message
}

func (r *recordingSummarizer) Summarize(ctx context.Context, dropped []Message, previous *Message) (Message, error) {
	r.mu.Lock()
	r.calls = append(r.calls, summaryCall{dropped, previous})
	r.mu.Unlock()
	if r.reply != nil {
		return r.reply(dropped, previous)
	}
	n := len(dropped)
	if previous != nil {
		k, _ := strconv.Atoi(strings.TrimPrefix(previous.Content, "summary of messages: "))
		n += k
	}
	return Message{Role: RoleUser, Content: "summary of messages: " + strconv.Itoa(n)}, nil
}

// summaryOf returns the summaries in res and checks the invariants every
// summarised result keeps: at most one summary, inserted (Kept -1), never
// next to a breadcrumb, counted.
func summaryOf(t *testing.T, msgs []Message, res Result) []Message {
	t.Helper()
	var sums []Message
	for j, m := range res.Messages {
		if m.Kind == KindSummary && res.Kept[j] < 0 {
			sums = append(sums, m)
		}
	}
	require.LessOrEqual(t, len(sums), 1, "stacked summaries")
	assert.Equal(t, Estimate(res.Messages, nil), res.TokensAfter)
	checkResult(t, msgs, res, true)
	return sums
}

func TestTrimmerSummarizer(t *testing.T) {
	full := trSession(120, 21)
	const budget = 3000
	sumr := &recordingSummarizer{}
	var events []Event
	tr := NewTrimmer(WithLowWater(0.7), WithSummarizer(sumr, SummaryOptions{MaxTokens: 300}),
		WithOnTrim(func(e Event) { events = append(events, e) }))
	var prev []Message
	var prevMod []int
	written, plans := 0, 0
	for n := 10; n <= len(full); n += 2 {
		msgs := full[:n]
		before := len(events)
		res, err := tr.Trim(msgs, budget)
		require.NoError(t, err)
		assert.LessOrEqual(t, res.TokensAfter, budget)
		sums := summaryOf(t, msgs, res)
		if len(events) > before {
			plans++
			e := events[len(events)-1]
			assert.Equal(t, res.TokensAfter, e.TokensAfter)
			if e.DroppedTurns > 0 {
				require.Equal(t, SummaryWritten, e.Summary)
				require.Len(t, sums, 1, "turns dropped without a summary")
				written++
			}
		} else if res.Trimmed {
			// A reused plan: the prompt grows at its end, the summary
			// unchanged (a tail whose unanswered calls the sweep stripped
			// gets them back).
			cmp := prev
			for _, j := range prevMod {
				if prev[j].Kind != KindElided {
					cmp = prev[:j]
					break
				}
			}
			require.GreaterOrEqual(t, len(res.Messages), len(cmp))
			assert.Equal(t, cmp, res.Messages[:len(cmp)])
		}
		prev, prevMod = res.Messages, res.Modified
	}
	require.Greater(t, written, 2, "setup: too few maintenance points")
	// Incremental: each call after the first folds in the previous summary
	// and is given only what it does not cover.
	require.Len(t, sumr.calls, written)
	seen := map[string]bool{}
	for i, c := range sumr.calls {
		if i > 0 {
			require.NotNil(t, c.previous, "call %d without the previous summary", i)
			assert.Equal(t, KindSummary, c.previous.Kind)
		}
		for _, m := range c.dropped {
			key := string(m.Role) + m.Content + m.ToolCallID
			assert.False(t, seen[key] && m.Role == RoleUser, "call %d summarises %q again", i, m.Content)
			seen[key] = true
			assert.NotEqual(t, KindBreadcrumb, m.Kind)
		}
	}
}

func TestTrimmerSummarizerFallbacks(t *testing.T) {
	full := trSession(60, 22)
	const budget = 2500
	tests := []struct {
		name    string
		reply   func([]Message, *Message) (Message, error)
		opts    SummaryOptions
		ctx     func() (context.Context, context.CancelFunc)
		want    string
		maxWait time.Duration
	}{
		{name: "error", reply: func([]Message, *Message) (Message, error) { return Message{}, errors.New("model down") }, want: SummaryFailed},
		{name: "panic", reply: func([]Message, *Message) (Message, error) { panic("bug in the summariser") }, want: SummaryFailed},
		{name: "tool message", reply: func([]Message, *Message) (Message, error) {
			return Message{Role: RoleTool, ToolCallID: "x", Content: "s"}, nil
		}, want: SummaryFailed},
		{name: "invalid role", reply: func([]Message, *Message) (Message, error) { return Message{Role: "robot", Content: "s"}, nil }, want: SummaryFailed},
		{name: "too large", reply: func([]Message, *Message) (Message, error) {
			return Message{Role: RoleUser, Content: strings.Repeat("long summary ", 200)}, nil
		}, opts: SummaryOptions{MaxTokens: 100}, want: SummaryTooLarge},
		{name: "timeout", reply: func([]Message, *Message) (Message, error) {
			time.Sleep(2 * time.Second)
			return Message{Role: RoleUser, Content: "late"}, nil
		}, opts: SummaryOptions{Timeout: 20 * time.Millisecond}, want: SummaryTimeout, maxWait: time.Second},
		{name: "caller's context done", reply: func([]Message, *Message) (Message, error) {
			time.Sleep(2 * time.Second)
			return Message{Role: RoleUser, Content: "late"}, nil
		}, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, want: SummaryTimeout, maxWait: time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var events []Event
			tr := NewTrimmer(WithSummarizer(&recordingSummarizer{reply: tc.reply}, tc.opts),
				WithOnTrim(func(e Event) { events = append(events, e) }))
			ctx := context.Background()
			if tc.ctx != nil {
				var cancel context.CancelFunc
				ctx, cancel = tc.ctx()
				defer cancel()
			}
			start := time.Now()
			res, err := tr.TrimContext(ctx, full, budget)
			if tc.maxWait > 0 {
				assert.Less(t, time.Since(start), tc.maxWait, "the request waited for the summariser")
			}
			require.NoError(t, err)
			require.True(t, res.Trimmed)
			assert.Empty(t, summaryOf(t, full, res))
			assert.LessOrEqual(t, res.TokensAfter, budget)
			require.Len(t, events, 1)
			assert.Equal(t, tc.want, events[0].Summary)
			// The plain trim's breadcrumb stands in for the summary.
			crumbs := 0
			for j, m := range res.Messages {
				if res.Kept[j] < 0 && m.Kind == KindBreadcrumb {
					crumbs++
				}
			}
			assert.Equal(t, 1, crumbs)
		})
	}
}

func TestTrimmerSummarizerNotCalledWhenElisionClears(t *testing.T) {
	msgs := coldSession(6) // big tool results in every turn
	budget := Estimate(msgs, nil) * 2 / 3
	sumr := &recordingSummarizer{}
	var events []Event
	tr := NewTrimmer(WithElision(ElideOptions{KeepRecent: 1}), WithSummarizer(sumr, SummaryOptions{}),
		WithOnTrim(func(e Event) { events = append(events, e) }))
	res, err := tr.Trim(msgs, budget)
	require.NoError(t, err)
	assert.Positive(t, res.ElidedResults)
	assert.Zero(t, res.DroppedTurns)
	assert.Empty(t, sumr.calls, "elision alone fitted: no paid summary")
	require.Len(t, events, 1)
	assert.Empty(t, events[0].Summary)
}

func TestWithSummarizerInvalid(t *testing.T) {
	for _, o := range []SummaryOptions{{MaxTokens: -1}, {Timeout: -time.Second}} {
		_, err := NewTrimmer(WithSummarizer(&recordingSummarizer{}, o)).Trim(coldSession(1), 100)
		var oe *OptionError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "WithSummarizer", oe.Option)
	}
	// A nil Summarizer turns summarising off.
	res, err := NewTrimmer(WithSummarizer(nil, SummaryOptions{})).Trim(trSession(30, 1), 800)
	require.NoError(t, err)
	assert.Empty(t, summaryOf(t, trSession(30, 1), res))
}

func TestTrimmerSummarizerWithoutBreadcrumb(t *testing.T) {
	full := trSession(40, 23)
	tr := NewTrimmer(WithoutBreadcrumb(), WithElision(ElideOptions{KeepRecent: 1, MinTokens: -1}),
		WithSummarizer(&recordingSummarizer{}, SummaryOptions{MaxTokens: 100}))
	res, err := tr.Trim(full, 1500)
	require.NoError(t, err)
	require.Positive(t, res.DroppedTurns)
	sums := summaryOf(t, full, res)
	require.Len(t, sums, 1)
	assert.Equal(t, KindSummary, res.Messages[1].Kind, "the summary follows the system prompt")
	assert.Equal(t, -1, res.Kept[1])
	for _, m := range res.Messages {
		assert.NotEqual(t, KindBreadcrumb, m.Kind)
	}
}

// TestSummaryBoundedInput: the Summarizer is never handed more than
// InputTokens (the dropped messages and the previous summary); larger
// drops are elided, then folded in chunks that end between exchanges, and
// the one summary covers all of them.
func TestSummaryBoundedInput(t *testing.T) {
	full := trSession(80, 12)
	for _, limit := range []int{300, 600, 1200} {
		var mu sync.Mutex
		var inputs []int
		var starts []Message
		rec := SummarizerFunc(func(_ context.Context, dropped []Message, previous *Message) (Message, error) {
			n := Estimate(dropped, nil)
			if previous != nil {
				n += Estimate([]Message{*previous}, nil)
			}
			mu.Lock()
			inputs = append(inputs, n)
			starts = append(starts, dropped[0])
			mu.Unlock()
			return Message{Role: RoleUser, Content: "summary " + strings.Repeat("w ", 20)}, nil
		})
		tr := NewTrimmer(WithLowWater(0.5), WithSummarizer(rec, SummaryOptions{MaxTokens: 80, InputTokens: limit}))
		written := 0
		tr2 := NewTrimmer(WithLowWater(0.5), WithSummarizer(rec, SummaryOptions{MaxTokens: 80, InputTokens: limit}),
			WithOnTrim(func(e Event) { written += boolCount(e.Summary == SummaryWritten) }))
		for n := 10; n <= len(full); n += 5 {
			_, err := tr.Trim(full[:n], 3000)
			require.NoError(t, err)
			_, err = tr2.Trim(full[:n], 3000)
			require.NoError(t, err)
		}
		require.NotEmpty(t, inputs, "setup: the Summarizer was never called")
		for i, n := range inputs {
			assert.LessOrEqual(t, n, limit, "call %d of limit %d", i, limit)
			assert.NotEqual(t, RoleTool, starts[i].Role, "call %d: a chunk starts with a result without its call", i)
		}
		assert.Positive(t, written, "limit %d: summaries are written", limit)
		info, ok := tr.Summary()
		require.True(t, ok)
		assert.Contains(t, info.Message.Content, "earlier turn(s)")
		assert.Positive(t, info.Turns)
		assert.Equal(t, KindSummary, info.Message.Kind)
		t.Logf("limit %d: %d Summarizer calls, largest input %d", limit, len(inputs), slices.Max(inputs))
	}
}
