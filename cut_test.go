package history

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneHugeStep is a task whose newest step alone exceeds any small budget:
// a read of a large file.
func oneHugeStep() []Message {
	return []Message{
		{Role: RoleSystem, Content: "You are a coding agent."},
		{Role: RoleUser, Content: "Fix the bug in /repo/big.go"},
		readCall("a", "/repo/small.go"), bigResult("a", 30),
		readCall("b", "/repo/big.go"), bigResult("b", 800),
	}
}

func TestCutFits(t *testing.T) {
	msgs := oneHugeStep()
	orig := clone(msgs)
	budget := 1000
	_, err := TrimToRecentTurns(msgs, budget, WithElision(ElideOptions{}), WithStepTrim())
	require.ErrorIs(t, err, ErrLatestTurnTooLarge, "without the cut rung")

	var archived []string
	store := NewMemoryStore()
	var events []Event
	opts := []Option{WithElision(ElideOptions{Cut: true, Store: store, Archive: func(m Message) error {
		archived = append(archived, m.ToolCallID)
		return nil
	}}), WithStepTrim(), WithOnTrim(func(e Event) { events = append(events, e) })}
	res, err := TrimToRecentTurns(msgs, budget, opts...)
	require.NoError(t, err)
	assert.Equal(t, orig, msgs, "input untouched")
	assert.LessOrEqual(t, res.TokensAfter, budget)
	assert.Equal(t, Estimate(res.Messages, nil), res.TokensAfter, "TokensAfter is exact")
	checkResult(t, msgs, res, true)
	assert.Equal(t, 1, res.CutResults)
	assert.Equal(t, res.ElidedResults, res.CutResults+0, "the cut result counts as elided too")
	require.Len(t, events, 1)
	assert.Equal(t, 1, events[0].CutResults)

	last := res.Messages[len(res.Messages)-1]
	assert.Equal(t, KindElided, last.Kind, "a cut result is KindElided, so no trim cuts it again")
	assert.True(t, strings.HasPrefix(last.Content, "[cut tool result "+ElisionHandle(msgs[5])+": Read, "), last.Content[:80])
	assert.Contains(t, last.Content, RecallToolName, "the marker says how to get the rest")
	assert.Contains(t, last.Content, "excerpt of /repo/big.go:", "a head and tail digest")
	assert.Contains(t, last.Content, "  1→", "the head")
	assert.Contains(t, last.Content, "800→", "the tail")
	assert.Equal(t, []string{"b"}, archived, "the original goes to Archive")
	kept, ok, err := store.Get(context.Background(), ElisionHandle(msgs[5]))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, msgs[5], kept, "and to the Store")
	assert.Equal(t, "Fix the bug in /repo/big.go", res.Messages[1].Content, "the user's request is kept")

	re, err := TrimToRecentTurns(res.Messages, budget, opts...)
	require.NoError(t, err)
	assert.False(t, re.Trimmed)
	assert.Equal(t, res.Messages, re.Messages, "a runtime that keeps the output trims it again unchanged")
}

func TestCutLevel(t *testing.T) {
	// Two results in the newest step (parallel calls), one four times the
	// other: the larger is cut first, down to a common size.
	msgs := []Message{
		{Role: RoleUser, Content: "go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "Read", Arguments: `{"file_path":"/a"}`}, {ID: "b", Name: "Read", Arguments: `{"file_path":"/b"}`}}},
		bigResult("a", 400), bigResult("b", 100),
	}
	sizeA, sizeB := Heuristic().CountMessage(msgs[2]), Heuristic().CountMessage(msgs[3])
	budget := Estimate(msgs, nil) - sizeA/2
	res, err := TrimToRecentTurns(msgs, budget, WithElision(ElideOptions{Cut: true}), WithStepTrim())
	require.NoError(t, err)
	assert.LessOrEqual(t, res.TokensAfter, budget)
	assert.Equal(t, 1, res.CutResults, "the smaller result is under the level")
	assert.Less(t, Heuristic().CountMessage(res.Messages[2]), sizeA)
	assert.Equal(t, sizeB, Heuristic().CountMessage(res.Messages[3]))
}

func TestCutNeverTouches(t *testing.T) {
	huge := strings.Repeat("the user's own words ", 400)
	thinking := Message{Role: RoleAssistant, Parts: []Part{{Type: PartReasoning, Text: "think"}},
		ToolCalls: []ToolCall{{ID: "w", Name: "Write", Arguments: `{"file_path":"/x","content":"` + strings.Repeat("y = f(x); ", 400) + `"}`}}}
	tests := []struct {
		name string
		msgs []Message
		pins []int
	}{
		{"the user's request", []Message{{Role: RoleUser, Content: huge}, readCall("a", "/a"), bigResult("a", 100)}, nil},
		{"a pinned message", []Message{{Role: RoleUser, Content: "go"}, {Role: RoleSystem, Content: huge}, readCall("a", "/a"), bigResult("a", 100)}, []int{1}},
		{"reasoning and its calls", []Message{{Role: RoleUser, Content: "go"}, thinking, {Role: RoleTool, ToolCallID: "w", Content: "ok"}}, nil},
	}
	for _, tc := range tests {
		res, err := TrimToRecentTurns(tc.msgs, 300, WithElision(ElideOptions{Cut: true}), WithStepTrim(), WithPin(tc.pins...))
		require.ErrorIs(t, err, ErrLatestTurnTooLarge, tc.name)
		for j, m := range res.Messages {
			k := res.Kept[j]
			if k < 0 || tc.msgs[k].Role == RoleTool {
				continue
			}
			assert.Equal(t, tc.msgs[k], m, "%s: message %d is sent as it was", tc.name, k)
		}
		re, _ := TrimToRecentTurns(res.Messages, 300, WithElision(ElideOptions{Cut: true}), WithStepTrim())
		assert.Equal(t, res.Messages, re.Messages, "%s: over budget, trimmed again unchanged", tc.name)
	}
}

func TestCutClearsCalls(t *testing.T) {
	// The newest step's call carries a whole file; its result is short:
	// with nothing left to cut, the call's arguments are cleared.
	msgs := []Message{
		{Role: RoleUser, Content: "write it"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "w", Name: "Write", Arguments: `{"file_path":"/x","content":"` + strings.Repeat("line of code; ", 300) + `"}`}}},
		{Role: RoleTool, ToolCallID: "w", Content: "wrote /x"},
	}
	res, err := TrimToRecentTurns(msgs, 100, WithElision(ElideOptions{Cut: true}), WithStepTrim())
	require.NoError(t, err)
	assert.LessOrEqual(t, res.TokensAfter, 100)
	assert.Equal(t, []int{1}, res.Modified)
	assert.True(t, isClearedArguments(res.Messages[1].ToolCalls[0].Arguments), res.Messages[1].ToolCalls[0].Arguments)
	assert.Equal(t, "w", res.Messages[1].ToolCalls[0].ID, "pairing untouched")
	re, err := TrimToRecentTurns(res.Messages, 100, WithElision(ElideOptions{Cut: true}), WithStepTrim())
	require.NoError(t, err)
	assert.Equal(t, res.Messages, re.Messages)
}

func TestCutBoundary(t *testing.T) {
	// With the cut rung, the last result elided to reach the target is cut
	// to fill the room left instead: the request lands at the budget.
	msgs := []Message{{Role: RoleUser, Content: "go"}}
	for _, id := range []string{"a", "b", "c", "d"} {
		msgs = append(msgs, readCall(id, "/"+id), bigResult(id, 120))
	}
	budget := Estimate(msgs, nil) - 700
	plain, err := TrimToRecentTurns(msgs, budget, WithElision(ElideOptions{KeepRecent: 1}))
	require.NoError(t, err)
	res, err := TrimToRecentTurns(msgs, budget, WithElision(ElideOptions{KeepRecent: 1, Cut: true}))
	require.NoError(t, err)
	assert.LessOrEqual(t, res.TokensAfter, budget)
	assert.Greater(t, res.TokensAfter, plain.TokensAfter, "the room left is used")
	assert.Equal(t, plain.ElidedResults, res.ElidedResults)
	assert.Equal(t, 1, res.CutResults)
	re, err := TrimToRecentTurns(res.Messages, budget, WithElision(ElideOptions{KeepRecent: 1, Cut: true}))
	require.NoError(t, err)
	assert.Equal(t, res.Messages, re.Messages)
}

func TestCutTrimmer(t *testing.T) {
	// A Trimmer remembers its cut: the next request, one message longer,
	// extends the prompt it sent.
	msgs := oneHugeStep()
	msgs = append(msgs, Message{Role: RoleAssistant, Content: "Found it."})
	tr := NewTrimmer(WithElision(ElideOptions{Cut: true}), WithStepTrim())
	first, err := tr.Trim(msgs[:6], 1000)
	require.NoError(t, err)
	require.Equal(t, 1, first.CutResults)
	next, err := tr.Trim(msgs, 1000)
	require.NoError(t, err)
	assert.Equal(t, first.Messages, next.Messages[:len(first.Messages)], "append-only between maintenance points")
	assert.Equal(t, 1, next.CutResults)
}

func TestCutApplyFunc(t *testing.T) {
	msgs := oneHugeStep()
	res, err := TrimToRecentTurns(msgs, 1000, WithElision(ElideOptions{Cut: true}), WithStepTrim())
	require.NoError(t, err)
	type native struct{ text string }
	in := make([]native, len(msgs))
	for i, m := range msgs {
		in[i] = native{m.Content}
	}
	out := ApplyFunc(in, res, func(m Message) native { return native{m.Content} })
	require.Len(t, out, len(res.Messages))
	for j := range out {
		assert.Equal(t, res.Messages[j].Content, out[j].text, "ApplyFunc rebuilds the cut result")
	}
	var be *BudgetError
	assert.False(t, errors.As(err, &be))
}

func TestCutNotForHysteresis(t *testing.T) {
	// The newest step lies between the trigger and the budget: it is sent
	// as it is, uncut (a cut is made to fit, not to reach a mark).
	msgs := oneHugeStep()
	size := Estimate(msgs, nil)
	budget := size * 10 / 8
	opts := []Option{WithTrigger(0.6), WithElision(ElideOptions{Cut: true}), WithStepTrim()}
	res, err := TrimToRecentTurns(msgs, budget, opts...)
	require.NoError(t, err)
	assert.Zero(t, res.CutResults)
	assert.Equal(t, msgs[5], res.Messages[len(res.Messages)-1], "the newest result is sent whole")
	tr := NewTrimmer(opts...)
	res, err = tr.Trim(msgs, budget)
	require.NoError(t, err)
	assert.Zero(t, res.CutResults)
	// Over the budget itself, it is cut to the budget, not to the mark.
	res, err = TrimToRecentTurns(msgs, size*8/10, opts...)
	require.NoError(t, err)
	assert.Equal(t, 1, res.CutResults)
	assert.Greater(t, res.TokensAfter, size*8/10*6/10, "cut to fit the budget, not the trigger")
}
