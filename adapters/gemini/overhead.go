package gemini

import (
	"encoding/json"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"google.golang.org/genai"
)

// Overhead returns the tokens a request with config sends besides its
// contents and its system instruction, counted with c (nil means
// history.Heuristic()): the tool definitions (config.Tools) and the
// response schema (config.ResponseSchema and config.ResponseJsonSchema).
// Pass it to Trim and RecoverOverflow with history.WithOverhead, so that the
// contents fit the budget together with it and Result.TokensAfter counts the
// whole request, the figure history.Calibration.Observe takes:
//
//	opts := []history.Option{history.WithOverhead(gemini.Overhead(config, nil)), history.WithCalibration(cal)}
//	out, res, err := gemini.Trim(config.SystemInstruction, contents, budget, opts...)
//
// The system instruction is not counted here: Trim counts it when it is
// given as Trim's system argument, as it should be. What is counted is the
// JSON the fields encode to, in one object ({"tools": [...],
// "responseSchema": {...}, "responseJsonSchema": ...}, absent fields left
// out) counted as the text of one system message, so c's per-message
// framing is counted once. A field that does not encode as JSON (which the
// client could not send either) is left out. A nil config, or one with none
// of these fields, costs 0; the result is never negative. config is not
// modified.
func Overhead(config *genai.GenerateContentConfig, c history.Counter) int {
	if config == nil {
		return 0
	}
	req := make(map[string]json.RawMessage, 3)
	add := func(key string, v any) {
		if b, err := json.Marshal(v); err == nil {
			req[key] = b
		}
	}
	if len(config.Tools) > 0 {
		add("tools", config.Tools)
	}
	if config.ResponseSchema != nil {
		add("responseSchema", config.ResponseSchema)
	}
	if config.ResponseJsonSchema != nil {
		add("responseJsonSchema", config.ResponseJsonSchema)
	}
	if len(req) == 0 {
		return 0
	}
	b, err := json.Marshal(req)
	if err != nil { // every value is valid JSON already
		return 0
	}
	return adapt.Overhead(c, string(b))
}
