package anthropic

import (
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// pinRequest is a request whose native indices differ from the converted
// history's: the system prompt comes first there, and message 2 holds two
// tool results and a text block (three history messages).
func pinRequest() ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	big := strings.Repeat("lorem ipsum dolor sit amet ", 60)
	system := []anthropic.TextBlockParam{{Text: "You are an agent."}, {Text: "Be brief."}}
	return system, []anthropic.MessageParam{
		user(text("task 1: " + big)),                                             // 0
		assistant(toolUse("c1", "read"), toolUse("c2", "read")),                  // 1
		user(result("c1", big), result("c2", big), text("continue")),             // 2
		assistant(text("done 1: " + big)),                                        // 3
		user(text("remember: the deploy key lives in vault/ci")),                 // 4
		assistant(text("noted")),                                                 // 5
		user(text("task 2: " + big)),                                             // 6
		assistant(toolUse("c3", "grep")),                                         // 7
		user(result("c3", big)),                                                  // 8
		assistant(text("done 2: " + big)),                                        // 9
		user(text("task 3: what now?")),                                          // 10
		assistant(anthropic.NewThinkingBlock("sig", "hm"), toolUse("c4", "run")), // 11
		user(result("c4", big)),                                                  // 12
	}
}

// TestTrimPins: a pinned native message is sent, as the caller's own
// value, at every budget and with every rung of the ladder, though its
// index in the converted history differs from its index in msgs.
func TestTrimPins(t *testing.T) {
	system, msgs := pinRequest()
	hist, err := ToHistory(system, msgs)
	if err != nil {
		t.Fatal(err)
	}
	total := history.Estimate(hist, nil)
	tests := []struct {
		name   string
		system []anthropic.TextBlockParam
		pins   []int
	}{
		{"a memory after a message of three results", system, []int{4}},
		{"the first task", system, []int{0}},
		{"an assistant's text and a memory", system, []int{3, 4}},
		{"no system prompt", nil, []int{4, 9}},
		{"the latest task", system, []int{10}},
	}
	sets := [][]history.Option{
		nil,
		{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, set := range sets {
				for _, budget := range adaptertest.Budgets(total, 30) {
					opts := append([]history.Option{history.WithPin(tc.pins...)}, set...)
					out, res, err := Trim(tc.system, msgs, budget, opts...)
					if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
						t.Fatalf("budget %d: %v", budget, err)
					}
					if err := Validate(out); err != nil {
						t.Fatalf("budget %d: %v", budget, err)
					}
					for _, p := range tc.pins {
						if !adaptertest.Subsequence(msgs[p:p+1], out, adaptertest.SameJSON) {
							t.Fatalf("budget %d (options %d): pinned message %d was not sent (%d of %d messages, %d turns dropped)",
								budget, len(set), p, len(out), len(msgs), res.DroppedTurns)
						}
					}
				}
			}
		})
	}
}

// TestTrimPinsDropped: at a small budget the turns of the pinned messages
// go, and the pinned messages are lifted after the notice, in order, so
// that the notice stays in the leading block.
func TestTrimPinsDropped(t *testing.T) {
	system, msgs := pinRequest()
	out, res, err := Trim(system, msgs, 900, history.WithPin(0, 4))
	if err != nil {
		t.Fatal(err)
	}
	if res.DroppedTurns == 0 {
		t.Fatal("nothing dropped: the budget does not test lifting")
	}
	want := []anthropic.MessageParam{fromBreadcrumb(history.Breadcrumb()), msgs[0], msgs[4]}
	for j, m := range want {
		if adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, m) {
			t.Fatalf("message %d is %s, want %s", j, adaptertest.JSON(t, out[j]), adaptertest.JSON(t, m))
		}
	}
}

func TestTrimPinErrors(t *testing.T) {
	system, msgs := pinRequest()
	notice := append([]anthropic.MessageParam{fromBreadcrumb(history.Breadcrumb())}, msgs[10:]...)
	tests := []struct {
		name   string
		msgs   []anthropic.MessageParam
		pin    int
		reason string // in the OptionError's reason
	}{
		{"tool results", msgs, 2, "message 2 is a tool result"},
		{"tool calls", msgs, 1, "message 1 has tool calls"},
		{"thinking and a tool call", msgs, 11, "message 11 has tool calls"},
		{"a single tool result", msgs, 12, "message 12 is a tool result"},
		{"outside", msgs, 13, "index 13 is outside the history of 13 messages"},
		{"negative", msgs, -1, "index -1 is negative"},
		{"a notice", notice, 0, "message 0 is a notice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := map[string]func() ([]anthropic.MessageParam, error){
				"Trim": func() ([]anthropic.MessageParam, error) {
					out, _, err := Trim(system, tc.msgs, 1_000, history.WithPin(tc.pin))
					return out, err
				},
				"RecoverOverflow": func() ([]anthropic.MessageParam, error) {
					out, _, err := RecoverOverflow(system, tc.msgs, overflowErr(9_000, 8_000), 1, history.WithPin(tc.pin))
					return out, err
				},
			}
			for name, call := range calls {
				out, err := call()
				var oe *history.OptionError
				if !errors.As(err, &oe) || !errors.Is(err, history.ErrInvalidOption) || oe.Option != "WithPin" || !strings.Contains(oe.Reason, tc.reason) {
					t.Fatalf("%s: got %v, want an *history.OptionError for WithPin saying %q", name, err, tc.reason)
				}
				if out != nil {
					t.Errorf("%s: got %d messages with the error, want none", name, len(out))
				}
			}
		})
	}
}
