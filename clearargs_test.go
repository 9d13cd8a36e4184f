package history

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a Counter that records every message it counts.
type recorder struct {
	c    Counter
	seen []Message
}

func (r *recorder) CountMessage(m Message) int {
	r.seen = append(r.seen, m)
	return r.c.CountMessage(m)
}

// charsArgs costs one token per byte of content and of call arguments,
// plus one per message: arguments measured as text cost their length.
var charsArgs = CounterFunc(func(m Message) int {
	n := 1 + len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Arguments)
	}
	return n
})

// argsOf returns JSON arguments of about n bytes.
func argsOf(n int) string {
	return `{"content":"` + strings.Repeat("a", max(n-14, 0)) + `"}`
}

// writes is a coding task: a request, then steps whose assistant message
// calls edit_file with args bytes of arguments (parallel calls per step)
// and whose results are res bytes, then an answer.
func writes(steps, parallel, args, res int) []Message {
	msgs := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "write the module"}}
	for s := range steps {
		a := Message{Role: RoleAssistant}
		var rs []Message
		for p := range parallel {
			id := "c" + strconv.Itoa(s) + "_" + strconv.Itoa(p)
			a.ToolCalls = append(a.ToolCalls, ToolCall{ID: id, Name: "edit_file", Arguments: argsOf(args)})
			rs = append(rs, big(id, res))
		}
		msgs = append(append(msgs, a), rs...)
	}
	return append(msgs, Message{Role: RoleAssistant, Content: "done"})
}

// clearedAt returns, for each message of msgs, the IDs of its calls whose
// arguments are cleared, "-" for a message with none.
func clearedAt(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var ids []string
		for _, c := range m.ToolCalls {
			if isClearedArguments(c.Arguments) {
				ids = append(ids, c.ID)
			}
		}
		out[i] = strings.Join(ids, ",")
		if out[i] == "" {
			out[i] = "-"
		}
	}
	return out
}

func TestClearArguments(t *testing.T) {
	withReasoning := func(msgs []Message, i int) []Message {
		msgs[i].Parts = []Part{{Type: PartReasoning, Text: "signed thinking"}}
		return msgs
	}
	renamed := func(msgs []Message, i int, name string) []Message {
		msgs[i].ToolCalls[0].Name = name
		return msgs
	}
	tests := []struct {
		name    string
		in      []Message
		opts    ElideOptions
		cleared []string // clearedAt of the output, from message 2 on
		why     string
	}{
		{"parallel calls", writes(2, 3, 400, 300), ElideOptions{KeepRecent: 1, ClearArguments: 100},
			[]string{"c0_0,c0_1,c0_2", "-", "-", "-", "c1_0,c1_1", "-", "-", "-", "-"},
			"every call whose result is elided is cleared, in one copy per message; the protected newest result keeps its call"},
		{"reasoning present", withReasoning(writes(2, 2, 400, 300), 2), ElideOptions{KeepRecent: 1, ClearArguments: 100},
			[]string{"-", "-", "-", "c1_0", "-", "-", "-"},
			"a message holding reasoning is never changed: providers sign it with its calls"},
		{"below threshold", writes(2, 1, 120, 300), ElideOptions{KeepRecent: -1, ClearArguments: 200},
			[]string{"-", "-", "-", "-", "-"},
			"arguments cheaper than ClearArguments stay"},
		{"at threshold", writes(2, 1, 200, 300), ElideOptions{KeepRecent: -1, ClearArguments: 200},
			[]string{"c0_0", "-", "c1_0", "-", "-"},
			"arguments costing exactly ClearArguments are cleared"},
		{"exclude tools", renamed(writes(2, 1, 400, 300), 2, "memory"), ElideOptions{KeepRecent: -1, ClearArguments: 100, ExcludeTools: []string{"memory"}},
			[]string{"-", "-", "c1_0", "-", "-"},
			"an excluded tool's result is kept, and so are its call's arguments"},
		{"keep recent", writes(3, 1, 400, 300), ElideOptions{KeepRecent: 2, ClearArguments: 100},
			[]string{"c0_0", "-", "-", "-", "-", "-", "-"},
			"the calls of protected results keep their arguments"},
		{"small result", writes(2, 1, 400, 100), ElideOptions{KeepRecent: -1, MinTokens: 200, ClearArguments: 100},
			[]string{"c0_0", "-", "c1_0", "-", "-"},
			"large arguments are cleared on their own: a write_file call answered by a result too small to elide"},
		{"zero value", writes(2, 2, 400, 300), ElideOptions{KeepRecent: -1},
			[]string{"-", "-", "-", "-", "-", "-", "-"},
			"ClearArguments 0 changes no call"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := clone(tc.in)
			opts := tc.opts
			opts.Counter = charsArgs
			el, err := ElideToolResults(tc.in, opts)
			require.NoError(t, err)
			assert.Equal(t, tc.cleared, clearedAt(el.Messages)[2:], "ElideToolResults: %s", tc.why)
			assert.Equal(t, Estimate(tc.in, charsArgs)-Estimate(el.Messages, charsArgs), el.TokensSaved, "the saving is exact")

			// A maintenance point of a Trimmer elides every eligible
			// result: the same decision, through the trim.
			res, err := NewTrimmer(WithCounter(charsArgs), WithLowWater(0.5), WithElision(opts)).Trim(tc.in, Estimate(tc.in, charsArgs)-1)
			if el.Elided > 0 || el.ClearedCalls > 0 {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrLatestTurnTooLarge, "nothing to elide in a single turn")
			}
			require.Zero(t, res.DroppedTurns+res.DroppedSteps)
			assert.Equal(t, tc.cleared, clearedAt(res.Messages)[2:], "Trimmer: %s", tc.why)
			assert.Equal(t, Estimate(res.Messages, charsArgs), res.TokensAfter, "TokensAfter is a recount")
			checkResult(t, tc.in, res, true)
			assert.Equal(t, orig, tc.in, "input untouched")
			for _, j := range res.Modified {
				if m := res.Messages[j]; m.Role == RoleAssistant {
					assert.Empty(t, m.Kind, "a cleared message keeps its Kind")
					assert.Equal(t, tc.in[res.Kept[j]].Content, m.Content)
					for _, c := range m.ToolCalls {
						var v map[string]any
						assert.NoError(t, json.Unmarshal([]byte(c.Arguments), &v), "arguments stay a JSON object: %s", c.Arguments)
					}
				}
			}
		})
	}
}

func TestClearArgumentsPlaceholder(t *testing.T) {
	in := writes(2, 1, 400, 300)
	el, err := ElideToolResults(in, ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 10})
	require.NoError(t, err)
	want := `{"elided":"[arguments elided: ` + strconv.Itoa(EstimateText(argsOf(400))) + ` tokens]"}`
	assert.Equal(t, want, el.Messages[2].ToolCalls[0].Arguments, "measured as text with the elision Counter (Heuristic: EstimateText)")
	assert.Equal(t, in[2].ToolCalls[0].ID, el.Messages[2].ToolCalls[0].ID)
	assert.Equal(t, "edit_file", el.Messages[2].ToolCalls[0].Name)
	assert.Equal(t, 1, el.ClearedCalls)

	// With ElideOptions.Counter, N is that counter's measure.
	el, err = ElideToolResults(in, ElideOptions{KeepRecent: 1, ClearArguments: 10, Counter: charsArgs})
	require.NoError(t, err)
	assert.Equal(t, `{"elided":"[arguments elided: 400 tokens]"}`, el.Messages[2].ToolCalls[0].Arguments)

	// A placeholder that would cost as much as the arguments is not used.
	el, err = ElideToolResults(writes(2, 1, 30, 300), ElideOptions{KeepRecent: 1, ClearArguments: 1, Counter: charsArgs})
	require.NoError(t, err)
	assert.Equal(t, 1, el.Elided)
	assert.Zero(t, el.ClearedCalls, "30 bytes of arguments cost less than the placeholder")
}

func TestClearArgumentsIdempotent(t *testing.T) {
	opts := ElideOptions{KeepRecent: -1, MinTokens: -1, ClearArguments: 5}
	in := writes(3, 2, 400, 300)
	el, err := ElideToolResults(in, opts)
	require.NoError(t, err)
	require.Equal(t, 6, el.ClearedCalls)
	full := el.Messages
	again, err := ElideToolResults(el.Messages, opts)
	require.NoError(t, err)
	assert.Zero(t, again.Elided+again.ClearedCalls, "nothing left to elide or clear")

	// Cleared arguments are recognised by their form, not by their result:
	// a result not elided yet next to a call cleared before (a runtime
	// that stored them apart) is elided, the call left as it is.
	mixed := clone(in)
	mixed[2].ToolCalls[0].Arguments = clearedArguments(3)
	el, err = ElideToolResults(mixed, opts)
	require.NoError(t, err)
	assert.Equal(t, clearedArguments(3), el.Messages[2].ToolCalls[0].Arguments, "never cleared twice")
	assert.Equal(t, 5, el.ClearedCalls)

	// A trim of a trimmed result changes nothing.
	budget := Estimate(in, nil) / 2
	res, err := TrimToRecentTurns(in, budget, WithElision(opts))
	require.NoError(t, err)
	require.Positive(t, res.ElidedResults)
	re, err := TrimToRecentTurns(res.Messages, budget, WithElision(opts))
	require.NoError(t, err)
	assert.False(t, re.Trimmed)
	assert.Equal(t, res.Messages, re.Messages)
	// Nor does a Trimmer's cold-resume prune of it, which elides every
	// eligible result even when the history fits.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var events []Event
	tr := NewTrimmer(WithElision(opts), WithClock(func() time.Time { return now }), WithColdAfter(time.Minute),
		WithOnTrim(func(e Event) { events = append(events, e) }))
	_, err = tr.Trim(full, budget)
	require.NoError(t, err)
	now = now.Add(time.Hour)
	pruned, err := tr.Trim(full, budget)
	require.NoError(t, err)
	assert.Equal(t, full, pruned.Messages)
	assert.Empty(t, events, "nothing left to prune")
	// While the untrimmed history, at a cold resume, is pruned and cleared.
	_, err = tr.Trim(in, Estimate(in, nil)*2)
	require.NoError(t, err)
	now = now.Add(time.Hour)
	cold, err := tr.Trim(in, Estimate(in, nil)*2)
	require.NoError(t, err)
	require.Len(t, events, 1)
	assert.Equal(t, ReasonColdResume, events[0].Reason)
	assert.Equal(t, []string{"-", "c0_0,c0_1", "-", "-", "c1_0,c1_1", "-", "-", "c2_0,c2_1", "-", "-", "-"}, clearedAt(cold.Messages)[1:],
		"every result elided, every call cleared")
	assert.Equal(t, full, cold.Messages, "as ElideToolResults does")
}

// TestClearArgumentsPlanner: the trim counts what clearing saves with the
// result's, so it elides only as many results as it needs, fewer than
// without clearing; TokensAfter is exact even under a Counter whose count
// of a message is not the sum of its calls' (each changed message is
// recounted once).
func TestClearArgumentsPlanner(t *testing.T) {
	in := writes(6, 1, 600, 400)
	total := Estimate(in, charsArgs)
	budget := total - 1500
	plain, err := TrimToRecentTurns(in, budget, WithCounter(charsArgs), WithElision(ElideOptions{KeepRecent: 1}))
	require.NoError(t, err)
	clearing, err := TrimToRecentTurns(in, budget, WithCounter(charsArgs), WithElision(ElideOptions{KeepRecent: 1, ClearArguments: 100}))
	require.NoError(t, err)
	assert.Equal(t, 5, plain.ElidedResults, "without clearing, 5 results of about 340 tokens saved each")
	assert.Equal(t, 2, clearing.ElidedResults, "with clearing, each elision also saves about 560 tokens of arguments")
	assert.Equal(t, []string{"c0_0", "-", "c1_0", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"}, clearedAt(clearing.Messages)[2:],
		"the calls of the elided results, oldest first")
	assert.Equal(t, Estimate(clearing.Messages, charsArgs), clearing.TokensAfter)
	assert.LessOrEqual(t, clearing.TokensAfter, budget)
	assert.Equal(t, []int{2, 3, 4, 5}, clearing.Modified, "each cleared call's message and each elided result")
	checkResult(t, in, clearing, true)

	// A Counter that rounds a message's arguments as a whole, so that what
	// clearing one call saves depends on the others: the estimate is off,
	// the count is not.
	blocks := CounterFunc(func(m Message) int {
		b := 0
		for _, c := range m.ToolCalls {
			b += len(c.Arguments)
		}
		return 1 + len(m.Content) + (b+99)/100*100
	})
	par := writes(4, 3, 250, 200)
	for budget := Estimate(par, blocks) - 200; budget > 1000; budget -= 150 {
		counted := &recorder{c: blocks}
		res, err := TrimToRecentTurns(par, budget, WithCounter(counted), WithElision(ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 50}))
		if err != nil {
			require.True(t, isTooLarge(err), "%v", err)
		}
		require.Equal(t, Estimate(res.Messages, blocks), res.TokensAfter, "budget %d", budget)
		if err == nil {
			require.LessOrEqual(t, res.TokensAfter, budget)
		}
		checkResult(t, par, res, true)
		// Every input message is counted once; the rest are the changed
		// copies (once each), the placeholders, and arguments as text.
		seen := map[string]int{}
		for _, m := range counted.seen {
			if m.Role == RoleAssistant && len(m.ToolCalls) > 0 {
				seen[render([]Message{m})[0]+clearedAt([]Message{m})[0]]++
			}
		}
		for k, n := range seen {
			require.Equal(t, 1, n, "budget %d: %s counted %d times", budget, k, n)
		}
	}
}

// TestClearArgumentsTrimmerAppendOnly grows a coding session one step at a
// time through a Trimmer that clears arguments: between two maintenance
// points the prompt only grows at its end (the cleared copies are rebuilt
// identically from the plan), Modified names them, and at a maintenance
// point the plan changes.
func TestClearArgumentsTrimmerAppendOnly(t *testing.T) {
	session := writes(40, 2, 300, 300)
	budget := Estimate(session, nil) / 3
	plans := 0
	opts := ElideOptions{KeepRecent: 1, MinTokens: 64, ClearArguments: 64}
	tr := NewTrimmer(WithTrigger(0.6), WithLowWater(0.36), WithElision(opts), WithStepTrim(), WithOnTrim(func(Event) { plans++ }))
	var prev Result
	var prevIn []Message
	reused, clearedSeen := 0, 0
	for n := 3; n <= len(session); n++ {
		if session[n-1].Role == RoleTool && n < len(session) && session[n].Role == RoleTool {
			continue // a request after the last result of a step
		}
		in := session[:n]
		before := plans
		res, err := tr.Trim(in, budget)
		require.NoError(t, err)
		checkResult(t, in, res, true)
		require.Equal(t, Estimate(res.Messages, nil), res.TokensAfter)
		if res.Trimmed && plans == before {
			reused++
			checkExtends(t, prevIn, in, prev, res)
		}
		for _, j := range res.Modified {
			if res.Messages[j].Role == RoleAssistant {
				clearedSeen++
				assert.True(t, slices.ContainsFunc(res.Messages[j].ToolCalls, func(c ToolCall) bool { return isClearedArguments(c.Arguments) }))
			}
		}
		prev, prevIn = res, in
	}
	assert.Greater(t, plans, 1, "several maintenance points")
	assert.Greater(t, reused, 2*plans, "most requests extend the plan")
	assert.Positive(t, clearedSeen)

	// The Trimmer's prompt at a reuse is the stateless trim's plan
	// extended: the same cleared copies.
	last, err := NewTrimmer(WithElision(opts)).Trim(session, budget)
	require.NoError(t, err)
	statelessCleared := 0
	for _, c := range clearedAt(last.Messages) {
		if c != "-" {
			statelessCleared++
		}
	}
	assert.Positive(t, statelessCleared)
}

func TestClearArgumentsApplyFunc(t *testing.T) {
	in := writes(3, 2, 400, 300)
	type native struct {
		id   string
		args []string
	}
	nat := make([]native, len(in))
	for i, m := range in {
		nat[i].id = "n" + strconv.Itoa(i)
		for _, c := range m.ToolCalls {
			nat[i].args = append(nat[i].args, c.Arguments)
		}
	}
	res, err := TrimToRecentTurns(in, Estimate(in, nil)*3/4, WithElision(ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 50}))
	require.NoError(t, err)
	var built []int
	out := ApplyFunc(nat, res, func(m Message) native {
		var n native
		n.id = "built"
		for _, c := range m.ToolCalls {
			n.args = append(n.args, c.Arguments)
		}
		return n
	})
	for j := range out {
		if out[j].id == "built" {
			built = append(built, j)
		}
	}
	assert.Equal(t, res.Modified, built, "build gets every changed message, cleared ones included, and nothing else")
	assert.Equal(t, clearedArguments(EstimateText(argsOf(400))), out[2].args[0], "and the cleared arguments with it")
}

func TestClearArgumentsInvalid(t *testing.T) {
	msgs := writes(1, 1, 100, 100)
	_, err := TrimToRecentTurns(msgs, 1000, WithElision(ElideOptions{ClearArguments: -1}))
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "WithElision", oe.Option)
	assert.ErrorIs(t, err, ErrInvalidOption)
	_, err = NewTrimmer(WithElision(ElideOptions{ClearArguments: -1})).Trim(msgs, 1000)
	assert.ErrorIs(t, err, ErrInvalidOption, "the Trimmer reports it too")
	el, err := ElideToolResults(msgs, ElideOptions{ClearArguments: -5})
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "ElideOptions", oe.Option)
	assert.Nil(t, el.Messages)
}

// TestClearArgumentsPairing: a result after a user message answers no call
// (see SweepOrphans); without the sweep, eliding it must not clear the
// call of an earlier assistant message.
func TestClearArgumentsPairing(t *testing.T) {
	in := []Message{
		{Role: RoleUser, Content: "q"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "w", Arguments: argsOf(500)}}},
		big("a", 400),
		{Role: RoleUser, Content: "again"},
		big("a", 400), // an orphan reusing the id
		{Role: RoleAssistant, Content: "ok"},
	}
	opts := ElideOptions{KeepRecent: -1, MinTokens: -1, ClearArguments: 10}
	el, err := ElideToolResults(in, opts)
	require.NoError(t, err)
	assert.Equal(t, 2, el.Elided)
	assert.Equal(t, 1, el.ClearedCalls, "the call is cleared once, for the result that answers it")

	in[2] = Message{Role: RoleUser, Content: "no answer"}
	el, err = ElideToolResults(in, opts)
	require.NoError(t, err)
	assert.Equal(t, 1, el.Elided)
	assert.Zero(t, el.ClearedCalls, "the orphan's elision clears nothing")
	res, err := TrimToRecentTurns(in, 500, WithoutOrphanSweep(), WithElision(opts))
	require.NoError(t, err)
	assert.Equal(t, in[1], res.Messages[1], "nor does a trim without the sweep")
	assert.True(t, reflect.DeepEqual(clearedAt(res.Messages), []string{"-", "-", "-", "-", "-", "-"}))
}
