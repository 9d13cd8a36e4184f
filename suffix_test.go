package history

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longChat is a system prompt and n turns of a user request, an assistant
// tool call, its result and an answer: 4n+1 messages of distinct text.
func longChat(n int) []Message {
	msgs := make([]Message, 0, 4*n+1)
	msgs = append(msgs, Message{Role: RoleSystem, Content: "You are a coding agent."})
	for i := range n {
		id := "c" + strconv.Itoa(i)
		msgs = append(msgs,
			Message{Role: RoleUser, Content: "request " + id + strings.Repeat(" lorem ipsum", 20)},
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "read", Arguments: `{"n":` + strconv.Itoa(i) + `}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: "result " + id + strings.Repeat(" dolor sit amet", 40)},
			Message{Role: RoleAssistant, Content: "answer " + id + strings.Repeat(" consectetur", 10)},
		)
	}
	return msgs
}

func TestLongChatShape(t *testing.T) {
	msgs := longChat(3)
	require.Len(t, msgs, 13)
	assert.Len(t, Turns(msgs), 3)
	_, rep := SweepOrphans(msgs)
	assert.Zero(t, rep.Total(), "well paired")
}

// TestTrimCountsWhatItKeeps: a trim counts the prefix, the kept turns, and
// of the dropped part only what it must read to know that the history does
// not fit: the newest turns up to the first that takes it over the budget
// (with a low-water mark the kept part is smaller than that), never the
// thousands of older messages.
func TestTrimCountsWhatItKeeps(t *testing.T) {
	msgs := longChat(5_000)
	turns := Turns(msgs)
	const budget = 4_000
	// over is the oldest turn that must be read: the newest turns, with
	// the system prompt, first exceed the budget there.
	over, sum := len(turns)-1, Estimate(msgs[:1], nil)
	for ; over >= 0; over-- {
		sum += Estimate(msgs[turns[over].Start:turns[over].End], nil)
		if sum > budget {
			break
		}
	}
	for _, tc := range []struct {
		name   string
		opts   []Option
		reason string
	}{
		{"turns", nil, "whole-turn trimming"},
		{"low water", []Option{WithLowWater(0.6)}, "the cut at the low-water mark, the decision at the budget"},
		{"ladder", []Option{WithElision(ElideOptions{MinTokens: -1}), WithStepTrim()}, "elision savings counted for the kept turns only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := &perContentCounter{calls: map[string]int{}}
			res, err := TrimToRecentTurns(msgs, budget, append(tc.opts, WithCounter(cc))...)
			require.NoError(t, err)
			require.True(t, res.Trimmed)
			// With elision the kept turns cost less, so one more turn may
			// have to be read before the decision is made.
			oldest := turns[max(min(over, res.DroppedTurns-1), 0)].Start
			for i, m := range msgs[1:oldest] {
				if cc.calls[cc.key(m)] != 0 {
					t.Fatalf("%s: message %d was counted; nothing before %d needed to be", tc.reason, i+1, oldest)
				}
			}
			assert.Equal(t, -1, res.TokensBefore, "the dropped part was not counted")
			assert.Equal(t, Estimate(res.Messages, cc), res.TokensAfter, "what is kept is counted exactly")

			full, err := TrimToRecentTurns(msgs, 4_000, append(tc.opts, WithFullCount())...)
			require.NoError(t, err)
			assert.Equal(t, Estimate(msgs, nil), full.TokensBefore, "WithFullCount counts everything")
			assert.Equal(t, res.Kept, full.Kept, "counting everything changes no decision")
		})
	}
}

// TestDroppedIsARunOfTheInput: when the dropped messages are contiguous,
// Dropped is that run of the input, with no copy and no spare capacity.
func TestDroppedIsARunOfTheInput(t *testing.T) {
	msgs := longChat(50)
	res, err := TrimToRecentTurns(msgs, 2_000)
	require.NoError(t, err)
	require.NotEmpty(t, res.Dropped)
	assert.Same(t, &msgs[1], &res.Dropped[0], "a run of the input")
	assert.Equal(t, len(res.Dropped), cap(res.Dropped), "clipped: an append cannot write into the input")
	assert.Equal(t, res.DroppedMessages, len(res.Dropped))

	// With an orphan in the kept part the dropped messages are two runs.
	orphaned := append(longChat(50), Message{Role: RoleTool, ToolCallID: "ghost", Content: "x"})
	res, err = TrimToRecentTurns(orphaned, 2_000)
	require.NoError(t, err)
	assert.Equal(t, res.DroppedMessages+res.OrphansRemoved, len(res.Dropped))
	assert.Equal(t, "ghost", res.Dropped[len(res.Dropped)-1].ToolCallID)
}

// BenchmarkTrimCostsWhatItKeeps trims histories of growing length to the
// same budget: the time per trim should stay nearly flat (a role scan of
// every message, counting only the kept suffix).
func BenchmarkTrimCostsWhatItKeeps(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		msgs := longChat(n / 4)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := TrimToRecentTurns(msgs, 8_000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
