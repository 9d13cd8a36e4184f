package history

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// coldSession is a tool-heavy session that fits a large budget: results
// big enough to be worth eliding.
func coldSession(turns int) []Message {
	big := strings.Repeat("line of tool output ", 100)
	msgs := []Message{{Role: RoleSystem, Content: "You are an agent."}}
	for t := range turns {
		id := "c" + itoa(t)
		msgs = append(msgs,
			Message{Role: RoleUser, Content: "task " + itoa(t)},
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "read_file", Arguments: `{}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: big},
			Message{Role: RoleAssistant, Content: "done " + itoa(t)},
		)
	}
	return msgs
}

func TestTrimmerColdResume(t *testing.T) {
	msgs := coldSession(8)
	budget := Estimate(msgs, nil) * 2 // fits with room to spare
	clock := &fakeClock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	var events []Event
	archived := 0
	tr := NewTrimmer(WithLowWater(0.7), WithClock(clock.now), WithColdAfter(5*time.Minute),
		WithElision(ElideOptions{KeepRecent: 2, Archive: func(Message) error { archived++; return nil }}),
		WithOnTrim(func(e Event) { events = append(events, e) }))

	// Warm requests: the history fits and is sent untouched.
	for range 3 {
		res, err := tr.Trim(msgs, budget)
		require.NoError(t, err)
		assert.False(t, res.Trimmed)
		assert.True(t, isIdentity(res.Kept, len(msgs)))
		clock.advance(4 * time.Minute)
	}
	require.Empty(t, events)

	// An idle gap beyond the retention: the next request prunes.
	clock.advance(2 * time.Hour)
	cold, err := tr.Trim(msgs, budget)
	require.NoError(t, err)
	checkResult(t, msgs, cold, true)
	require.Len(t, events, 1)
	assert.Equal(t, ReasonColdResume, events[0].Reason)
	assert.True(t, cold.Trimmed)
	assert.Equal(t, 6, cold.ElidedResults, "every result outside the 2 newest")
	assert.Equal(t, 6, archived)
	assert.Zero(t, cold.DroppedTurns)
	assert.Less(t, cold.TokensAfter, Estimate(msgs, nil)/2)
	assert.Equal(t, cold.ElidedResults, events[0].ElidedResults)

	// Warm again: append-only, no event, the same placeholders.
	prev := cold.Messages
	for i := range 4 {
		clock.advance(time.Minute)
		msgs = append(msgs, Message{Role: RoleUser, Content: "more " + itoa(i)}, Message{Role: RoleAssistant, Content: "ok"})
		res, err := tr.Trim(msgs, budget)
		require.NoError(t, err)
		checkResult(t, msgs, res, true)
		require.GreaterOrEqual(t, len(res.Messages), len(prev))
		assert.Equal(t, prev, res.Messages[:len(prev)], "request %d rewrote the prompt", i)
		assert.Equal(t, 6, res.ElidedResults)
		prev = res.Messages
	}
	assert.Len(t, events, 1)
	assert.Equal(t, 6, archived, "a reused plan archives nothing again")

	// Maintenance is idempotent: a second cold resume of the same
	// transcript prunes to the same prompt.
	clock.advance(time.Hour)
	again, err := tr.Trim(msgs, budget)
	require.NoError(t, err)
	assert.Equal(t, prev, again.Messages)
}

func TestTrimmerColdResumeNeedsElision(t *testing.T) {
	msgs := coldSession(5)
	clock := &fakeClock{t: time.Unix(0, 0)}
	tr := NewTrimmer(WithClock(clock.now), WithColdAfter(time.Minute))
	first, err := tr.Trim(msgs, 1<<20)
	require.NoError(t, err)
	clock.advance(time.Hour)
	res, err := tr.Trim(msgs, 1<<20)
	require.NoError(t, err)
	assert.False(t, res.Trimmed)
	assert.True(t, reflect.DeepEqual(first.Messages, res.Messages))
}

func TestTrimmerColdResumeDefault(t *testing.T) {
	msgs := coldSession(5)
	clock := &fakeClock{t: time.Unix(0, 0)}
	tr := NewTrimmer(WithClock(clock.now), WithElision(ElideOptions{}))
	_, err := tr.Trim(msgs, 1<<20)
	require.NoError(t, err)
	clock.advance(DefaultColdAfter - time.Second)
	res, _ := tr.Trim(msgs, 1<<20)
	assert.False(t, res.Trimmed, "within the default retention the cache is warm")
	clock.advance(DefaultColdAfter + time.Second)
	res, _ = tr.Trim(msgs, 1<<20)
	assert.True(t, res.Trimmed, "past the default retention the next request prunes")
}

func TestWithColdAfterInvalid(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := NewTrimmer(WithColdAfter(d)).Trim(coldSession(1), 100)
		var oe *OptionError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "WithColdAfter", oe.Option)
	}
}
