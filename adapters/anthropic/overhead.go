package anthropic

import (
	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicmsg"
)

// Overhead returns what params sends besides its messages and its system
// prompt, counted with c (nil means history.Heuristic()): the tool
// definitions (params.Tools) and the structured-output schema
// (params.OutputConfig.Format), each read from the JSON the SDK sends, so
// that fields set with param.Override or SetExtraFields count too. The
// JSON texts are counted together as one message (c.CountMessage of a
// system message holding them, one per line), framing included; a request
// with neither costs 0.
//
// Pass it to every trim of the request with history.WithOverhead, so that
// the budget leaves room for them and Result.TokensAfter counts the whole
// request (what history.Calibration.Observe takes):
//
//	opts := []history.Option{history.WithOverhead(hanthropic.Overhead(params, nil))}
//
// The system prompt is not counted here: [Trim] counts it, as the first
// message of the converted history. The tool-use system prompt the API
// adds on its side when tools are present is not in the request; a
// history.Calibration learns it. Overhead never modifies params; it returns
// 0 if params cannot be encoded (the request could not be sent either).
func Overhead(params anthropic.MessageNewParams, c history.Counter) int {
	// Only the fields read here are encoded: the messages and the system
	// prompt can be large.
	params.Messages, params.System = nil, nil
	return anthropicmsg.Overhead(c, params)
}
