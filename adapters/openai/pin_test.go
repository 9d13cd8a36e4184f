package openai

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
)

// pinnedAgent returns an agent conversation with a developer instruction
// given mid-conversation after an assistant note, and the indices to pin:
// the note, the instruction and the first task (when the seed makes one).
func pinnedAgent(seed []byte) (conversation, []int) {
	msgs := genAgent(seed)
	mid := len(msgs) / 2
	for mid < len(msgs) && msgs[mid].OfUser == nil {
		mid++ // before a task, so that no tool exchange is split
	}
	msgs = slices.Insert(msgs, mid,
		openai.AssistantMessage("Noted: staging is read-only, I will use the fixtures."),
		openai.DeveloperMessage("Remember: the staging database is read-only."))
	pins := []int{mid, mid + 1}
	for i, m := range msgs {
		if m.OfUser != nil {
			pins = append(pins, i)
			break
		}
	}
	return msgs, pins
}

// TestPinSurvivesEveryBudget: native indices pin the caller's messages
// (one history message per native message, so WithPin passes through):
// each pinned message is in the output, as the caller's value, at every
// budget and with every rung of the ladder, and the output is valid and
// converts back to the Result.
func TestPinSurvivesEveryBudget(t *testing.T) {
	for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 4) {
		msgs, pins := pinnedAgent(seed)
		sets := append(adapter.LadderOptions(), nil)
		for o := range sets {
			sets[o] = append(slices.Clip(sets[o]), history.WithPin(pins...))
		}
		adaptertest.Sweep(t, seed, adapter.Tokens(t, msgs), sets, func(t *testing.T, budget int, opts []history.Option) {
			out, res, err := adapter.Trimmed(t, msgs, budget, opts...)
			for _, p := range pins {
				j := slices.Index(res.Kept, p)
				if j < 0 {
					t.Fatalf("budget %d (%v): pinned message %d dropped; kept %v", budget, err, p, res.Kept)
				}
				if adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, msgs[p]) {
					t.Fatalf("budget %d: pinned message %d is not the caller's: %s", budget, p, adaptertest.JSON(t, out[j]))
				}
			}
			assertRebuilt(t, out, res, opts)
		})
	}
}

// TestPinErrors: the core refuses a pin that would separate a tool call
// from its result, and the native index it names is the caller's.
func TestPinErrors(t *testing.T) {
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("sys"),
		openai.UserMessage("task"),
		assistantCalls("", functionCall("c1", "read", "{}")),
		openai.ToolMessage("result", "c1"),
		legacyAssistant("", "lookup", "{}"),
		legacyResult("lookup", "legacy result"),
		openai.AssistantMessage("done"),
		openai.UserMessage(history.BreadcrumbText),
		openai.UserMessage("next"),
	}
	tests := []struct {
		pin  int
		want string // in the reason
	}{
		{2, "message 2 has tool calls"},
		{3, "message 3 is a tool result"},
		{4, "message 4 has tool calls"},
		{5, "message 5 is a tool result"},
		{9, "index 9 is outside the history of 9 messages"},
		{-1, "index -1 is negative"},
	}
	for _, tc := range tests {
		for name, call := range map[string]func() ([]openai.ChatCompletionMessageParamUnion, error){
			"Trim": func() ([]openai.ChatCompletionMessageParamUnion, error) {
				out, _, err := Trim(msgs, 10, history.WithPin(tc.pin))
				return out, err
			},
			"RecoverOverflow": func() ([]openai.ChatCompletionMessageParamUnion, error) {
				out, _, err := RecoverOverflow(msgs, errors.New(overflowBody(100, 120)), 1, history.WithPin(tc.pin))
				return out, err
			},
		} {
			out, err := call()
			var oe *history.OptionError
			if !errors.As(err, &oe) || !errors.Is(err, history.ErrInvalidOption) || oe.Option != "WithPin" || !strings.Contains(oe.Reason, tc.want) {
				t.Errorf("%s, pin %d: error %v, want a WithPin *history.OptionError saying %q", name, tc.pin, err, tc.want)
			}
			if out != nil {
				t.Errorf("%s, pin %d: output on an option error", name, tc.pin)
			}
		}
	}
	// Pinnable: the system prompt, the task, the answer. The turn notice
	// where trims put it is marked as a notice (the core replaces it); a
	// user message with its text after a turn is a task like any other.
	for _, p := range []int{0, 1, 6, 7} {
		if _, _, err := Trim(msgs, 1000, history.WithPin(p)); err != nil {
			t.Errorf("pin %d: %v", p, err)
		}
	}
}

// TestPinRepeatedTrim: a runtime that adopts each output and pins its
// instruction again at its new position (found with Result.Kept) keeps it
// through trims that drop more and more, and notices never stack.
func TestPinRepeatedTrim(t *testing.T) {
	msgs := agentTurns(8, 150)
	msgs = slices.Insert(msgs, 5, openai.DeveloperMessage("Remember: answer in French."))
	pin := 5
	for budget := adapter.Tokens(t, msgs) - 50; budget > 300; budget -= 250 {
		out, res, err := Trim(msgs, budget, history.WithPin(pin), history.WithElision(history.ElideOptions{}), history.WithStepTrim())
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		j := slices.Index(res.Kept, pin)
		if j < 0 {
			t.Fatalf("budget %d: the pinned instruction was dropped", budget)
		}
		notices := 0
		for _, m := range out {
			if m.OfUser != nil && m.OfUser.Content.OfString.Value == history.BreadcrumbText {
				notices++
			}
		}
		if notices > 1 {
			t.Fatalf("budget %d: %d turn notices", budget, notices)
		}
		msgs, pin = out, j
	}
	if pin != 1 {
		t.Fatalf("the instruction ends at %d, want 1: lifted out of its dropped turn, after the system prompt", pin)
	}
}
