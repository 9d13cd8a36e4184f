package goopenai

import (
	"encoding/json"
	"math"

	"github.com/histrim/history"
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
	if c == nil {
		c = history.Heuristic()
	}
	total := 0
	add := func(v any) {
		raw, err := json.Marshal(v)
		if err != nil {
			return
		}
		n := max(c.CountMessage(history.Message{Role: history.RoleSystem, Content: string(raw)}), 0)
		total = min(total, math.MaxInt-n) + n
	}
	if len(req.Tools) > 0 {
		add(req.Tools)
	}
	//lint:ignore SA1019 the deprecated functions are still sent, so they are counted.
	if fns := req.Functions; len(fns) > 0 {
		add(fns)
	}
	if req.ResponseFormat != nil {
		add(req.ResponseFormat)
	}
	return total
}
