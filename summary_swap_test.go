package history

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBackgroundSwapUnderBudget: a background summary that is ready while
// the whole transcript still fits the budget (it crossed the trigger, not
// the budget: the first summary of every conversation) is swapped in by
// the next request, not thrown away. Before the fix, the swap's plan found
// that the history fits, dropped nothing, lost the summary and started
// another one on every request until the budget itself was reached.
func TestBackgroundSwapUnderBudget(t *testing.T) {
	full := trSession(80, 44)
	g := &gateSummarizer{gate: make(chan struct{})}
	var events []Event
	tr := NewTrimmer(WithTrigger(0.6), WithSummarizer(g, SummaryOptions{MaxTokens: 80, Background: true}),
		WithOnTrim(func(e Event) { events = append(events, e) }))
	const budget = 2000
	n := 10
	for ; n <= len(full); n += 2 {
		_, err := tr.Trim(full[:n], budget)
		require.NoError(t, err)
		if !isDone(tr.SummaryDone()) {
			break
		}
	}
	require.Less(t, n, len(full), "setup: no summary started")
	tr.mu.Lock()
	job := tr.bg.job
	tr.mu.Unlock()
	close(g.gate)
	<-tr.SummaryDone()
	n += 2
	plain, err := TrimToRecentTurns(full[:n], budget)
	require.NoError(t, err)
	require.Zero(t, plain.DroppedMessages, "setup: the transcript fits the budget")
	res, err := tr.Trim(full[:n], budget)
	require.NoError(t, err)
	if _, rep := SweepOrphans(res.Messages); rep != (SweepReport{}) {
		t.Fatalf("broken pairs after the swap: %+v", rep)
	}
	info, ok := tr.Summary()
	require.True(t, ok, "the ready summary was swapped in")
	assert.Equal(t, job.upTo, info.UpTo, "for exactly the turns it was given")
	for _, k := range res.Kept {
		if k >= info.From && k < info.UpTo {
			t.Errorf("message %d, which the summary covers, is still sent", k)
		}
	}
	require.NotEmpty(t, events)
	assert.Equal(t, SummaryWritten, events[len(events)-1].Summary)
	assert.LessOrEqual(t, res.TokensAfter, budget)
	g.mu.Lock()
	calls := g.calls
	g.mu.Unlock()
	assert.Equal(t, 1, calls, "one summary written, none thrown away")
	require.NoError(t, tr.Close())
}
