package history

import (
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summaryInDroppedTurn is a history whose first turn holds a summary: a trim
// that drops that turn hoists the summary into the prefix.
func summaryInDroppedTurn() []Message {
	return []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: words("turn one", 300)},
		{Role: RoleAssistant, Content: "summary of turn one", Kind: KindSummary},
		{Role: RoleUser, Content: words("TURN TWO", 80)},
		{Role: RoleAssistant, Content: "two"},
		{Role: RoleUser, Content: "turn three"},
		{Role: RoleAssistant, Content: "three"},
	}
}

// TestTrimmerKeepsHoistedSummaryCut: the Trimmer must remember the cut at a
// turn start, not at the hoisted summary, so a dropped turn never comes back
// without its breadcrumb.
func TestTrimmerKeepsHoistedSummaryCut(t *testing.T) {
	msgs := summaryInDroppedTurn()
	tr := NewTrimmer()
	res, err := tr.Trim(msgs, 100)
	require.NoError(t, err)
	require.Equal(t, []int{0, 2, -1, 5, 6}, res.Kept)

	msgs = append(msgs, Message{Role: RoleUser, Content: "turn four"})
	res, err = tr.Trim(msgs, 200)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2, -1, 5, 6, 7}, res.Kept, "the cut stays at turn three, the summary stays pinned, the breadcrumb stays")

	stateless, err := TrimToRecentTurns(msgs, 200)
	require.NoError(t, err)
	assert.Contains(t, stateless.Kept, -1, "the stateless trim keeps the breadcrumb too")
}

// TestStepTrimElisionWithSummaryInDroppedSteps: a summary in the dropped
// steps is hoisted before the kept turn; the elision pass must still find
// the results the plan counted as elided.
func TestStepTrimElisionWithSummaryInDroppedSteps(t *testing.T) {
	msgs := []Message{
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "read"}}},
		{Role: RoleTool, ToolCallID: "a", Content: words("result", 400)},
		{Role: RoleUser, Content: "task"},
		{Role: RoleAssistant, Content: words("thinking", 80)},
		{Role: RoleUser, Content: "summary so far", Kind: KindSummary},
		{Role: RoleAssistant, Content: "step two"},
	}
	opts := []Option{WithStepTrim(), WithElision(ElideOptions{KeepRecent: -1, MinTokens: -1})}
	res, err := TrimToRecentTurns(msgs, 100, opts...)
	require.NoError(t, err, "eliding the old result makes it fit")
	assert.LessOrEqual(t, res.TokensAfter, 100)
	assert.Equal(t, 1, res.ElidedResults)

	again, err := TrimToRecentTurns(res.Messages, 100, opts...)
	require.NoError(t, err)
	assert.Equal(t, res.Messages, again.Messages, "trimming the output again changes nothing")
}

// TestHugeAndNegativeCounts: counts from a Counter never wrap a sum and
// never make a history fit that does not.
func TestHugeAndNegativeCounts(t *testing.T) {
	msgs := parse(t, "S:sys", "U:q1", "A:a1", "U:q2", "A:a2")
	tests := []struct {
		name    string
		counter Counter
		budget  int
		fits    bool
		reason  string
	}{
		{"max each", unitCounter(math.MaxInt), 100, false, "five MaxInt counts must not wrap to a small sum"},
		{"max each, max budget", unitCounter(math.MaxInt), math.MaxInt, false, "a capped count is more than any budget"},
		{"half max", unitCounter(math.MaxInt / 2), math.MaxInt, false, "two halves of MaxInt already exceed it"},
		{"negative", unitCounter(-5), 1, true, "a negative count reads as zero"},
		{"min int", unitCounter(math.MinInt), 1, true, "MinInt reads as zero, not as a huge credit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := TrimToRecentTurns(msgs, tc.budget, WithCounter(tc.counter))
			assert.GreaterOrEqual(t, res.TokensBefore, -1, "exact, or -1 when the dropped part was not counted: "+tc.reason)
			assert.GreaterOrEqual(t, res.TokensAfter, 0, tc.reason)
			if tc.fits {
				require.NoError(t, err, tc.reason)
				assert.False(t, res.Trimmed, tc.reason)
				return
			}
			require.ErrorIs(t, err, ErrLatestTurnTooLarge, tc.reason)
			var be *BudgetError
			require.ErrorAs(t, err, &be)
			assert.Positive(t, be.Need, tc.reason)
			assert.Equal(t, tc.budget, be.Budget, "the error states the budget asked for")
		})
	}
}

// manyParallelCalls returns a user request answered by one assistant
// message with n parallel calls, their results in reverse order, and an
// answer.
func manyParallelCalls(n int) []Message {
	calls := make([]ToolCall, n)
	msgs := make([]Message, 0, n+4)
	msgs = append(msgs, Message{Role: RoleUser, Content: "run everything"})
	for i := range calls {
		calls[i] = ToolCall{ID: "call_" + strconv.Itoa(i), Name: "tool" + strconv.Itoa(i%7)}
	}
	msgs = append(msgs, Message{Role: RoleAssistant, ToolCalls: calls})
	for i := n - 1; i >= 0; i-- {
		msgs = append(msgs, Message{Role: RoleTool, ToolCallID: calls[i].ID, Content: words("out", 30)})
	}
	return append(msgs, Message{Role: RoleAssistant, Content: "done"})
}

// TestManyParallelCalls runs every pass that pairs results with calls
// (validation, sweep, elision's tool names, step trimming) over one message
// with 20,000 parallel calls. Each used to scan all calls per result.
// BenchmarkParallelCalls measures the cost.
func TestManyParallelCalls(t *testing.T) {
	msgs := manyParallelCalls(20_000)
	// Without the final answer the newest step is the one with the calls,
	// so only elision can shrink it; one orphan result makes the sweep do
	// real work.
	msgs = append(msgs[:len(msgs)-1:len(msgs)-1], Message{Role: RoleTool, ToolCallID: "ghost", Content: "x"})
	res, err := TrimToRecentTurns(msgs, 5_000, WithElision(ElideOptions{KeepRecent: 1, MinTokens: -1}), WithStepTrim())
	if err != nil {
		require.ErrorIs(t, err, ErrLatestTurnTooLarge)
	}
	assert.Equal(t, 1, res.OrphansRemoved)
	assert.Positive(t, res.ElidedResults)
	_, rep := SweepOrphans(res.Messages)
	assert.Zero(t, rep.Total(), "the output is well paired")

	dup := manyParallelCalls(100)
	dup[1].ToolCalls = append([]ToolCall(nil), dup[1].ToolCalls...)
	dup[1].ToolCalls[99].ID = dup[1].ToolCalls[3].ID
	_, err = TrimToRecentTurns(dup, 5_000)
	require.ErrorIs(t, err, ErrInvalidMessage, "a duplicate id among many calls is still found")
}

func BenchmarkParallelCalls(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 80_000} {
		msgs := manyParallelCalls(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = TrimToRecentTurns(msgs, 1_000, WithElision(ElideOptions{}), WithStepTrim())
			}
		})
	}
}

// perContentCounter counts each message as its Heuristic count and records how
// often each message was counted, keyed by its content (and its first call's
// id, which tells apart messages that hold only calls); see its key method.
type perContentCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *perContentCounter) key(m Message) string {
	if len(m.ToolCalls) > 0 {
		return m.Content + "\x00" + m.ToolCalls[0].ID
	}
	return m.Content
}

func (c *perContentCounter) CountMessage(m Message) int {
	key := c.key(m)
	c.mu.Lock()
	c.calls[key]++
	c.mu.Unlock()
	return Heuristic().CountMessage(m)
}

// TestTrimmerCountsEachMessageOnce: when the remembered cut no longer fits,
// the reuse check's counts are handed to the fresh trim.
func TestTrimmerCountsEachMessageOnce(t *testing.T) {
	msgs := trSession(40, 11)
	for i := range msgs {
		msgs[i].Content += " #" + strconv.Itoa(i) // distinct contents
	}
	cc := &perContentCounter{calls: map[string]int{}}
	tr := NewTrimmer(WithCounter(cc), WithLowWater(0.9))
	budget := Estimate(msgs[:60], nil) / 2
	_, err := tr.Trim(msgs[:60], budget)
	require.NoError(t, err)
	for n := 61; n <= len(msgs); n++ {
		cc.calls = map[string]int{}
		_, err := tr.Trim(msgs[:n], budget)
		if err != nil {
			require.ErrorIs(t, err, ErrLatestTurnTooLarge)
		}
		for i := range msgs[:n] {
			if c := cc.calls[cc.key(msgs[i])]; c > 1 {
				t.Fatalf("after %d messages: message %d counted %d times in one Trim", n, i, c)
			}
		}
	}
}

// TestTrimNeverPanicsOnHugeParts: a part that states an absurd token count
// makes its turn too large, never a wrapped sum that fits.
func TestTrimNeverPanicsOnHugeParts(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Content: "q", Parts: []Part{{Type: PartText, Tokens: math.MaxInt}}},
		{Role: RoleAssistant, Content: "a"},
		{Role: RoleUser, Content: "q2"},
		{Role: RoleAssistant, Content: "a2"},
	}
	res, err := TrimToRecentTurns(msgs, 100)
	if err != nil {
		require.True(t, errors.Is(err, ErrLatestTurnTooLarge))
	}
	assert.Equal(t, []int{-1, 2, 3}, res.Kept, "the huge turn is dropped, never reported as fitting")
}
