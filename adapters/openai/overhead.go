package openai

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
)

// Overhead returns what params sends besides its messages, in c's tokens
// (nil: [history.Heuristic]): the tool definitions (Tools), the deprecated
// function definitions (Functions) and the response format with its JSON
// schema (ResponseFormat). Each that is set is encoded to JSON as the SDK
// sends it (param.Override values and extra fields set on them included)
// and counted as the text of one system message, framing included. Pass it
// to every trim of the request's messages with [history.WithOverhead], so
// that the messages get the budget less what the request needs around
// them, and Result.TokensAfter counts the whole request (what
// [history.Calibration.Observe] takes):
//
//	opts := []history.Option{history.WithOverhead(hopenai.Overhead(params, nil))}
//
// params.Messages is not read: Trim counts it. The other fields (tool
// choice, prediction, sampling settings) are left out; they cost a few
// tokens at most, or none of the prompt. Use the Counter the trim uses.
// The result is never negative and saturates at math.MaxInt; a part that
// does not encode (the SDK could not send it either), or is set to null,
// counts 0. Overhead
// never modifies params.
func Overhead(params openai.ChatCompletionNewParams, c history.Counter) int {
	fns := legacyFunctions(&params)
	return adapt.Overhead(c, adapt.JSONIf(len(params.Tools) > 0, params.Tools), adapt.JSONIf(len(fns) > 0, fns),
		adapt.JSONIf(!param.IsOmitted(params.ResponseFormat), params.ResponseFormat))
}
