package openai

import (
	"encoding/json"
	"math"

	"github.com/histrim/history"
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
	if c == nil {
		c = history.Heuristic()
	}
	total := 0
	add := func(v any) {
		raw, err := json.Marshal(v)
		if err != nil || string(raw) == "null" {
			return
		}
		n := max(c.CountMessage(history.Message{Role: history.RoleSystem, Content: string(raw)}), 0)
		if n > math.MaxInt-total {
			total = math.MaxInt
			return
		}
		total += n
	}
	if len(params.Tools) > 0 {
		add(params.Tools)
	}
	if fns := legacyFunctions(&params); len(fns) > 0 {
		add(fns)
	}
	if !param.IsOmitted(params.ResponseFormat) {
		add(params.ResponseFormat)
	}
	return total
}
