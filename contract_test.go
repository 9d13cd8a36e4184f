package history

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// words returns n distinct-looking words, for messages of a known size.
func words(prefix string, n int) string {
	return prefix + strings.Repeat(" word", n)
}

// unitCounter counts every message as n tokens.
func unitCounter(n int) Counter {
	return CounterFunc(func(Message) int { return n })
}

func TestKeptAlwaysParallelToMessages(t *testing.T) {
	tests := []struct {
		name   string
		msgs   []Message
		budget int
		reason string
	}{
		{"fits", parse(t, "S:sys", "U:q", "A:a"), 1000, "a history that fits still gets an identity Kept"},
		{"sweep only", parse(t, "S:sys", "U:q", "T:ghost", "A:a"), 1000, "the sweep removed an orphan; nothing trimmed"},
		{"trimmed", parse(t, "S:sys", "U:"+words("q1", 200), "A:a1", "U:q2", "A:a2"), 60, "a turn was dropped and a breadcrumb inserted"},
		{"too large", parse(t, "S:sys", "U:"+words("q", 500)), 10, "the latest turn alone does not fit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := TrimToRecentTurns(tc.msgs, tc.budget)
			if err != nil {
				require.ErrorIs(t, err, ErrLatestTurnTooLarge, tc.reason)
			}
			require.Len(t, res.Kept, len(res.Messages), tc.reason)
			for i, k := range res.Kept {
				if k >= 0 && res.Messages[i].Kind != KindElided {
					assert.Equal(t, tc.msgs[k].Content, res.Messages[i].Content, "%s: Kept[%d] names the original", tc.reason, i)
				}
			}
			// Apply with Kept alone reproduces the messages.
			got := Apply(tc.msgs, res, Breadcrumb)
			assert.Len(t, got, len(res.Messages), tc.reason)
		})
	}
}

func TestInvalidOptionValues(t *testing.T) {
	msgs := parse(t, "S:sys", "U:q", "A:a")
	tests := []struct {
		name   string
		opt    Option
		option string
		reason string
	}{
		{"low water zero", WithLowWater(0), "WithLowWater", "0 is outside (0, 1): it used to turn the option off silently"},
		{"low water one", WithLowWater(1), "WithLowWater", "1 is outside (0, 1)"},
		{"low water negative", WithLowWater(-0.5), "WithLowWater", "negative fraction"},
		{"low water above one", WithLowWater(1.5), "WithLowWater", "above one"},
		{"low water NaN", WithLowWater(math.NaN()), "WithLowWater", "NaN compares false with everything"},
		{"breadcrumb role", WithBreadcrumb(Message{Role: RoleTool, Content: "x"}), "WithBreadcrumb", "a tool-role notice"},
		{"breadcrumb part", WithBreadcrumb(Message{Role: RoleUser, Parts: []Part{{Type: "bogus"}}}), "WithBreadcrumb", "a part of unknown type: the first trim's output would be invalid"},
		{"breadcrumb calls", WithBreadcrumb(Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a"}}}), "WithBreadcrumb", "a notice with tool calls"},
		{"step breadcrumb", WithStepBreadcrumb(Message{Role: "robot"}), "WithStepBreadcrumb", "unknown role"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Even a history that fits must not hide the invalid option.
			_, err := TrimToRecentTurns(msgs, 1000, tc.opt)
			require.ErrorIs(t, err, ErrInvalidOption, tc.reason)
			var oe *OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.option, oe.Option)
			assert.True(t, strings.HasPrefix(err.Error(), "history: invalid option "+tc.option), err.Error())

			_, err = NewTrimmer(tc.opt).Trim(msgs, 1000)
			assert.ErrorIs(t, err, ErrInvalidOption, "the Trimmer reports it too")
		})
	}
	// An invalid breadcrumb also answers errors.As with *MessageError.
	_, err := TrimToRecentTurns(msgs, 1000, WithBreadcrumb(Message{Role: RoleTool}))
	var me *MessageError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, -1, me.Index)
}

func TestElideOptionsCounterHonoured(t *testing.T) {
	msgs := parse(t, "S:sys", "U:q1", "A:>c1", "T:c1", "A:a1", "U:q2", "A:>c2", "T:c2", "A:a2")
	big := CounterFunc(func(m Message) int {
		if m.Role == RoleTool && m.Kind != KindElided {
			return 1000
		}
		return 1
	})
	// The trim counter sees every message as 50 tokens: no tool result
	// reaches MinTokens 500 by that measure.
	opts := ElideOptions{KeepRecent: -1, MinTokens: 500}
	res, err := TrimToRecentTurns(msgs, 400, WithCounter(unitCounter(50)), WithElision(opts))
	require.NoError(t, err)
	assert.Zero(t, res.ElidedResults, "by the trim counter no result is large enough")

	opts.Counter = big
	res, err = TrimToRecentTurns(msgs, 400, WithCounter(CounterFunc(func(m Message) int {
		if m.Kind == KindElided {
			return 10
		}
		return 50
	})), WithElision(opts))
	require.NoError(t, err)
	require.Positive(t, res.ElidedResults, "ElideOptions.Counter decides which results are large enough")
	for _, m := range res.Messages {
		if m.Kind == KindElided {
			assert.Contains(t, m.Content, "1000 tokens", "the placeholder states the elision counter's size")
		}
	}
}

func TestTurnsUsesTurnStart(t *testing.T) {
	msgs := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "task one"},
		{Role: RoleAssistant, Content: "running"},
		{Role: RoleUser, Content: "[Tool results] ok"},
		{Role: RoleAssistant, Content: "done"},
		{Role: RoleUser, Content: "task two"},
		{Role: RoleAssistant, Content: "ok"},
	}
	rule := WithTurnStart(func(m Message) bool {
		return m.Role == RoleUser && !strings.HasPrefix(m.Content, "[Tool results]")
	})
	assert.Equal(t, []Turn{{1, 3}, {3, 5}, {5, 7}}, Turns(msgs), "by default every user message opens a turn")
	assert.Equal(t, []Turn{{1, 5}, {5, 7}}, Turns(msgs, rule), "the rule given to the trim decides")

	// The trim works with the same turns.
	res, err := TrimToRecentTurns(msgs, 1, WithCounter(unitCounter(1)), rule)
	require.ErrorIs(t, err, ErrLatestTurnTooLarge)
	assert.Equal(t, len(Turns(msgs, rule)), res.KeptTurns+res.DroppedTurns)
}

func TestMessageCloneDoesNotAlias(t *testing.T) {
	m := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "x"}}, Parts: []Part{{Type: PartText, Text: "t"}}}
	c := m.Clone()
	c.ToolCalls[0].Name = "changed"
	c.Parts[0].Text = "changed"
	assert.Equal(t, "x", m.ToolCalls[0].Name)
	assert.Equal(t, "t", m.Parts[0].Text)
	assert.Nil(t, Message{}.Clone().Parts, "nil slices stay nil")
}

// TestSharedOptionsConcurrent shares one option slice, and one Trimmer built
// from it, between goroutines that call every exported entry point: options
// must be values that applying never writes to (run with -race).
func TestSharedOptionsConcurrent(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	opts := []Option{
		WithBreadcrumb(Message{Role: RoleUser, Content: "[omitted]"}),
		WithStepBreadcrumb(Message{Role: RoleUser, Content: "[steps omitted]"}),
		WithCounter(nil),
		WithOnTrim(LogTrims(nil)),
		WithOnTrim(LogTrims(logger)),
		WithLabels(map[string]string{"session": "s"}),
		WithStepTrim(),
		WithElision(ElideOptions{}),
	}
	tr := NewTrimmer(opts...)
	msgs := trSession(30, 3)
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				n := 10 + (g*8+i)%(len(msgs)-10)
				if _, err := TrimToRecentTurns(msgs[:n], 500, opts...); err != nil && !errors.Is(err, ErrLatestTurnTooLarge) {
					errs <- err
				}
				if _, err := tr.Trim(msgs[:n], 500); err != nil && !errors.Is(err, ErrLatestTurnTooLarge) {
					errs <- err
				}
				_ = Turns(msgs[:n], opts...)
				_, _, _ = Breadcrumbs(opts...)
				overflow := errors.New("prompt is too long: 250000 tokens > 200000 maximum")
				if _, err := RecoverOverflow(msgs[:n], overflow, 1, opts...); err != nil && !errors.Is(err, ErrCannotRecover) {
					errs <- err
				}
				_ = IsContextOverflow(overflow)
				if _, err := ElideToolResults(msgs[:n], ElideOptions{}); err != nil {
					errs <- err
				}
				_, _ = SweepOrphans(msgs[:n])
				_ = RenderTranscript(msgs[:n], 200, RenderOptions{})
				_ = Estimate(msgs[:n], nil)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, buf.String(), "history trimmed")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestLogTrimsFollowsSetDefault: a nil logger means the default logger at
// the time of each event, not the first one seen.
func TestLogTrimsFollowsSetDefault(t *testing.T) {
	old := slog.Default()
	t.Cleanup(func() { slog.SetDefault(old) })
	var first, second bytes.Buffer
	log := LogTrims(nil)
	slog.SetDefault(slog.New(slog.NewTextHandler(&first, nil)))
	log(Event{Type: EventType, Reason: ReasonBudget})
	slog.SetDefault(slog.New(slog.NewTextHandler(&second, nil)))
	log(Event{Type: EventType, Reason: ReasonBudget})
	assert.Contains(t, first.String(), "history trimmed")
	assert.Equal(t, 1, strings.Count(first.String(), "history trimmed"), "the second event goes to the new default")
	assert.Contains(t, second.String(), "history trimmed")
}
