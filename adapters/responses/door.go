package responses

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/openai/openai-go/v3/responses"
)

// door is what the door reads of a Responses request and writes back (see
// Trimmer.Fit): the model, max_output_tokens, the overhead Overhead
// counts, the input items and which reasoning items the API reads back
// (TrimRequest's *ChainedError for a request chained onto server-held
// state); and the usage's input_tokens.
var door = &adapt.Door[responses.ResponseNewParams, responses.ResponseUsage, reasoningContext, Item]{
	Read: func(p responses.ResponseNewParams) adapt.Request[reasoningContext, Item] {
		rc, err := readContext(&p)
		return adapt.Request[reasoningContext, Item]{
			Model: string(p.Model), Output: int(min(max(p.MaxOutputTokens.Value, 0), 1<<31-1)),
			System: rc, Messages: p.Input.OfInputItemList, Err: err,
			Overhead: func(c history.Counter) int { return Overhead(p, c) },
		}
	},
	Write: func(p responses.ResponseNewParams, items []Item, _ []history.Option) responses.ResponseNewParams {
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
		return p
	},
	Usage: func(u responses.ResponseUsage) int { return int(min(max(u.InputTokens, 0), 1<<31-1)) },
}
