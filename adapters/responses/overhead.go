package responses

import (
	"encoding/json"
	"math"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// Overhead returns what params sends besides its input items, in c's
// tokens (nil: [history.Heuristic]): the tool definitions (Tools), the
// instructions (Instructions, a system prompt held outside the input) and
// the text format with its JSON schema (Text). Each that is set is encoded
// to JSON as the SDK sends it and counted as the text of one system
// message, framing included. Pass it to every trim of the request's items
// with [history.WithOverhead], so that the items get the budget less what
// the request needs around them, and Result.TokensAfter counts the whole
// request (what [history.Calibration.Observe] takes):
//
//	opts := []history.Option{history.WithOverhead(hresponses.Overhead(params, nil))}
//
// params.Input is not read: Trim counts it. The result is never negative
// and saturates at math.MaxInt; a part that does not encode, or is null,
// counts 0. Overhead never modifies params.
func Overhead(params responses.ResponseNewParams, c history.Counter) int {
	if c == nil {
		c = history.Heuristic()
	}
	total := 0
	add := func(text string) {
		n := max(c.CountMessage(history.Message{Role: history.RoleSystem, Content: text}), 0)
		if n > math.MaxInt-total {
			total = math.MaxInt
			return
		}
		total += n
	}
	addJSON := func(v any) {
		raw, err := json.Marshal(v)
		if err != nil || string(raw) == "null" || string(raw) == "{}" {
			return
		}
		add(string(raw))
	}
	if len(params.Tools) > 0 {
		addJSON(params.Tools)
	}
	if params.Instructions.Valid() {
		add(params.Instructions.Value)
	}
	if !param.IsOmitted(params.Text) {
		addJSON(params.Text)
	}
	return total
}
