package responses

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
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
	return adapt.Overhead(c, adapt.JSONIf(len(params.Tools) > 0, params.Tools), params.Instructions.Value,
		adapt.JSONIf(!param.IsOmitted(params.Text), params.Text))
}
