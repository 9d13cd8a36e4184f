package history

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrimToRecentTurns(t *testing.T) {
	// Every message costs 10 tokens (the unit counter), breadcrumb included.
	tests := []struct {
		name    string
		reason  string
		in      []string
		budget  int
		opts    []Option
		want    []string
		wantErr error
		dropped int // DroppedTurns
		kept    int // KeptTurns
		trimmed bool
		unswept bool // WithoutOrphanSweep: the pairs stay as the caller gave them
	}{
		{
			name:   "under budget untouched",
			reason: "a history that fits is returned as is, without breadcrumb",
			in:     []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2"},
			budget: 50,
			want:   []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2"},
			kept:   2,
		},
		{
			name:    "drops oldest whole turns and keeps system",
			reason:  "two turns must go; the system prompt stays and a breadcrumb follows it",
			in:      []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2", "U:q3", "A:a3"},
			budget:  40,
			want:    []string{"S:sys", "B", "U:q3", "A:a3"},
			dropped: 2, kept: 1, trimmed: true,
		},
		{
			name:    "drops the minimum number of turns",
			reason:  "with room for two turns after the breadcrumb, only the oldest goes",
			in:      []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2", "U:q3", "A:a3"},
			budget:  60,
			want:    []string{"S:sys", "B", "U:q2", "A:a2", "U:q3", "A:a3"},
			dropped: 1, kept: 2, trimmed: true,
		},
		{
			name:    "never splits a tool pair",
			reason:  "the turn with parallel calls and their results is dropped or kept whole",
			in:      []string{"S:sys", "U:q1", "A:>c1,c2", "T:c2", "T:c1", "A:done", "U:q2", "A:>c3", "T:c3", "A:ok"},
			budget:  60,
			want:    []string{"S:sys", "B", "U:q2", "A:>c3", "T:c3", "A:ok"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "keeps the latest turn even over budget",
			reason:  "the latest turn is never dropped; the caller gets it with ErrLatestTurnTooLarge",
			in:      []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:>c1", "T:c1", "A:a2"},
			budget:  30,
			want:    []string{"S:sys", "B", "U:q2", "A:>c1", "T:c1", "A:a2"},
			wantErr: ErrLatestTurnTooLarge,
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "single turn over budget",
			reason:  "nothing can be dropped: no breadcrumb, not trimmed, but the error says so",
			in:      []string{"S:sys", "U:q1", "A:a1", "A:a2"},
			budget:  20,
			want:    []string{"S:sys", "U:q1", "A:a1", "A:a2"},
			wantErr: ErrLatestTurnTooLarge,
			kept:    1,
		},
		{
			name:    "breadcrumb after all leading system messages",
			reason:  "the breadcrumb goes after the whole system prefix, not between system messages",
			in:      []string{"S:s1", "S:s2", "U:q1", "A:a1", "U:q2", "A:a2"},
			budget:  50,
			want:    []string{"S:s1", "S:s2", "B", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "existing breadcrumb is not a turn",
			reason:  "[system, breadcrumb, old, new] drops exactly one turn and keeps one breadcrumb",
			in:      []string{"S:sys", "B", "U:old", "A:a1", "U:new", "A:a2"},
			budget:  40,
			want:    []string{"S:sys", "B", "U:new", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "stacked breadcrumbs collapse",
			reason:  "breadcrumbs left stacked by an older runtime are replaced by one",
			in:      []string{"S:sys", "B", "B:older notice", "U:old", "A:a1", "U:new", "A:a2"},
			budget:  40,
			want:    []string{"S:sys", "B", "U:new", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "user text equal to the breadcrumb text is a real turn",
			reason:  "breadcrumbs are recognised by Kind, never by text",
			in:      []string{"S:sys", "U:" + BreadcrumbText, "A:a1", "U:q2", "A:a2"},
			budget:  40,
			want:    []string{"S:sys", "B", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "messages before the first user message go with the first turn",
			reason:  "an assistant greeting before any user message is dropped with turn one",
			in:      []string{"S:sys", "A:hello", "U:q1", "A:a1", "U:q2", "A:a2"},
			budget:  40,
			want:    []string{"S:sys", "B", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "nudges never start a turn",
			reason:  "a runtime nudge stays inside the turn it was injected into",
			in:      []string{"S:sys", "U:q1", "A:a1", "N:remember", "A:a1b", "U:q2", "A:a2"},
			budget:  40,
			want:    []string{"S:sys", "B", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "summaries are pinned",
			reason:  "a leading summary is part of the prefix and survives every trim",
			in:      []string{"S:sys", "M:summary", "U:q1", "A:a1", "U:q2", "A:a2"},
			budget:  50,
			want:    []string{"S:sys", "M:summary", "B", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "late system messages stay inside their turn",
			reason:  "only the leading system messages are pinned; a late one goes with its turn",
			in:      []string{"S:sys", "U:q1", "S:late", "A:a1", "U:q2", "A:a2"},
			budget:  40,
			want:    []string{"S:sys", "B", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:   "orphan results at the start are removed",
			reason: "a tool result with no assistant before it cannot be sent",
			in:     []string{"S:sys", "T:c0", "U:q1", "A:a1"},
			budget: 100,
			want:   []string{"S:sys", "U:q1", "A:a1"},
			kept:   1,
		},
		{
			name:   "mismatched tool_call_id is removed",
			reason: "a result for a call the preceding assistant did not make is an orphan",
			in:     []string{"U:q1", "A:>c1", "T:c1", "T:zz", "A:done"},
			budget: 100,
			want:   []string{"U:q1", "A:>c1", "T:c1", "A:done"},
			kept:   1,
		},
		{
			name:   "call id mentioned only in prose does not pair",
			reason: "pairing is by ToolCalls, never by text",
			in:     []string{"U:q1", "A:I will call c1", "T:c1", "A:done"},
			budget: 100,
			want:   []string{"U:q1", "A:I will call c1", "A:done"},
			kept:   1,
		},
		{
			name:   "back-to-back unresolved dispatches are repaired",
			reason: "the first dispatch is never answered: its call is stripped and the empty message removed",
			in:     []string{"U:q1", "A:>c1", "A:>c2", "T:c1", "T:c2", "A:done"},
			budget: 100,
			want:   []string{"U:q1", "A:>c2", "T:c2", "A:done"},
			kept:   1,
		},
		{
			name:   "unanswered call stripped, text kept",
			reason: "an assistant message with text keeps its text when its call is stripped",
			in:     []string{"U:q1", "A:let me check>c1,c2", "T:c2", "A:done"},
			budget: 100,
			want:   []string{"U:q1", "A:let me check>c2", "T:c2", "A:done"},
			kept:   1,
		},
		{
			name:   "trailing unanswered call stripped",
			reason: "a final call with no result yet would be rejected by the provider",
			in:     []string{"U:q1", "A:>c9"},
			budget: 100,
			want:   []string{"U:q1"},
			kept:   1,
		},
		{
			name:   "ids reused across exchanges pair positionally",
			reason: "some servers number calls per response: c1 twice is legal in separate exchanges",
			in:     []string{"U:q1", "A:>c1", "T:c1", "U:q2", "A:>c1", "T:c1"},
			budget: 100,
			want:   []string{"U:q1", "A:>c1", "T:c1", "U:q2", "A:>c1", "T:c1"},
			kept:   2,
		},
		{
			name:   "duplicate result for one call is removed",
			reason: "a call is answered once; a second result is an orphan",
			in:     []string{"U:q1", "A:>c1", "T:c1", "T:c1"},
			budget: 100,
			want:   []string{"U:q1", "A:>c1", "T:c1"},
			kept:   1,
		},
		{
			name:   "nudge between call and result keeps the pair",
			reason: "nudges are transparent inside an exchange",
			in:     []string{"U:q1", "A:>c1", "N:hurry", "T:c1"},
			budget: 100,
			want:   []string{"U:q1", "A:>c1", "N:hurry", "T:c1"},
			kept:   1,
		},
		{
			name:    "without orphan sweep",
			reason:  "WithoutOrphanSweep leaves pairing as the caller gave it",
			in:      []string{"S:sys", "T:c0", "U:q1", "A:a1"},
			budget:  100,
			opts:    []Option{WithoutOrphanSweep()},
			want:    []string{"S:sys", "T:c0", "U:q1", "A:a1"},
			kept:    1,
			unswept: true,
		},
		{
			name:   "only system messages",
			reason: "no turn at all: returned as is",
			in:     []string{"S:s1", "S:s2"},
			budget: 100,
			want:   []string{"S:s1", "S:s2"},
		},
		{
			name:    "only system messages over budget",
			reason:  "the prefix is never dropped, so the error reports it",
			in:      []string{"S:s1", "S:s2"},
			budget:  10,
			want:    []string{"S:s1", "S:s2"},
			wantErr: ErrLatestTurnTooLarge,
		},
		{
			name:   "empty history",
			reason: "nothing in, nothing out, no error",
			in:     nil,
			budget: 10,
			want:   []string{},
		},
		{
			name:   "single turn",
			reason: "a single turn that fits is untouched",
			in:     []string{"U:q1", "A:a1"},
			budget: 20,
			want:   []string{"U:q1", "A:a1"},
			kept:   1,
		},
		{
			name:    "without breadcrumb",
			reason:  "WithoutBreadcrumb drops turns silently (the event still fires)",
			in:      []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2"},
			budget:  30,
			opts:    []Option{WithoutBreadcrumb()},
			want:    []string{"S:sys", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "custom breadcrumb",
			reason:  "WithBreadcrumb changes the text and forces the kind",
			in:      []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2"},
			budget:  40,
			opts:    []Option{WithBreadcrumb(Message{Role: RoleUser, Content: "[frühere Nachrichten ausgelassen]"})},
			want:    []string{"S:sys", "B:[frühere Nachrichten ausgelassen]", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:   "custom turn start",
			reason: "tool results sent as user text do not start turns under a custom rule",
			in:     []string{"S:sys", "U:q1", "A:run ls", "U:[Tool results] a b", "A:a1", "U:q2", "A:a2"},
			budget: 40,
			opts: []Option{WithTurnStart(func(m Message) bool {
				return m.Role == RoleUser && !strings.HasPrefix(m.Content, "[Tool results]")
			})},
			want:    []string{"S:sys", "B", "U:q2", "A:a2"},
			dropped: 1, kept: 1, trimmed: true,
		},
		{
			name:    "low water trims further",
			reason:  "WithLowWater(0.5) trims to half the budget when a trim is needed",
			in:      []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2", "U:q3", "A:a3", "U:q4", "A:a4"},
			budget:  80,
			opts:    []Option{WithLowWater(0.5)},
			want:    []string{"S:sys", "B", "U:q4", "A:a4"},
			dropped: 3, kept: 1, trimmed: true,
		},
		{
			name:   "low water does not trim a history that fits",
			reason: "hysteresis only applies once a trim is needed",
			in:     []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2"},
			budget: 50,
			opts:   []Option{WithLowWater(0.5)},
			want:   []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:a2"},
			kept:   2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := parse(t, tc.in...)
			orig := clone(in)
			var events []Event
			opts := append([]Option{WithCounter(unit), WithOnTrim(func(e Event) { events = append(events, e) })}, tc.opts...)
			res, err := TrimToRecentTurns(in, tc.budget, opts...)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr, tc.reason)
			} else {
				require.NoError(t, err, tc.reason)
			}
			assert.Equal(t, tc.want, render(res.Messages), tc.reason)
			assert.Equal(t, tc.trimmed, res.Trimmed, "Trimmed: %s", tc.reason)
			assert.Equal(t, tc.dropped, res.DroppedTurns, "DroppedTurns: %s", tc.reason)
			assert.Equal(t, tc.kept, res.KeptTurns, "KeptTurns: %s", tc.reason)
			assert.Equal(t, orig, in, "input modified")
			assert.Equal(t, Estimate(res.Messages, unit), res.TokensAfter, "TokensAfter")
			checkResult(t, in, res, !tc.unswept)
			if tc.trimmed || res.OrphansRemoved > 0 {
				require.Len(t, events, 1, "one event per trim, or per sweep that removed orphans")
				assert.Equal(t, eventOf(res, ReasonBudget, 0), stripLabels(events[0]))
			} else {
				assert.Empty(t, events, "no event when nothing changed")
			}
		})
	}
}

func TestTrimRepeatedIsStable(t *testing.T) {
	in := parse(t, "S:sys", "U:q1", "A:>c1", "T:c1", "A:a1", "U:q2", "A:a2", "U:q3", "A:>c2,c3", "T:c3", "T:c2", "A:a3")
	first, err := TrimToRecentTurns(in, 70, WithCounter(unit))
	require.NoError(t, err)
	require.True(t, first.Trimmed)
	// The runtime appends a new turn to what it sent and trims again.
	next := append(clone(first.Messages), parse(t, "U:q4", "A:a4")...)
	second, err := TrimToRecentTurns(next, 70, WithCounter(unit))
	require.NoError(t, err)
	assert.Len(t, ofKind(second.Messages, KindBreadcrumb), 1, "breadcrumbs never stack: %v", render(second.Messages))
	// Trimming a result again with the same budget changes nothing.
	again, err := TrimToRecentTurns(second.Messages, 70, WithCounter(unit))
	require.NoError(t, err)
	assert.False(t, again.Trimmed)
	assert.Equal(t, second.Messages, again.Messages)
}

func TestTrimIdempotentWhenTooLarge(t *testing.T) {
	in := parse(t, "S:sys", "U:q1", "A:a1", "U:q2", "A:a2", "A:a3", "A:a4")
	first, err := TrimToRecentTurns(in, 40, WithCounter(unit))
	require.ErrorIs(t, err, ErrLatestTurnTooLarge)
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, BudgetError{Need: 60, Budget: 40, Pinned: 20}, *be)
	again, err := TrimToRecentTurns(first.Messages, 40, WithCounter(unit))
	require.ErrorIs(t, err, ErrLatestTurnTooLarge)
	assert.Equal(t, first.Messages, again.Messages)
	assert.False(t, again.Trimmed)
}

func TestTrimResultAccounting(t *testing.T) {
	in := parse(t, "S:sys", "T:c0", "U:q1", "A:>c1", "T:c1", "A:a1", "U:q2", "A:a2")
	res, err := TrimToRecentTurns(in, 40, WithCounter(unit))
	require.NoError(t, err)
	assert.Equal(t, -1, res.TokensBefore, "the dropped turn was not counted")
	res, err = TrimToRecentTurns(in, 40, WithCounter(unit), WithFullCount())
	require.NoError(t, err)
	assert.Equal(t, 70, res.TokensBefore, "counted after the sweep removed T:c0")
	assert.Equal(t, 40, res.TokensAfter)
	assert.Greater(t, res.TokensBefore, res.TokensAfter)
	assert.LessOrEqual(t, res.TokensAfter, res.Budget)
	assert.Equal(t, 4, res.DroppedMessages)
	assert.Equal(t, 1, res.OrphansRemoved)
	assert.Equal(t, []string{"T:c0", "U:q1", "A:>c1", "T:c1", "A:a1"}, render(res.Dropped), "dropped in input order, orphans included")
	assert.Equal(t, []int{0, -1, 6, 7}, res.Kept)
}

func TestTrimInvalidInput(t *testing.T) {
	tests := []struct {
		name       string
		msgs       []Message
		index      int
		wantReason string
		why        string
	}{
		{"unknown role", []Message{{Role: "robot"}}, 0, `unknown role "robot"`,
			"no provider accepts it"},
		{"unknown kind", []Message{{Role: RoleUser}, {Role: RoleUser, Kind: "pinned"}}, 1, `unknown kind "pinned"`,
			"a misspelt kind would silently turn a pinned summary into a droppable turn"},
		{"tool without id", []Message{{Role: RoleUser}, {Role: RoleTool}}, 1, "tool message without tool_call_id",
			"a result that names no call cannot be paired"},
		{"tool call id on user", []Message{{Role: RoleUser, ToolCallID: "x"}}, 0, "tool_call_id on a user message",
			"only tool results answer calls"},
		{"calls on user", []Message{{Role: RoleUser, ToolCalls: []ToolCall{{ID: "a"}}}}, 0, "tool calls on a user message",
			"only assistant messages make calls"},
		{"empty call id", []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a"}, {ID: ""}}}}, 0, "tool call 1 has an empty id",
			"no result could answer it"},
		{"duplicate call id", []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a"}, {ID: "a"}}}}, 0, `tool call id "a" used twice in one message`,
			"a result would answer both"},
		{"kind on tool message", []Message{{Role: RoleTool, ToolCallID: "a", Kind: KindNudge}}, 0, "a nudge message cannot be part of a tool exchange",
			"a nudge never starts a turn, a tool result must stay with its call: both cannot hold"},
		{"unknown part", []Message{{Role: RoleUser, Parts: []Part{{Type: "video"}}}}, 0, `part 0 has unknown type "video"`,
			"its cost cannot be estimated"},
		{"negative part", []Message{{Role: RoleUser, Parts: []Part{{Type: PartImage, Width: -1}}}}, 0, "part 0 has a negative size",
			"a negative size would make the message cheaper than nothing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := clone(tc.msgs)
			_, err := TrimToRecentTurns(tc.msgs, 100)
			require.ErrorIs(t, err, ErrInvalidMessage, tc.why)
			var me *MessageError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, tc.index, me.Index, tc.why)
			assert.Equal(t, tc.wantReason, me.Reason, tc.why)
			assert.True(t, strings.HasPrefix(err.Error(), "history: "), err.Error())
			assert.Equal(t, orig, tc.msgs)
		})
	}
}

func TestTrimInvalidBudget(t *testing.T) {
	for _, tc := range []struct {
		budget int
		reason string
	}{
		{0, "a zero budget fits nothing, not even the latest turn"},
		{-1, "a negative budget is never meaningful"},
	} {
		res, err := TrimToRecentTurns(parse(t, "U:q"), tc.budget)
		assert.ErrorIs(t, err, ErrInvalidBudget, tc.reason)
		assert.Nil(t, res.Messages, tc.reason)
	}
}

func TestTrimLabelsAreCopied(t *testing.T) {
	labels := map[string]string{"session_id": "s1"}
	opt := WithLabels(labels)
	labels["session_id"] = "changed after the option was made"
	in := parse(t, "U:q1", "A:a1", "U:q2", "A:a2")
	var seen []string
	for range 2 {
		_, err := TrimToRecentTurns(in, 30, WithCounter(unit), opt, WithOnTrim(func(e Event) {
			seen = append(seen, e.Labels["session_id"])
			e.Labels["session_id"] = "mutated by callback"
		}))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"s1", "s1"}, seen, "each event gets its own copy of the labels")
}

func TestTrimResultDoesNotAliasInput(t *testing.T) {
	in := parse(t, "U:q1", "A:a1")
	backing := make([]Message, len(in), len(in)+4)
	copy(backing, in)
	res, err := TrimToRecentTurns(backing, 100, WithCounter(unit))
	require.NoError(t, err)
	require.Equal(t, len(res.Messages), cap(res.Messages), "no spare capacity to write into")
	_ = append(res.Messages, Message{Role: RoleUser, Content: "appended"})
	assert.Equal(t, Message{}, backing[:3][2], "append to the result must not write into the caller's array")
}

func TestTrimNoTrimPathAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	in := parse(t, "S:sys", "U:q1", "A:>c1", "T:c1", "A:a1", "U:q2", "A:a2")
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = TrimToRecentTurns(in, 1000)
	})
	assert.Equal(t, 1.0, allocs, "a history that fits costs one allocation: the identity Kept")
}

func TestTrimAllocationsIndependentOfLength(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	// Pooled scratch memory survives only until the next GC; keep the
	// collector out of the measurement so that it counts what a trim asks
	// for, not when the runtime happened to empty the pool.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	small := synth(100, 200)
	large := synth(10000, 200)
	a := testing.AllocsPerRun(20, func() { _, _ = TrimToRecentTurns(small, 2000) })
	b := testing.AllocsPerRun(20, func() { _, _ = TrimToRecentTurns(large, 2000) })
	assert.Equal(t, a, b, "allocations must not grow with history length")
	assert.LessOrEqual(t, b, 8.0)
}

func TestEstimateNilCounter(t *testing.T) {
	in := parse(t, "U:hello there", "A:hi")
	assert.Equal(t, Estimate(in, Heuristic()), Estimate(in, nil))
}
