package history

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrimmerEventCost checks Rewritten and Billed at every maintenance
// point of a growing transcript against a recount: the tokens of the new
// prompt from its first message that differs from the previous prompt.
func TestTrimmerEventCost(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"whole turns", nil},
		{"ladder", []Option{WithElision(ElideOptions{KeepRecent: 1, MinTokens: -1}), WithStepTrim()}},
		{"summaries", []Option{WithSummarizer(&recordingSummarizer{}, SummaryOptions{MaxTokens: 60})}},
		{"overhead", []Option{WithOverhead(40)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := trSession(80, 41)
			var events []Event
			prices := AnthropicPrices
			opts := append([]Option{WithLowWater(0.7), WithPrices(prices), WithOnTrim(func(e Event) { events = append(events, e) })}, tc.opts...)
			tr := NewTrimmer(opts...)
			overhead := 0
			if tc.name == "overhead" {
				overhead = 40
			}
			var prev []Message
			first := true
			plans := 0
			for n := 10; n <= len(full); n += 3 {
				before := len(events)
				res, err := tr.Trim(full[:n], 2000)
				require.NoError(t, err)
				if len(events) > before {
					plans++
					e := events[len(events)-1]
					j := 0
					for !first && j < len(prev) && j < len(res.Messages) && equal(&prev[j], &res.Messages[j]) {
						j++
					}
					want := Estimate(res.Messages[j:], nil)
					assert.Equal(t, want, e.Rewritten, "request %d: rewritten tokens", n)
					written := e.Rewritten
					if first {
						written = e.TokensAfter
					}
					wantBilled := float64(e.TokensAfter-written)*prices.Read + float64(written)*prices.Write
					assert.InDelta(t, wantBilled, e.Billed, 1e-6, "request %d: billed", n)
					assert.Equal(t, Estimate(res.Messages, nil)+overhead, e.TokensAfter)
				}
				prev, first = res.Messages, false
			}
			require.Greater(t, plans, 1, "setup: too few maintenance points")
		})
	}
}

func TestTrimmerEventCostColdResume(t *testing.T) {
	msgs := coldSession(6)
	clock := &fakeClock{t: time.Unix(0, 0)}
	var events []Event
	tr := NewTrimmer(WithClock(clock.now), WithColdAfter(5*time.Minute), WithElision(ElideOptions{KeepRecent: 1}),
		WithPrices(OpenAIPrices), WithOnTrim(func(e Event) { events = append(events, e) }))
	_, err := tr.Trim(msgs, 1<<20)
	require.NoError(t, err)
	clock.advance(time.Hour)
	res, err := tr.Trim(msgs, 1<<20)
	require.NoError(t, err)
	require.Len(t, events, 1)
	e := events[0]
	assert.Equal(t, ReasonColdResume, e.Reason)
	// The cache expired: the whole prompt is written, none of it read.
	assert.InDelta(t, float64(res.TokensAfter)*OpenAIPrices.Write, e.Billed, 1e-6)
	assert.Positive(t, e.Rewritten)
	assert.Less(t, e.Rewritten, res.TokensAfter, "the system prompt and first turn are unchanged")
}

func TestWithPricesInvalid(t *testing.T) {
	for _, p := range []Prices{{Read: -0.1, Write: 1}, {Read: 0.1, Write: math.NaN()}, {Read: math.Inf(1), Write: 1}} {
		_, err := NewTrimmer(WithPrices(p)).Trim(coldSession(1), 100)
		var oe *OptionError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "WithPrices", oe.Option)
	}
	// Without prices, Billed stays 0 and Rewritten is still reported.
	var ev Event
	_, err := NewTrimmer(WithOnTrim(func(e Event) { ev = e })).Trim(trSession(40, 2), 800)
	require.NoError(t, err)
	assert.Zero(t, ev.Billed)
	assert.Positive(t, ev.Rewritten)
}

// TestTrimmerEventCostEditedPrefix: an edit to a message already sent (a
// new system prompt) invalidates the cache from that message on; the event
// of the maintenance point that sends it says so.
func TestTrimmerEventCostEditedPrefix(t *testing.T) {
	full := trSession(80, 41)
	var events []Event
	tr := NewTrimmer(WithLowWater(0.7), WithPrices(AnthropicPrices), WithOnTrim(func(e Event) { events = append(events, e) }))
	const french = "You are a careful assistant. Answer in French."
	trimmed, prevOld := false, false
	for n := 10; n <= len(full); n += 3 {
		in := full[:n]
		if trimmed {
			in = clone(in)
			in[0].Content = french
		}
		before := len(events)
		res, err := tr.Trim(in, 2000)
		require.NoError(t, err)
		if len(events) > before && prevOld && res.Messages[0].Content == french {
			// The previous request sent the old system prompt.
			e := events[len(events)-1]
			assert.Equal(t, res.TokensAfter, e.Rewritten, "the whole prompt is rewritten")
			assert.InDelta(t, float64(res.TokensAfter)*AnthropicPrices.Write, e.Billed, 1e-6, "and billed as a cache write")
			return
		}
		trimmed = trimmed || res.DroppedTurns > 0
		prevOld = res.Messages[0].Content != french
	}
	t.Fatal("setup: no maintenance point right after the edit")
}
