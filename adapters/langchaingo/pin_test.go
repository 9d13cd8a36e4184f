package langchaingo

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
)

// pinned is a conversation whose first tool message holds three responses
// and a note (five history messages for one native one), so that native
// and converted indices differ after it, with messages worth pinning in
// old turns: a human note (7), an AI note (9) and a tool message holding
// only text (12).
func pinned() []llms.MessageContent {
	big := strings.Repeat("some output line\n", 40)
	return []llms.MessageContent{
		msg(llms.ChatMessageTypeSystem, txt("sys")),                                                               // 0
		msg(llms.ChatMessageTypeHuman, txt("task one "+big)),                                                      // 1
		msg(llms.ChatMessageTypeAI, call("a", "f", "{}"), call("b", "f", "{}"), call("c", "f", "{}")),             // 2
		msg(llms.ChatMessageTypeTool, resp("a", "f", big), resp("b", "f", big), txt("note"), resp("c", "f", big)), // 3
		msg(llms.ChatMessageTypeAI, txt("done one")),                                                              // 4
		msg(llms.ChatMessageTypeHuman, txt("task two "+big)),                                                      // 5
		msg(llms.ChatMessageTypeAI, txt("done two "+big)),                                                         // 6
		msg(llms.ChatMessageTypeHuman, txt("remember: deploy on Fridays is forbidden")),                           // 7
		msg(llms.ChatMessageTypeAI, txt("noted")),                                                                 // 8
		msg(llms.ChatMessageTypeAI, txt("plan: 1. read 2. fix 3. test")),                                          // 9
		msg(llms.ChatMessageTypeHuman, txt("task three "+big)),                                                    // 10
		msg(llms.ChatMessageTypeAI, call("d", "f", "{}")),                                                         // 11
		msg(llms.ChatMessageTypeTool, resp("d", "f", big)),                                                        // 12
		msg(llms.ChatMessageTypeTool, txt("reminder: keep it short")),                                             // 13
		msg(llms.ChatMessageTypeAI, txt("done three")),                                                            // 14
		msg(llms.ChatMessageTypeHuman, txt("task four")),                                                          // 15
		msg(llms.ChatMessageTypeAI, call("e", "f", "{}")),                                                         // 16
		msg(llms.ChatMessageTypeTool, resp("e", "f", big)),                                                        // 17
		msg(llms.ChatMessageTypeAI, txt("done four")),                                                             // 18
	}
}

// TestPinSurvivesEveryBudget: pinned native messages are in the output at
// every budget, as the caller's values, with every option set of the
// ladder.
func TestPinSurvivesEveryBudget(t *testing.T) {
	in := pinned()
	pins := []int{7, 9, 13}
	total := tokens(t, in)
	sets := append(adapter.LadderOptions(), nil)
	for o, opts := range sets {
		for _, budget := range adaptertest.Budgets(total, 40) {
			opts := append(slices.Clone(opts), history.WithPin(pins...))
			out, res, err := Trim(in, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("options %d, budget %d: %v", o, budget, err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("options %d, budget %d: %v", o, budget, err)
			}
			for _, i := range pins {
				if !slices.ContainsFunc(out, func(m llms.MessageContent) bool { return adaptertest.SameArray(m.Parts, in[i].Parts) }) {
					t.Fatalf("options %d, budget %d: pinned message %d is gone (%d dropped turns)", o, budget, i, res.DroppedTurns)
				}
			}
			if budget < total/3 && res.DroppedTurns == 0 {
				t.Fatalf("options %d, budget %d: nothing dropped", o, budget)
			}
		}
	}
}

func TestPinErrors(t *testing.T) {
	in := pinned()
	notice := append([]llms.MessageContent{in[0], msg(llms.ChatMessageTypeHuman, txt(history.BreadcrumbText))}, in[5:]...)
	tests := []struct {
		name   string
		in     []llms.MessageContent
		pins   []int
		reason string // in the error
	}{
		{"tool message with responses", in, []int{3}, "message 3 is a tool result"},
		{"single response", in, []int{7, 12}, "message 12 is a tool result"},
		{"AI message with calls", in, []int{11}, "message 11 has tool calls"},
		{"outside", in, []int{19}, "index 19 is outside the history of 19 messages"},
		{"notice", notice, []int{1}, "message 1 is a notice"},
		{"negative", in, []int{-1}, "index -1 is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []func() error{
				func() error { _, _, err := Trim(tc.in, 100, history.WithPin(tc.pins...)); return err },
				func() error {
					_, _, err := RecoverOverflow(tc.in, overflowErr(10, 20), 1, history.WithPin(tc.pins...))
					return err
				},
			} {
				err := f()
				var oe *history.OptionError
				if !errors.Is(err, history.ErrInvalidOption) || !errors.As(err, &oe) || oe.Option != "WithPin" || !strings.Contains(oe.Reason, tc.reason) {
					t.Errorf("err = %v, want a WithPin *OptionError saying %q", err, tc.reason)
				}
			}
		})
	}
}
