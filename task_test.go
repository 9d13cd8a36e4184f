package history

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUserWritten(t *testing.T) {
	tests := []struct {
		m      Message
		want   bool
		reason string
	}{
		{Message{Role: RoleUser, Content: "Fix the failing test"}, true, "a request"},
		{Message{Role: RoleUser, Content: "<system-reminder>\nThe user changed a file.\n</system-reminder>"}, false, "a system reminder"},
		{Message{Role: RoleUser, Content: "<system-reminder>a</system-reminder>\n<system-reminder>b</system-reminder>"}, false, "two reminders"},
		{Message{Role: RoleUser, Content: "<system-reminder>a</system-reminder>\nNow fix it please"}, true, "a reminder prepended to the user's words"},
		{Message{Role: RoleUser, Content: "<system-reminder>never closed"}, false, "an unclosed reminder"},
		{Message{Role: RoleUser, Content: "<task-notification>\n<task-id>b0be39e</task-id>"}, false, "a task notification"},
		{Message{Role: RoleUser, Content: "[Request interrupted by user]"}, false, "an interrupt marker"},
		{Message{Role: RoleUser, Content: "[Request interrupted by user for tool use]"}, false, "an interrupt marker during a tool call"},
		{Message{Role: RoleUser, Content: "<local-command-stdout>Reconnected.</local-command-stdout>"}, false, "a local command's output"},
		{Message{Role: RoleUser, Content: "<local-command-caveat>Caveat: ...</local-command-caveat>"}, false, "a local command's caveat"},
		{Message{Role: RoleUser, Content: "<bash-stdout>ok</bash-stdout>"}, false, "a shell command's output"},
		{Message{Role: RoleUser, Content: "[Tool results]\nok"}, false, "tool results as user text"},
		{Message{Role: RoleUser, Content: "ls output\n(Open file: n/a)\n(Current directory: /repo)\nbash-$"}, false, "a SWE-agent observation"},
		{Message{Role: RoleUser, Content: "I saw (Current directory: /repo) in the log"}, true, "the footer's words in prose"},
		{Message{Role: RoleUser, Parts: []Part{{Type: PartText, Text: "<task-notification>x"}}}, false, "the form in the first text part"},
		{Message{Role: RoleUser, Content: "  \n<task-notification>x"}, false, "leading white space"},
		{Message{Role: RoleUser, Content: "<command-name>/compact</command-name>"}, true, "a slash command the user typed"},
		{Message{Role: RoleUser, Content: "x", Kind: KindNudge}, false, "a nudge"},
		{Message{Role: RoleAssistant, Content: "x"}, false, "not a user message"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, UserWritten(tc.m), tc.reason)
	}
}

func TestUserWrittenTurns(t *testing.T) {
	// The last user message is a task notification: with the rule, the
	// real request stays the latest turn's opening, and step trimming
	// keeps it.
	msgs := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "Implement the feature"},
		readCall("a", "/a"), bigResult("a", 100),
		readCall("b", "/b"), bigResult("b", 30),
		{Role: RoleUser, Content: "<task-notification>\n<task-id>1</task-id>\n</task-notification>"},
	}
	assert.Len(t, Turns(msgs), 2, "by default the notification is a turn")
	assert.Len(t, Turns(msgs, WithTurnStart(UserWritten)), 1)
	budget := Estimate(msgs, nil) - Estimate(msgs[2:4], nil) + 20 // room for all but the first step
	res, err := TrimToRecentTurns(msgs, budget, WithTurnStart(UserWritten), WithStepTrim())
	require.NoError(t, err)
	assert.Equal(t, "Implement the feature", res.Messages[1].Content)
	assert.Equal(t, 1, res.DroppedSteps)
	def, _ := TrimToRecentTurns(msgs, budget, WithStepTrim())
	for _, m := range def.Messages {
		assert.NotEqual(t, "Implement the feature", m.Content, "without the rule the request is dropped with its turn")
	}
}

func TestWithTask(t *testing.T) {
	msgs := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "The task: migrate the config loader"},
		readCall("a", "/a"), bigResult("a", 100),
		{Role: RoleAssistant, Content: "Done with step one."},
		{Role: RoleUser, Content: "continue"},
		readCall("b", "/b"), bigResult("b", 100),
		readCall("c", "/c"), bigResult("c", 100),
	}
	budget := Estimate(msgs[5:], nil) + 60
	res, err := TrimToRecentTurns(msgs, budget, WithTask(1, ElideOptions{}))
	require.NoError(t, err)
	assert.Equal(t, 1, res.DroppedTurns)
	assert.Equal(t, []int{0, -1, 1}, res.Kept[:3], "the goal is lifted after the breadcrumb")
	assert.Equal(t, "The task: migrate the config loader", res.Messages[2].Content)
	assert.LessOrEqual(t, res.TokensAfter, budget)

	// It composes with WithPin, in either order.
	for _, opts := range [][]Option{{WithPin(4), WithTask(1, ElideOptions{})}, {WithTask(1, ElideOptions{}), WithPin(4)}} {
		res, err := TrimToRecentTurns(msgs, budget+40, opts...)
		require.NoError(t, err)
		assert.Equal(t, []int{2, 3}, res.Positions(1, 4), "both pins kept, after the breadcrumb")
	}
	// -1: no goal.
	res, err = TrimToRecentTurns(msgs, budget, WithTask(-1, ElideOptions{}))
	require.NoError(t, err)
	assert.Equal(t, -1, res.Positions(1)[0])

	// A goal that cannot be pinned is an option error, as WithPin's.
	_, err = TrimToRecentTurns(msgs, budget, WithTask(3, ElideOptions{}))
	var oe *OptionError
	require.True(t, errors.As(err, &oe), "%v", err)
	assert.Equal(t, "WithPin", oe.Option)
	_, err = TrimToRecentTurns(msgs, budget, WithTask(1, ElideOptions{ClearArguments: 8}), WithElision(ElideOptions{ClearArguments: -1}))
	require.ErrorIs(t, err, ErrInvalidOption, "a later WithElision replaces the preset's")

	// The preset's defaults: digests, cleared arguments, the cut rung.
	o := newOptions([]Option{WithTask(0, ElideOptions{})})
	defer o.release()
	assert.Equal(t, DefaultDigest, o.elide.Digest)
	assert.Equal(t, taskClearArguments, o.elide.ClearArguments)
	assert.True(t, o.elide.Cut && o.stepTrim && o.turnStart != nil)
	o2 := newOptions([]Option{WithTask(0, ElideOptions{Digest: -1, ClearArguments: -1})})
	defer o2.release()
	assert.Equal(t, 0, o2.elide.ClearArguments, "negative: none")
	assert.Equal(t, 0, o2.elide.digestSize(ToolPolicy{}), "negative: no digest")
}

// A user's own request that reads like an injected form ("[Tool result
// ...") is taken for one by UserWritten, so it does not open a turn; it
// must still never be dropped with the steps around it, at any budget:
// the model would go on with the old task.
func TestUserWrittenMisjudgedLatestRequest(t *testing.T) {
	request := "[Tool result of my script attached] Stop the migration; fix the login bug instead."
	msgs := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "The task: migrate the config loader"},
		readCall("a", "/a"), bigResult("a", 100),
		readCall("b", "/b"), bigResult("b", 100),
		{Role: RoleUser, Content: request},
		readCall("c", "/c"), bigResult("c", 100),
		readCall("d", "/d"), bigResult("d", 100),
		readCall("e", "/e"), bigResult("e", 100),
	}
	require.False(t, UserWritten(msgs[6]), "the rule misjudges it: that is the case")
	full := Estimate(msgs, nil)
	for _, opts := range [][]Option{
		{WithTask(-1, ElideOptions{})},
		{WithTask(1, ElideOptions{})},
		{WithTurnStart(UserWritten), WithStepTrim()},
	} {
		for budget := full; budget >= 40; budget -= 37 {
			res, err := TrimToRecentTurns(msgs, budget, opts...)
			if err != nil && !errors.Is(err, ErrLatestTurnTooLarge) {
				t.Fatalf("budget %d: %v", budget, err)
			}
			assert.Contains(t, res.Kept, 6, "budget %d: the latest request the user wrote is sent (kept %v)", budget, res.Kept)
			if at1, at6 := slices.Index(res.Kept, 1), slices.Index(res.Kept, 6); at1 >= 0 && at6 < at1 {
				t.Errorf("budget %d: the request comes before the turn it follows (kept %v)", budget, res.Kept)
			}
			if err == nil {
				again, err := TrimToRecentTurns(res.Messages, budget, opts...)
				require.NoError(t, err)
				assert.Equal(t, identity(len(res.Messages)), again.Kept, "budget %d: the output trims to itself", budget)
			}
		}
	}
}
