package goopenai

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	openai "github.com/sashabaranov/go-openai"
)

// Overhead returns the tokens a request sends besides its messages,
// counted with c (nil: history.Heuristic()): its Tools, its deprecated
// Functions and its ResponseFormat, each encoded to JSON as the client
// sends it and counted as the text of one system message. req.Messages is
// not read. Pass it with history.WithOverhead, so that the messages fit
// the budget together with it and Result.TokensAfter counts the whole
// request, the figure history.Calibration.Observe takes with
// usage.prompt_tokens. A field that does not encode (which the client
// could not send either) counts 0; the sum saturates at math.MaxInt.
func Overhead(req openai.ChatCompletionRequest, c history.Counter) int {
	//lint:ignore SA1019 the deprecated functions are still sent, so they are counted.
	fns := req.Functions
	return adapt.Overhead(c, adapt.JSONIf(len(req.Tools) > 0, req.Tools), adapt.JSONIf(len(fns) > 0, fns),
		adapt.JSONIf(req.ResponseFormat != nil, req.ResponseFormat))
}
