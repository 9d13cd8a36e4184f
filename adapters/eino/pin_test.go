package eino

import (
	"errors"
	"slices"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
)

// TestPinSurvivesEveryBudget: messages pinned with history.WithPin, by
// their index in the caller's slice, are in the output of Trim and of
// RecoverOverflow at every budget, as the caller's own pointers, whatever
// rungs of the ladder are on.
func TestPinSurvivesEveryBudget(t *testing.T) {
	in := agentTurns(8, 120)
	// A memory the runtime inserted in turn 2 and an answer of turn 4:
	// index 1+4*k is turn k's task, 4+4*k its answer.
	memory := &schema.Message{Role: schema.User, Content: "Remember: the user wants tabs.", Extra: map[string]any{KindKey: "nudge"}}
	in = slices.Insert(in, 1+4*2+1, memory)
	pinned := []int{1 + 4*2 + 1, 4 + 4*4 + 1}
	total := tokens(t, in)
	sets := map[string][]history.Option{
		"turns":  nil,
		"ladder": {history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
	}
	for name, set := range sets {
		opts := append(slices.Clone(set), history.WithPin(pinned...))
		for budget := 1; budget <= total+10; budget += 7 {
			out, res, err := Trim(in, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			checkPinned(t, name+" trim", budget, in, out, pinned)
			if err != nil || res.DroppedTurns == len(history.Turns(mustHistory(t, in)))-1 {
				continue
			}
			// The provider rejects what Trim sent: the pins, translated to
			// the positions of the output, survive the recovery too.
			var again []int
			for j, k := range res.Kept {
				if slices.Contains(pinned, k) {
					again = append(again, j)
				}
			}
			rec, _, err := RecoverOverflow(out, overflowErr(budget*2, budget), 1, append(slices.Clone(set), history.WithPin(again...))...)
			if err != nil && !errors.Is(err, history.ErrCannotRecover) {
				t.Fatalf("%s, budget %d: recover: %v", name, budget, err)
			}
			checkPinned(t, name+" recover", budget, in, rec, pinned)
		}
	}
}

func checkPinned(t *testing.T, what string, budget int, in, out []*schema.Message, pinned []int) {
	t.Helper()
	if err := Validate(out); err != nil {
		t.Fatalf("%s, budget %d: %v", what, budget, err)
	}
	for _, p := range pinned {
		if !slices.Contains(out, in[p]) {
			t.Fatalf("%s, budget %d: pinned message %d (%q) is gone", what, budget, p, in[p].Content)
		}
	}
	if out[len(out)-1] != in[len(in)-1] {
		t.Fatalf("%s, budget %d: the latest message is gone", what, budget)
	}
}

// TestPinRejected: a pin on a tool result, on a message with tool calls
// or outside the slice is the core's *history.OptionError, reported with
// the native index (one for one, the same).
func TestPinRejected(t *testing.T) {
	in := agentTurns(3, 100) // 1+4k task, 2+4k call, 3+4k result, 4+4k answer
	for _, idx := range []int{2, 3, len(in)} {
		_, _, err := Trim(in, 50, history.WithPin(idx))
		var oe *history.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, history.ErrInvalidOption) {
			t.Errorf("pin %d: got %v, want a *history.OptionError", idx, err)
		}
	}
}

func mustHistory(t *testing.T, msgs []*schema.Message) []history.Message {
	t.Helper()
	h, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
