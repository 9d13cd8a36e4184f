package history

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isDone reports whether c is closed, without waiting.
func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestSummaryDone: the channel is closed while no summary is in flight,
// open from the Trim call that starts one (and the same channel on every
// call until it finishes), closed once the Summarizer has returned and the
// summary is ready; after Close it is closed.
func TestSummaryDone(t *testing.T) {
	full := trSession(80, 44)
	g := &gateSummarizer{gate: make(chan struct{})}
	tr := NewTrimmer(WithTrigger(0.6), WithSummarizer(g, SummaryOptions{MaxTokens: 80, Background: true}))
	assert.True(t, isDone(tr.SummaryDone()), "before any Trim: nothing in flight")

	n := 10
	var done <-chan struct{}
	for ; n <= len(full); n += 2 {
		_, err := tr.Trim(full[:n], 2000)
		require.NoError(t, err)
		if done = tr.SummaryDone(); !isDone(done) {
			break
		}
	}
	require.Less(t, n, len(full), "setup: no summary started")
	for range 3 {
		n += 2
		_, err := tr.Trim(full[:n], 2000)
		require.NoError(t, err)
		assert.Equal(t, done, tr.SummaryDone(), "the same summary is in flight")
		assert.False(t, isDone(done), "the Summarizer is blocked")
	}
	close(g.gate)
	<-done // closed once the summary is written: no sleep, no poll
	tr.mu.Lock()
	status := tr.bg.job.status
	tr.mu.Unlock()
	assert.Equal(t, SummaryWritten, status, "done means finished")
	_, ok := tr.Summary()
	assert.False(t, ok, "written, not swapped in before the next Trim")
	require.NoError(t, tr.Close())
	assert.True(t, isDone(tr.SummaryDone()))
}

// TestSummaryDoneClose: Close stops a summary in flight, and its channel
// closes.
func TestSummaryDoneClose(t *testing.T) {
	full := trSession(80, 44)
	g := &gateSummarizer{gate: make(chan struct{})} // never opened: the call returns on ctx
	tr := NewTrimmer(WithTrigger(0.6), WithSummarizer(g, SummaryOptions{MaxTokens: 80, Background: true}))
	var done <-chan struct{}
	for n := 10; n <= len(full); n += 2 {
		_, err := tr.Trim(full[:n], 2000)
		require.NoError(t, err)
		if done = tr.SummaryDone(); !isDone(done) {
			break
		}
	}
	require.False(t, isDone(done), "setup: no summary started")
	require.NoError(t, tr.Close())
	assert.True(t, isDone(done), "Close waited for the Summarizer, so the summary is done")
}
