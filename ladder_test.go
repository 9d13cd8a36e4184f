package history

import (
	"errors"
	"github.com/histrim/history/internal/rules"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chars costs one token per content byte plus one per message, so that a
// placeholder is cheaper than a large result.
var chars = CounterFunc(func(m Message) int { return 1 + len(m.Content) })

// big returns a tool result answering id with n bytes of content.
func big(id string, n int) Message {
	return Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("x", n)}
}

func callOf(id, name string) Message {
	return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: name}}}
}

// agentTask is one user request followed by steps: call, result of size n.
func agentTask(steps, n int) []Message {
	msgs := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "do the task"}}
	for i := range steps {
		id := "c" + string(rune('a'+i))
		msgs = append(msgs, callOf(id, "read"), big(id, n))
	}
	return append(msgs, Message{Role: RoleAssistant, Content: "done"})
}

func TestElideToolResults(t *testing.T) {
	in := agentTask(6, 400) // results at indices 3, 5, 7, 9, 11, 13
	orig := clone(in)
	var archived []string
	res, err := ElideToolResults(in, ElideOptions{
		Counter: chars,
		Archive: func(m Message) error { archived = append(archived, m.ToolCallID); return nil },
	})
	require.NoError(t, err)
	assert.Equal(t, orig, in, "input untouched")
	assert.Equal(t, 3, res.Elided, "all but the 3 newest")
	assert.Equal(t, []string{"ca", "cb", "cc"}, archived, "originals archived oldest first")
	require.Len(t, res.Messages, len(in), "no message removed")
	for i, m := range res.Messages {
		assert.Equal(t, in[i].Role, m.Role)
		assert.Equal(t, in[i].ToolCallID, m.ToolCallID)
		assert.Equal(t, in[i].ToolCalls, m.ToolCalls)
	}
	assert.Equal(t, KindElided, res.Messages[3].Kind)
	assert.Equal(t, "[elided tool result: read, 401 tokens; re-run the tool if needed]", res.Messages[3].Content)
	assert.Equal(t, in[9], res.Messages[9], "newest results protected")
	assert.Equal(t, Estimate(in, chars)-Estimate(res.Messages, chars), res.TokensSaved)

	again, err := ElideToolResults(res.Messages, ElideOptions{Counter: chars, KeepRecent: -1, MinTokens: -1})
	require.NoError(t, err)
	assert.Equal(t, 3, again.Elided, "only the three never-elided results are left to elide")
	assert.Equal(t, res.Messages[3], again.Messages[3], "an elided result is never elided again")
}

func TestElideToolResultsOptions(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Content: "q"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "read"}, {ID: "b", Name: "secret"}, {ID: "c", Name: "run"}, {ID: "d", Name: "read"}}},
		big("a", 500),
		big("b", 500),
		{Role: RoleTool, ToolCallID: "c", Content: "Error: exit status 1\n" + strings.Repeat("y", 500)},
		big("d", 100),
	}
	tests := []struct {
		name   string
		opts   ElideOptions
		elided []int
		why    string
	}{
		{"defaults", ElideOptions{Counter: chars, KeepRecent: -1}, []int{2, 3, 4}, "results of 256+ tokens"},
		{"min tokens", ElideOptions{Counter: chars, KeepRecent: -1, MinTokens: 50}, []int{2, 3, 4, 5}, "a lower threshold elides the small one too"},
		{"exclude", ElideOptions{Counter: chars, KeepRecent: -1, ExcludeTools: []string{"secret"}}, []int{2, 4}, "excluded tools keep their results"},
		{"keep errors", ElideOptions{Counter: chars, KeepRecent: -1, KeepErrors: true}, []int{2, 3}, "error-looking results are kept"},
		{"keep recent", ElideOptions{Counter: chars, KeepRecent: 2}, []int{2, 3}, "the two newest are protected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ElideToolResults(msgs, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.elided, ofKind(res.Messages, KindElided), tc.why)
		})
	}
	res, err := ElideToolResults(msgs, ElideOptions{Counter: chars, KeepRecent: -1,
		Placeholder: func(m Message, tokens int) string { return "gone" }})
	require.NoError(t, err)
	assert.Equal(t, "gone", res.Messages[2].Content)
}

func TestElideArchiveErrorChangesNothing(t *testing.T) {
	in := agentTask(6, 400)
	boom := errors.New("disk full")
	n := 0
	res, err := ElideToolResults(in, ElideOptions{Counter: chars, Archive: func(Message) error {
		n++
		if n == 2 {
			return boom
		}
		return nil
	}})
	require.ErrorIs(t, err, boom)
	assert.True(t, strings.HasPrefix(err.Error(), "history: "))
	assert.Equal(t, in, res.Messages)
	assert.Zero(t, res.Elided)

	tr, err := TrimToRecentTurns(in, 500, WithCounter(chars), WithElision(ElideOptions{Archive: func(Message) error { return boom }}))
	require.ErrorIs(t, err, boom, "an archive error aborts the trim")
	assert.Nil(t, tr.Messages)
}

func TestTrimWithElision(t *testing.T) {
	in := agentTask(6, 400) // total 2 + 4 + 1 + 12 + 6*402 + 5 = 2436
	total := Estimate(in, chars)
	var ev Event
	res, err := TrimToRecentTurns(in, total-500, WithCounter(chars), WithElision(ElideOptions{}),
		WithOnTrim(func(e Event) { ev = e }))
	require.NoError(t, err)
	assert.Equal(t, 2, res.ElidedResults)
	assert.Equal(t, []int{3, 5}, ofKind(res.Messages, KindElided), "oldest first, stopping as soon as it fits")
	assert.Zero(t, res.DroppedTurns, "no turn dropped when elision suffices")
	assert.True(t, res.Trimmed)
	assert.Equal(t, 2, ev.ElidedResults)
	assert.Equal(t, Estimate(res.Messages, chars), res.TokensAfter)
	checkResult(t, in, res, true)
}

func TestTrimElisionThenTurns(t *testing.T) {
	// Two tasks of four 401-token results. Even with every eligible result
	// elided (the newest one is protected) both tasks do not fit 900
	// tokens, so the first task goes, and results are elided only in the
	// task that stays, oldest first, as few as needed.
	first := agentTask(4, 400)
	second := agentTask(4, 400)[1:]
	in := append(first, second...)
	var archived []Message
	res, err := TrimToRecentTurns(in, 900, WithCounter(chars), WithElision(ElideOptions{
		KeepRecent: 1,
		Archive:    func(m Message) error { archived = append(archived, m); return nil },
	}))
	require.NoError(t, err)
	assert.Equal(t, 1, res.DroppedTurns)
	assert.Equal(t, 3, res.ElidedResults, "1680 tokens kept, 780 to save at about 330 a result")
	require.Len(t, archived, 3, "nothing archived for results dropped anyway")
	for i, m := range res.Messages {
		if m.Kind == KindElided {
			assert.Equal(t, in[res.Kept[i]], archived[0], "archived oldest first")
			archived = archived[1:]
		}
	}
	assert.LessOrEqual(t, res.TokensAfter, 900)
	checkResult(t, in, res, true)
}

func TestTrimStepTrim(t *testing.T) {
	in := agentTask(8, 100) // one user request, 8 steps and a final answer step
	var ev Event
	res, err := TrimToRecentTurns(in, 500, WithCounter(chars), WithStepTrim(), WithOnTrim(func(e Event) { ev = e }))
	require.NoError(t, err)
	got := render(res.Messages)
	assert.Equal(t, []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText}, got[:3], "opening kept, then the step breadcrumb")
	assert.Equal(t, "A:done", got[len(got)-1], "newest step kept")
	// 4 (sys) + 12 (task) + 64 (breadcrumb) + 5 (done) + 4 steps of 102 = 493.
	assert.Equal(t, 4, res.DroppedSteps)
	assert.Equal(t, 8, res.DroppedMessages)
	assert.Zero(t, res.DroppedTurns)
	assert.Equal(t, 4, ev.DroppedSteps)
	assert.LessOrEqual(t, res.TokensAfter, 500)
	checkResult(t, in, res, true)

	// Trimming again (after one more step) replaces the step breadcrumb.
	next := append(clone(res.Messages), callOf("z", "read"), big("z", 100))
	again, err := TrimToRecentTurns(next, 500, WithCounter(chars), WithStepTrim())
	require.NoError(t, err)
	assert.Len(t, ofKind(again.Messages, KindBreadcrumb), 1, "never stacked: %v", render(again.Messages))
	checkResult(t, next, again, true)
}

func TestStepBreadcrumbLocalised(t *testing.T) {
	in := agentTask(8, 100)
	res, err := TrimToRecentTurns(in, 500, WithCounter(chars), WithStepTrim(),
		WithStepBreadcrumb(Message{Role: RoleUser, Content: "[frühere Schritte ausgelassen]"}))
	require.NoError(t, err)
	assert.Equal(t, "B:[frühere Schritte ausgelassen]", render(res.Messages)[2])
	_, err = TrimToRecentTurns(in, 500, WithStepBreadcrumb(Message{Role: RoleTool}))
	assert.ErrorIs(t, err, ErrInvalidMessage)
}

func TestAssistantStepBreadcrumbIsReplaced(t *testing.T) {
	// A step notice in the assistant role, left by an earlier trim, belongs
	// to the opening block: the next trim replaces it, never counts it as a
	// step.
	crumb := WithStepBreadcrumb(Message{Role: RoleAssistant, Content: "[steps omitted]"})
	in := agentTask(8, 100)
	first, err := TrimToRecentTurns(in, 500, WithCounter(chars), WithStepTrim(), crumb)
	require.NoError(t, err)
	require.Equal(t, "B:[steps omitted]", render(first.Messages)[2])
	next := append(clone(first.Messages), callOf("z", "read"), big("z", 100))
	again, err := TrimToRecentTurns(next, 500, WithCounter(chars), WithStepTrim(), crumb)
	require.NoError(t, err)
	assert.Equal(t, "B:[steps omitted]", render(again.Messages)[2])
	assert.Equal(t, 1, again.DroppedSteps, "the old notice is replaced, not dropped as a step")
	assert.Equal(t, 2, again.DroppedMessages)
	checkResult(t, next, again, true)
}

func TestTrimStepTrimTooLarge(t *testing.T) {
	in := agentTask(3, 1000)
	in = in[:len(in)-1] // the newest step is a call with its 1000-byte result
	res, err := TrimToRecentTurns(in, 300, WithCounter(chars), WithStepTrim())
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, res.TokensAfter, be.Need)
	assert.Equal(t, []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>cc", "T:cc"}, render(res.Messages),
		"everything but the opening and the newest step went")
}

func TestTrimStepsKeepOpeningReasoning(t *testing.T) {
	// The first step of a tool loop carries the thinking that opened it
	// (Anthropic: "When `thinking` is enabled, a final `assistant` message
	// must start with a thinking block"); step trimming keeps it and drops
	// the steps after it.
	for _, tc := range []struct {
		name       string
		in         []Message
		budget     int
		want       []string
		dropped    int
		tooLarge   bool
		firstSteps int // reasoning on the first this many steps
	}{
		{
			name: "first step holds reasoning: kept, later steps dropped",
			in:   agentTask(8, 100), budget: 600, firstSteps: 1,
			want: []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>ca", "T:ca"}, dropped: 3,
		},
		{
			name: "every step holds reasoning (interleaved thinking): only the first is protected",
			in:   agentTask(8, 100), budget: 600, firstSteps: 9,
			want: []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>ca", "T:ca"}, dropped: 3,
		},
		{
			name: "a nudge after the first step's result opens a loop: the thinking step after it stays too",
			in: func() []Message {
				in := agentTask(8, 100)
				// After ca's result: a note from the runtime, then cb thinks.
				return append(in[:4:4], append([]Message{{Role: RoleUser, Kind: KindNudge, Content: "hurry"}}, in[4:]...)...)
			}(),
			budget: 700, firstSteps: 2,
			want:    []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>ca", "T:ca", "N:hurry", "A:>cb", "T:cb", "A:>cf"},
			dropped: 3,
		},
		{
			name: "a nudge opens the final loop with reasoning: the first step kept after the dropped ones holds reasoning",
			in: func() []Message {
				in := agentTask(8, 100)
				// ca does not think; after its result a note, then cb thinks,
				// and so does ce.
				in = append(in[:4:4], append([]Message{{Role: RoleUser, Kind: KindNudge, Content: "hurry"}}, in[4:]...)...)
				in[5], in[11] = think(in[5]), think(in[11])
				return in
			}(),
			budget:  600,
			want:    []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>ce"},
			dropped: 4, // ca, cb, cc, cd: cc alone after the breadcrumb would open the loop without thinking
		},
		{
			name: "a nudge opens the final loop with reasoning and no later step has any: the steps before it go, then it anchors the loop and the steps after it go",
			in: func() []Message {
				in := agentTask(8, 100)
				in = append(in[:4:4], append([]Message{{Role: RoleUser, Kind: KindNudge, Content: "hurry"}}, in[4:]...)...)
				in[5] = think(in[5])
				return in
			}(),
			budget:  600,
			want:    []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>cb", "T:cb", "A:>ce"},
			dropped: 3, // ca before the loop, then cc and cd after its anchor
		},
		{
			name: "no reasoning: the first step goes like any other",
			in:   agentTask(8, 100), budget: 600,
			want: []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>cd", "T:cd"}, dropped: 3,
		},
		{
			name: "first and newest step alone exceed the budget: too large, the first still kept",
			in:   agentTask(3, 1000)[:8], budget: 1500, firstSteps: 1, tooLarge: true,
			want: []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>ca", "T:ca", "A:>cc", "T:cc"}, dropped: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := clone(tc.in)
			seen := 0
			for i := range in {
				if in[i].Role == RoleAssistant && seen < tc.firstSteps {
					in[i] = think(in[i])
					seen++
				}
			}
			res, err := TrimToRecentTurns(in, tc.budget, WithCounter(chars), WithStepTrim())
			if tc.tooLarge {
				require.ErrorIs(t, err, ErrLatestTurnTooLarge)
			} else {
				require.NoError(t, err)
				assert.LessOrEqual(t, res.TokensAfter, tc.budget)
			}
			got := render(res.Messages)
			assert.Equal(t, tc.want, got[:len(tc.want)])
			assert.Equal(t, tc.dropped, res.DroppedSteps)
			checkResult(t, in, res, !tc.tooLarge)
		})
	}
}

func TestTrimStepsKeepPairs(t *testing.T) {
	// Parallel calls and a nudge between call and results: a step is whole.
	in := parse(t, "S:sys", "U:task", "A:>c1,c2", "N:hurry", "T:c2", "T:c1", "A:>c3", "T:c3", "A:>c4,c5", "T:c4", "T:c5", "A:final")
	for _, tc := range []struct {
		budget int
		want   []string
		reason string
	}{
		{60, []string{"S:sys", "U:task", "B:" + StepBreadcrumbText, "A:final"},
			"room for the newest step only: the parallel step before it goes with both results"},
		{80, []string{"S:sys", "U:task", "B:" + StepBreadcrumbText, "A:>c4,c5", "T:c4", "T:c5", "A:final"},
			"room for one more step: the parallel calls come back with both results"},
	} {
		res, err := TrimToRecentTurns(in, tc.budget, WithCounter(unit), WithStepTrim())
		require.NoError(t, err, tc.reason)
		assert.Equal(t, tc.want, render(res.Messages), tc.reason)
		checkResult(t, in, res, true)
	}
}

func TestSummaries(t *testing.T) {
	in := parse(t, "S:sys", "M:old summary", "U:q1", "A:a1", "M:newer summary", "U:q2", "A:a2", "U:q3", "A:a3")
	assert.Equal(t, []int{1, 4}, Summaries(in))
	assert.Nil(t, Summaries(parse(t, "U:q")))

	res, err := TrimToRecentTurns(in, 60, WithCounter(unit))
	require.NoError(t, err)
	assert.Equal(t, []string{"S:sys", "M:old summary", "M:newer summary", "B", "U:q3", "A:a3"}, render(res.Messages),
		"a summary in a dropped turn is pinned, not lost")
	assert.Equal(t, []int{0, 1, 4, -1, 7, 8}, res.Kept)
	assert.Equal(t, 4, res.DroppedMessages, "U:q1 A:a1 U:q2 A:a2; the summary is kept")
	checkResult(t, in, res, true)
}

func TestSummaryLargerThanBudget(t *testing.T) {
	in := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Kind: KindSummary, Content: "Summary of the conversation so far:\n" + strings.Repeat("s", 500)},
		{Role: RoleUser, Content: "q1"}, {Role: RoleAssistant, Content: "a1"},
		{Role: RoleUser, Content: "q2"},
	}
	res, err := TrimToRecentTurns(in, 200, WithCounter(chars))
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Greater(t, be.Pinned, be.Budget)
	assert.Contains(t, err.Error(), "pinned system messages and summaries alone need")
	got := render(res.Messages)
	assert.Equal(t, "U:q2", got[len(got)-1], "the latest turn is still kept")
	assert.Equal(t, KindSummary, res.Messages[1].Kind)
}

func TestRenderTranscript(t *testing.T) {
	msgs := parse(t, "S:be brief", "U:hello there", "A:hi! how can I help?", "U:list files", "A:>c1", "T:c1", "A:main.go and go.mod")
	full := RenderTranscript(msgs, 1000, RenderOptions{})
	assert.Equal(t, "system: be brief\nuser: hello there\nassistant: hi! how can I help?\nuser: list files\n"+
		"assistant: [called fn({\"id\":\"c1\"})]\ntool (c1): result of c1\nassistant: main.go and go.mod", full)

	tests := []struct {
		name   string
		max    int
		want   string
		reason string
	}{
		{"keeps the newest", 86, "[earlier conversation truncated]\ntool (c1): result of c1\nassistant: main.go and go.mod",
			"whole messages, newest first, after the marker"},
		{"cuts at a word", 80, "[earlier conversation truncated]\nresult of c1\nassistant: main.go and go.mod",
			"a message cut at its start loses whole words"},
		{"cuts the newest at a word", 60, "[earlier conversation truncated]\nmain.go and go.mod",
			"even the newest message is cut when it alone does not fit"},
		{"marker never alone", 20, "main.go and go.mod",
			"no room for the marker and content: the content wins"},
		{"tiny", 3, "mod", "a limit below a word still returns the newest characters"},
		{"zero", 0, "", "no room at all"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderTranscript(msgs, tc.max, RenderOptions{})
			assert.Equal(t, tc.want, got, tc.reason)
			assert.LessOrEqual(t, utf8.RuneCountInString(got), max(tc.max, 0))
		})
	}
}

func TestRenderTranscriptSummary(t *testing.T) {
	msgs := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Kind: KindSummary, Content: "we fixed the parser"},
		{Role: RoleUser, Content: "now the lexer"}, {Role: RoleAssistant, Content: "on it"},
	}
	got := RenderTranscript(msgs, 100, RenderOptions{})
	assert.Equal(t, "system: sys\nsummary: we fixed the parser\nuser: now the lexer\nassistant: on it", got, "fits: original order")
	got = RenderTranscript(msgs, 70, RenderOptions{})
	assert.Equal(t, "summary: we fixed the parser\n[earlier conversation truncated]\non it", got)

	long := []Message{{Role: RoleUser, Kind: KindSummary, Content: strings.Repeat("summary ", 50)},
		{Role: RoleUser, Content: "latest question here"}}
	got = RenderTranscript(long, 100, RenderOptions{Marker: "[...]"})
	assert.LessOrEqual(t, utf8.RuneCountInString(got), 100)
	assert.True(t, strings.HasPrefix(got, "summary: summary"), got)
	assert.True(t, strings.HasSuffix(got, "latest question here"), "the newest text keeps a share: %q", got)
	assert.Contains(t, got, "[...]")
}

func TestRenderTranscriptGraphemes(t *testing.T) {
	// e + combining acute, a family emoji (a ZWJ sequence), two flags: a cut
	// may fall only between these clusters, never inside one.
	clusters := []string{"c", "a", "f", "e\u0301", " ", "👨\u200d👩\u200d👧", " ", "🇫🇷", "🇩🇪", " ", "d", "o", "n", "e"}
	text := strings.Join(clusters, "")
	whole := make(map[string]bool, len(clusters)) // every suffix that starts a cluster
	for i := range clusters {
		whole[strings.Join(clusters[i:], "")] = true
	}
	msgs := []Message{{Role: RoleUser, Content: text}}
	format := RenderOptions{Format: func(m Message) string { return m.Content }}
	for n := 1; n <= utf8.RuneCountInString(DefaultRenderMarker+"\n"+text)+2; n++ {
		got := RenderTranscript(msgs, n, format)
		require.True(t, utf8.ValidString(got))
		require.LessOrEqual(t, utf8.RuneCountInString(got), n)
		kept := strings.TrimPrefix(got, DefaultRenderMarker+"\n")
		assert.True(t, whole[kept], "cut inside a character at %d: %q", n, got)
	}
}

func FuzzRenderTranscript(f *testing.F) {
	f.Add("hello world", "summary text", 20, uint8(3))
	f.Add("cafe\u0301 👨\u200d👩\u200d👧", "", 5, uint8(1))
	f.Add(strings.Repeat("ab ", 40), strings.Repeat("s", 90), 50, uint8(4))
	f.Fuzz(func(t *testing.T, text, summary string, maxChars int, n uint8) {
		var msgs []Message
		if summary != "" {
			msgs = append(msgs, Message{Role: RoleUser, Kind: KindSummary, Content: summary})
		}
		for i := range int(n % 8) {
			msgs = append(msgs, Message{Role: []Role{RoleUser, RoleAssistant}[i%2], Content: text})
		}
		maxChars %= 500
		got := RenderTranscript(msgs, maxChars, RenderOptions{})
		if utf8.RuneCountInString(got) > max(maxChars, 0) {
			t.Fatalf("%d runes > %d", utf8.RuneCountInString(got), maxChars)
		}
		if utf8.ValidString(text) && utf8.ValidString(summary) && !utf8.ValidString(got) {
			t.Fatalf("split a UTF-8 sequence: %q", got)
		}
		if got == DefaultRenderMarker || strings.TrimSpace(strings.ReplaceAll(got, DefaultRenderMarker, "")) == "" && strings.Contains(got, DefaultRenderMarker) {
			t.Fatalf("marker without content: %q", got)
		}
	})
}

// FuzzLadder checks the degradation ladder's invariants on random agent
// histories: elision never removes or reorders a message, a second pass
// elides nothing new, steps stay whole (no orphans), and the error is
// returned only when the opening and the newest step alone do not fit.
// With keep&8 set, calls carry large arguments and ClearArguments clears
// them: only arguments change, never in a message holding reasoning, the
// saving is exact, and a second pass clears nothing. With keep&64 set,
// elided results keep digests and the cut rung is on: a result that does
// not fit is cut (never a user message, a pin or reasoning), and a
// too-large error means nothing more can be cut or cleared.
func FuzzLadder(f *testing.F) {
	f.Add([]byte{0, 9, 1, 3, 4, 2, 11, 0, 4, 5, 11, 7, 4, 1, 11, 3}, uint16(60), uint8(2))
	f.Add([]byte{0, 0, 1, 1, 4, 3, 6, 1, 6, 2, 4, 3, 11, 3, 4, 0, 11, 0}, uint16(25), uint8(0))
	f.Add([]byte{0, 9, 1, 3, 4, 2, 11, 0, 4, 4, 11, 7, 4, 1, 11, 3, 4, 8, 6, 2, 6, 4}, uint16(120), uint8(8+1))
	f.Add([]byte{0, 9, 1, 3, 4, 2, 11, 200, 4, 5, 11, 7, 4, 1, 11, 230, 4, 8, 6, 2, 6, 4}, uint16(40), uint8(64+8+2))
	f.Add([]byte{1, 3, 4, 4, 11, 250, 4, 6, 11, 250, 4, 9, 6, 240}, uint16(30), uint8(64+1))
	f.Fuzz(func(t *testing.T, data []byte, budget16 uint16, keep uint8) {
		clearArgs := keep&8 != 0
		msgs := genHistoryArgs(data, clearArgs)
		budget := int(budget16%500) + 1
		eo := ElideOptions{KeepRecent: int(keep%4) - 1, MinTokens: -1}
		if clearArgs {
			eo.ClearArguments = int(keep/16%4)*10 + 1
		}
		cut := keep&64 != 0
		if cut {
			eo.Digest, eo.Cut = int(keep/16%4)*3+2, true
		}

		el, err := ElideToolResults(msgs, eo)
		if err != nil {
			t.Fatal(err)
		}
		if len(el.Messages) != len(msgs) {
			t.Fatal("elision removed a message")
		}
		cleared := 0
		for i := range msgs {
			a, b := msgs[i], el.Messages[i]
			if a.Role != b.Role || a.ToolCallID != b.ToolCallID || a.Name != b.Name || len(a.ToolCalls) != len(b.ToolCalls) {
				t.Fatalf("elision changed message %d beyond its content", i)
			}
			for j := range a.ToolCalls {
				x, y := a.ToolCalls[j], b.ToolCalls[j]
				if x.ID != y.ID || x.Name != y.Name || (x.Arguments != y.Arguments && (!clearArgs || hasReasoning(a) || !isClearedArguments(y.Arguments))) {
					t.Fatalf("elision changed call %d of message %d: %+v -> %+v", j, i, x, y)
				}
				if x.Arguments != y.Arguments {
					cleared++
				}
			}
		}
		if cleared != el.ClearedCalls || el.TokensSaved != Estimate(msgs, nil)-Estimate(el.Messages, nil) {
			t.Fatalf("ClearedCalls %d (counted %d), TokensSaved %d (counted %d)", el.ClearedCalls, cleared,
				el.TokensSaved, Estimate(msgs, nil)-Estimate(el.Messages, nil))
		}
		again, err := ElideToolResults(el.Messages, eo)
		if err != nil || again.Elided != 0 || again.ClearedCalls != 0 {
			t.Fatalf("elision not idempotent: %d more, %d calls cleared, %v", again.Elided, again.ClearedCalls, err)
		}

		orig := clone(msgs)
		res, err := TrimToRecentTurns(msgs, budget, WithElision(eo), WithStepTrim())
		if err != nil && !isTooLarge(err) {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(orig, msgs) {
			t.Fatal("input modified")
		}
		checkResult(t, msgs, res, true)
		if got := Estimate(res.Messages, nil); got != res.TokensAfter {
			t.Fatalf("TokensAfter %d, recount %d", res.TokensAfter, got)
		}
		if err == nil && res.TokensAfter > budget {
			t.Fatalf("over budget without error")
		}
		if res.DroppedSteps > 0 {
			if first, ok := openingReasoning(msgs); ok && !slices.ContainsFunc(res.Messages, func(m Message) bool { return reflect.DeepEqual(m, first) }) {
				t.Fatalf("steps dropped and with them the reasoning that opened the tool loop: %v", render(res.Messages))
			}
		}
		if cut {
			checkCut(t, msgs, res, err, budget, eo)
		}
	})
}

// checkCut checks a trim of in with the cut rung (eo.Cut): only tool
// results and the arguments of calls change, never a message holding
// reasoning; the output trimmed again comes back unchanged; and a
// too-large error leaves nothing to cut: every result sent whole would
// cost no less as a cut marker, and every call that may be cleared is.
func checkCut(t *testing.T, in []Message, res Result, err error, budget int, eo ElideOptions) {
	t.Helper()
	swept, _ := SweepOrphans(in)
	_ = swept
	for j, k := range res.Kept {
		if k < 0 {
			continue
		}
		a, b := in[k], res.Messages[j]
		switch {
		case a.Role == RoleTool:
		case hasReasoning(a) || a.Role != RoleAssistant:
			if len(b.ToolCalls) == len(a.ToolCalls) && !reflect.DeepEqual(a, b) {
				t.Fatalf("message %d changed: %+v -> %+v", k, a, b)
			}
		default:
			if a.Content != b.Content || !slices.Equal(a.Parts, b.Parts) {
				t.Fatalf("assistant message %d changed beyond its calls' arguments", k)
			}
		}
	}
	opts := []Option{WithElision(eo), WithStepTrim()}
	re, rerr := TrimToRecentTurns(res.Messages, budget, opts...)
	if (err == nil) != (rerr == nil) || !reflect.DeepEqual(render(re.Messages), render(res.Messages)) || re.TokensAfter != res.TokensAfter {
		t.Fatalf("cut: trimming the result again changed it (%v, %v):\n%v\n%v", err, rerr, render(res.Messages), render(re.Messages))
	}
	if err == nil {
		return
	}
	var ac argCounter
	c := Heuristic()
	for j, m := range res.Messages {
		switch {
		case m.Role == RoleTool && m.Kind != KindElided:
			bare := c.CountMessage(elided(m, cutMarker(m, "fn", c.CountMessage(m), eo.Store != nil)))
			if bare < c.CountMessage(m) && res.Kept[j] >= 0 {
				// The marker names the tool by its call; "fn" is every
				// generated call's name, so the count is the planner's.
				t.Fatalf("too large with result %d still whole (%d tokens, its marker %d)", res.Kept[j], c.CountMessage(m), bare)
			}
		case m.Role == RoleAssistant && !hasReasoning(m):
			for _, tc := range m.ToolCalls {
				cost := ac.text(c, tc.Arguments, &ac.empty, &ac.set)
				if !isClearedArguments(tc.Arguments) && cost > ac.text(c, clearedArguments(cost), &ac.empty, &ac.set) {
					t.Fatalf("too large with the arguments of call %s still there", tc.ID)
				}
			}
		}
	}
}

// openingReasoning returns the first step's assistant message of the latest
// turn of msgs (after the orphan sweep, as a trim sees it) when it holds
// reasoning.
func openingReasoning(msgs []Message) (Message, bool) {
	swept, _ := SweepOrphans(msgs)
	turns := Turns(swept)
	if len(turns) == 0 {
		return Message{}, false
	}
	last := turns[len(turns)-1]
	i := last.Start
	for i < last.End && !(swept[i].Role == RoleUser && swept[i].Kind == "") {
		i++
	}
	if i == last.End {
		i = last.Start
	}
	for ; i < last.End; i++ {
		if startsStep(swept[i]) {
			return swept[i], hasReasoning(swept[i])
		}
	}
	return Message{}, false
}

// TestTrimStepsLooseReasoning: for providers that bind reasoning to its own
// step only (Gemini, Responses), the adapters turn Anthropic's rule off,
// and the step whose reasoning opened the loop goes like any other.
func TestTrimStepsLooseReasoning(t *testing.T) {
	in := agentTask(8, 100)
	in[2] = think(in[2])
	loose := rules.LooseReasoning().(Option)
	for _, tc := range []struct {
		opts   []Option
		want   []string
		reason string
	}{
		{nil, []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>ca", "T:ca", "A:>ce"},
			"by default the reasoning that opened the loop is kept, with its step"},
		{[]Option{loose}, []string{"S:sys", "U:do the task", "B:" + StepBreadcrumbText, "A:>cd", "T:cd", "A:>ce"},
			"loose: the oldest steps go, reasoning or not"},
	} {
		res, err := TrimToRecentTurns(in, 600, append([]Option{WithCounter(chars), WithStepTrim()}, tc.opts...)...)
		require.NoError(t, err, tc.reason)
		got := render(res.Messages)
		assert.Equal(t, tc.want, got[:len(tc.want)], tc.reason)
		checkResult(t, in, res, true)
	}
}

// think returns m with a reasoning part: the thinking that opened a tool
// loop.
func think(m Message) Message {
	m.Parts = []Part{{Type: PartReasoning, Text: "plan the work"}}
	return m
}
