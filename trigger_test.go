package history

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithTrigger(t *testing.T) {
	// unit costs 10 tokens a message; the default breadcrumb is 10 too.
	turns := parse(t, "S:sys", "U:1", "A:a1", "U:2", "A:a2", "U:3", "A:a3", "U:4", "A:a4", "U:5", "A:a5")             // 110
	bigLatest := parse(t, "S:sys", "U:1", "A:a1", "U:2", "A:>c1", "T:c1", "A:>c2", "T:c2", "A:>c3", "T:c3", "A:done") // latest turn 80
	for _, tc := range []struct {
		name    string
		in      []Message
		budget  int
		opts    []Option
		want    []string
		err     error
		trimmed bool
	}{
		{
			name: "below the trigger: sent whole", in: turns, budget: 230, opts: []Option{WithTrigger(0.5)},
			want: render(turns),
		},
		{
			name: "above the trigger, within the budget: trimmed below it, to 0.6 of it by default", in: turns, budget: 200, opts: []Option{WithTrigger(0.5)},
			want: []string{"S:sys", "B", "U:4", "A:a4", "U:5", "A:a5"}, trimmed: true, // 60
		},
		{
			name: "with a low-water mark below it: trimmed to the mark", in: turns, budget: 200, opts: []Option{WithTrigger(0.5), WithLowWater(0.3)},
			want: []string{"S:sys", "B", "U:4", "A:a4", "U:5", "A:a5"}, trimmed: true, // 60
		},

		{
			name: "a latest turn above the trigger but within the budget is sent, no error", in: bigLatest, budget: 100, opts: []Option{WithTrigger(0.5)},
			want: []string{"S:sys", "B", "U:2", "A:>c1", "T:c1", "A:>c2", "T:c2", "A:>c3", "T:c3", "A:done"}, trimmed: true, // 100
		},
		{
			name: "with step trimming it goes down to the trigger inside the turn", in: bigLatest, budget: 100, opts: []Option{WithTrigger(0.5), WithStepTrim()},
			want: []string{"S:sys", "B", "U:2", "B:" + StepBreadcrumbText, "A:done"}, trimmed: true, // 50
		},
		{
			name: "a latest turn above the budget is too large", in: bigLatest, budget: 90, opts: []Option{WithTrigger(0.5)},
			want: []string{"S:sys", "B", "U:2", "A:>c1", "T:c1", "A:>c2", "T:c2", "A:>c3", "T:c3", "A:done"}, err: ErrLatestTurnTooLarge, trimmed: true,
		},
		{
			name: "trigger 1 is the default", in: turns, budget: 110, opts: []Option{WithTrigger(1)},
			want: render(turns),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := TrimToRecentTurns(tc.in, tc.budget, append([]Option{WithCounter(unit)}, tc.opts...)...)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
				assert.LessOrEqual(t, res.TokensAfter, tc.budget)
			}
			assert.Equal(t, tc.want, render(res.Messages))
			assert.Equal(t, tc.trimmed, res.Trimmed)
			assert.Equal(t, tc.budget, res.Budget, "the budget reported is the hard one")
			checkResult(t, tc.in, res, tc.err == nil)
		})
	}
}

// TestWithTriggerAndLowWater: both are shares of the budget; a mark at or
// above the trigger would turn the hysteresis off, and is refused.
func TestWithTriggerAndLowWater(t *testing.T) {
	msgs := parse(t, "U:1")
	for _, opts := range [][]Option{
		{WithTrigger(0.5), WithLowWater(0.9)},
		{WithLowWater(0.6), WithTrigger(0.6)},
	} {
		_, err := TrimToRecentTurns(msgs, 100, opts...)
		var oe *OptionError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "WithLowWater", oe.Option)
		_, err = NewTrimmer(opts...).Trim(msgs, 100)
		require.ErrorAs(t, err, &oe)
	}
	for _, opts := range [][]Option{{WithTrigger(1), WithLowWater(0.9)}, {WithTrigger(0.6), WithLowWater(0.36)}} {
		_, err := TrimToRecentTurns(msgs, 100, opts...)
		require.NoError(t, err)
	}
}

// TestTriggerKeepsHysteresis: over 200 requests of a growing session, a
// Trimmer with a trigger alone rewrites the prompt about as rarely as one
// with a low-water mark alone; before, a trigger alone (or with a mark at
// or above it) trimmed to just under the trigger and rewrote the prompt on
// nearly every request past it (168 of 200, against 9).
func TestTriggerKeepsHysteresis(t *testing.T) {
	full := trSession(200, 9)
	count := func(opts ...Option) int {
		rewrites := 0
		tr := NewTrimmer(append(opts, WithOnTrim(func(Event) { rewrites++ }))...)
		for n := 2; n <= len(full); n++ {
			if full[n-1].Role != RoleAssistant {
				continue
			}
			_, err := tr.Trim(full[:n-1], 3000)
			require.NoError(t, err)
		}
		return rewrites
	}
	low, trig := count(WithLowWater(0.7)), count(WithTrigger(0.6))
	t.Logf("maintenance points: low water 0.7 alone %d, trigger 0.6 alone %d", low, trig)
	assert.Positive(t, low)
	assert.LessOrEqual(t, trig, 3*low, "the trigger alone keeps a hysteresis")
}

func TestWithTriggerInvalid(t *testing.T) {
	msgs := parse(t, "U:1")
	for _, f := range []float64{0, -0.5, 1.01, math.NaN(), math.Inf(1)} {
		_, err := TrimToRecentTurns(msgs, 100, WithTrigger(f))
		var oe *OptionError
		require.True(t, errors.As(err, &oe), "fraction %v: %v", f, err)
		assert.Equal(t, "WithTrigger", oe.Option)
		assert.ErrorIs(t, err, ErrInvalidOption)
	}
}

func TestTrimmerTrigger(t *testing.T) {
	// A Trimmer with a trigger holds its plan until the history grows back
	// over the trigger, not the budget, and never sends more than that.
	tr := NewTrimmer(WithCounter(unit), WithTrigger(0.5), WithLowWater(0.3))
	var msgs []Message
	msgs = append(msgs, parseOne("S:sys"))
	rewrites := 0
	var prev []Message
	for i := range 40 {
		msgs = append(msgs, parseOne("U:q"), parseOne("A:a"))
		res, err := tr.Trim(msgs, 200)
		require.NoError(t, err, "request %d", i)
		assert.LessOrEqual(t, res.TokensAfter, 100, "request %d: within the trigger", i)
		want, err := TrimToRecentTurns(msgs, 200, WithCounter(unit), WithTrigger(0.5), WithLowWater(0.3))
		require.NoError(t, err)
		if !res.Trimmed {
			assert.Equal(t, render(want.Messages), render(res.Messages))
		}
		if prev != nil && (len(res.Messages) < len(prev) || !reflect.DeepEqual(res.Messages[:len(prev)], prev)) {
			rewrites++
			assert.Equal(t, 60, res.TokensAfter, "request %d: a new cut goes down to the mark", i)
		}
		prev = res.Messages
		checkResult(t, msgs, res, true)
	}
	// From 60 tokens to the trigger (100) takes two requests of 20: a cut
	// every third request once the history is past the trigger.
	assert.Equal(t, 12, rewrites)
}
