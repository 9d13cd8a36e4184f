package eino

import (
	"context"
	"errors"
	"slices"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
)

// MessageModifier returns a function of the type of Eino's
// react.MessageModifier that trims its input to budget with Trim and
// opts: set it as a ReAct agent's MessageModifier (the model sees the
// trimmed history, the agent's state keeps everything) or MessageRewriter
// (the state itself is trimmed, so the history stops growing; the notices
// Trim leaves are recognised on the next call and never stack). Use it
// where a ChatModel cannot go, a runtime that takes a modifier rather
// than a model; a ChatModel also recovers from overflows and feeds a
// Calibration. For the tools the agent binds, pass
// history.WithOverhead(Overhead(tools, counter)); a Calibration fed
// elsewhere can be passed with history.WithCalibration.
//
// Such a function cannot return an error, so it reports it to onError
// (with the call's context), when onError is not nil, and returns:
//
//   - when even the latest turn does not fit the budget
//     (history.ErrLatestTurnTooLarge, a *history.BudgetError): the trimmed
//     messages, the smallest history Trim can send (prefix, notice and
//     latest turn, or its newest steps under history.WithStepTrim), which
//     may still be too long for the model;
//   - on any other error (a message that does not convert, wrapping
//     ErrInvalidMessage; an invalid option or budget): input itself,
//     untouched, so the model call goes ahead as it would without the
//     modifier.
//
// Without an error it returns Trim's output: input itself when nothing
// had to go. It never modifies input's messages. opts is copied.
func MessageModifier(budget int, onError func(ctx context.Context, err error), opts ...history.Option) func(ctx context.Context, input []*schema.Message) []*schema.Message {
	opts = slices.Clip(slices.Clone(opts))
	return func(ctx context.Context, input []*schema.Message) []*schema.Message {
		out, _, err := Trim(input, budget, opts...)
		if err == nil {
			return out
		}
		if onError != nil {
			onError(ctx, err)
		}
		if errors.Is(err, history.ErrLatestTurnTooLarge) && out != nil {
			return out
		}
		return input
	}
}
