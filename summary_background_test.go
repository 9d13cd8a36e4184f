package history

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gateSummarizer blocks every call until the test opens the gate (or the
// call's context ends), and records what it was given.
type gateSummarizer struct {
	mu    sync.Mutex
	gate  chan struct{}
	calls int
	given [][]Message
}

func (g *gateSummarizer) Summarize(ctx context.Context, dropped []Message, previous *Message) (Message, error) {
	g.mu.Lock()
	g.calls++
	g.given = append(g.given, dropped)
	gate := g.gate
	g.mu.Unlock()
	select {
	case <-gate:
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
	return Message{Role: RoleUser, Content: "what happened before: " + strings.Repeat("x ", 10)}, nil
}

// goroutines waits for the number of goroutines to come back to n.
func goroutines(t *testing.T, n int) {
	t.Helper()
	for range 200 {
		if runtime.NumGoroutine() <= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("%d goroutines, want %d: a background summary leaked", runtime.NumGoroutine(), n)
}

// TestBackgroundSummaryNeverWaits: the summary starts when the prompt
// crosses the trigger; every request is answered while the Summarizer is
// blocked; once it returns, the next request swaps the summary in for
// exactly the turns it was given; Close leaves no goroutine behind.
func TestBackgroundSummaryNeverWaits(t *testing.T) {
	base := runtime.NumGoroutine()
	full := trSession(80, 44)
	g := &gateSummarizer{gate: make(chan struct{})}
	var events []Event
	tr := NewTrimmer(WithTrigger(0.6), WithSummarizer(g, SummaryOptions{MaxTokens: 80, Background: true}),
		WithOnTrim(func(e Event) { events = append(events, e) }))
	n := 10
	for ; n <= len(full); n += 2 {
		res, err := tr.Trim(full[:n], 2000) // returns although the Summarizer is blocked
		require.NoError(t, err)
		checkResult(t, full[:n], res, true)
		g.mu.Lock()
		started := g.calls > 0
		g.mu.Unlock()
		if started {
			break
		}
	}
	require.Less(t, n, len(full), "setup: no summary started")
	for i := 0; i < 6 && n+2 <= len(full); i++ {
		n += 2
		res, err := tr.Trim(full[:n], 2000)
		require.NoError(t, err, "the Summarizer is blocked: requests go on")
		assert.LessOrEqual(t, res.TokensAfter, 2000)
	}
	close(g.gate)
	tr.mu.Lock()
	job := tr.bg.job
	tr.mu.Unlock()
	require.NotNil(t, job)
	<-job.done
	n += 2
	res, err := tr.Trim(full[:n], 2000)
	require.NoError(t, err)
	info, ok := tr.Summary()
	require.True(t, ok, "the summary was swapped in")
	assert.Equal(t, job.upTo, info.UpTo, "it covers exactly the turns it was given")
	for _, k := range res.Kept {
		if k >= info.From && k < info.UpTo {
			t.Errorf("message %d, which the summary covers, is still sent", k)
		}
	}
	last := events[len(events)-1]
	assert.Equal(t, SummaryWritten, last.Summary)
	require.NoError(t, tr.Close())
	goroutines(t, base)
}

// TestBackgroundSummaryHostile: whatever the Summarizer does in background
// mode (panic, error, hang ignoring its context, a summary too large or
// empty or of the wrong role), every request is answered within budget,
// valid, and Close returns.
func TestBackgroundSummaryHostile(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	for _, tc := range []struct {
		name string
		f    func(context.Context, []Message, *Message) (Message, error)
	}{
		{"panic", func(context.Context, []Message, *Message) (Message, error) { panic("boom") }},
		{"error", func(context.Context, []Message, *Message) (Message, error) { return Message{}, errors.New("down") }},
		{"hangs ignoring ctx", func(context.Context, []Message, *Message) (Message, error) { <-hang; return Message{}, nil }},
		{"huge", func(context.Context, []Message, *Message) (Message, error) {
			return Message{Role: RoleUser, Content: strings.Repeat("word ", 5000)}, nil
		}},
		{"empty", func(context.Context, []Message, *Message) (Message, error) { return Message{}, nil }},
		{"tool role", func(context.Context, []Message, *Message) (Message, error) {
			return Message{Role: RoleTool, ToolCallID: "x", Content: "s"}, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := trSession(60, 45)
			tr := NewTrimmer(WithTrigger(0.6), WithSummarizer(SummarizerFunc(tc.f), SummaryOptions{MaxTokens: 80, Timeout: 20 * time.Millisecond, Background: true}))
			for n := 10; n <= len(full); n += 3 {
				res, err := tr.Trim(full[:n], 1500)
				require.True(t, err == nil || isTooLarge(err), "request %d: %v", n, err)
				checkResult(t, full[:n], res, true)
				if err == nil {
					assert.LessOrEqual(t, res.TokensAfter, 1500)
				}
				time.Sleep(time.Millisecond) // let a background call fail or time out
			}
			require.NoError(t, tr.Close())
			_, ok := tr.Summary()
			assert.False(t, ok, "no summary was written")
		})
	}
}

// startingSummarizer counts StartSummary calls and hands out the
// gateSummarizer that writes the summary.
type startingSummarizer struct {
	gateSummarizer
	starts int
	inner  *gateSummarizer
}

func (s *startingSummarizer) StartSummary() Summarizer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starts++
	return s.inner
}

// TestBackgroundSummaryStart: a Summarizer with StartSummary is told
// within the Trim that starts the summary, before it returns, and the
// Summarizer it returns writes that summary (the ready-made ones take the
// requests recorded at that moment).
func TestBackgroundSummaryStart(t *testing.T) {
	full := trSession(80, 44)
	inner := &gateSummarizer{gate: make(chan struct{})}
	close(inner.gate)
	s := &startingSummarizer{inner: inner}
	tr := NewTrimmer(WithTrigger(0.6), WithSummarizer(s, SummaryOptions{MaxTokens: 80, Background: true}))
	defer tr.Close()
	n := 10
	for ; n <= len(full); n += 2 {
		_, err := tr.Trim(full[:n], 2000)
		require.NoError(t, err)
		s.mu.Lock()
		starts := s.starts
		s.mu.Unlock()
		if starts > 0 {
			break
		}
	}
	require.Less(t, n, len(full), "setup: no summary started")
	<-tr.SummaryDone()
	inner.mu.Lock()
	assert.Equal(t, 1, inner.calls, "the Summarizer StartSummary returned writes the summary")
	inner.mu.Unlock()
	assert.Equal(t, 0, s.calls, "not the one given to WithSummarizer")
}
