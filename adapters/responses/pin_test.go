package responses

import (
	"errors"
	"testing"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3/responses"
)

func userItem(text string) Item {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

func assistantItem(text string) Item {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant)
}

// TestPins: a pinned item survives every budget; pins on tool calls,
// outputs and out-of-range indices are refused.
func TestPins(t *testing.T) {
	long := "an answer long enough to be worth dropping when the budget is small, repeated. "
	for range 4 {
		long += long
	}
	items := []Item{userItem("remember: the deploy key is in vault"), assistantItem("noted")}
	for i := range 6 {
		items = append(items, userItem("question "+string(rune('a'+i))), assistantItem(long))
	}
	pinned := items[0]
	total := 0
	if h, err := ToHistory(items); err == nil {
		total = history.Estimate(h, nil)
	}
	for budget := total; budget > 0; budget -= max(total/40, 1) {
		out, _, err := Trim(items, budget, history.WithPin(0))
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatalf("budget %d: %v", budget, err)
		}
		found := false
		for _, it := range out {
			if it.OfMessage != nil && it.OfMessage.Content.OfString.Value == pinned.OfMessage.Content.OfString.Value {
				found = true
			}
		}
		if !found {
			t.Fatalf("budget %d: the pinned item was dropped", budget)
		}
	}

	call := responses.ResponseInputItemParamOfFunctionCall(`{}`, "call_1", "lookup")
	output := responses.ResponseInputItemParamOfFunctionCallOutput("call_1", "result")
	withTools := []Item{userItem("q"), call, output, assistantItem("a")}
	for _, i := range []int{1, 2, 9} {
		_, _, err := Trim(withTools, 1000, history.WithPin(i))
		var oe *history.OptionError
		if !errors.As(err, &oe) || oe.Option != "WithPin" {
			t.Fatalf("pin %d: err = %v, want a WithPin *history.OptionError", i, err)
		}
	}
}
