package eino

import (
	"encoding/json"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// RecoverOverflow trims msgs further after a chat model rejected them as
// too long for its context window, so that the caller can retry. msgs is
// what was sent in the rejected request (usually the output of Trim),
// providerErr the chat model's error and attempt the number of this
// recovery for the request: 1 after the first rejection, 2 after the retry
// was rejected too. The target is derived from what the provider said
// (history.RecoverOverflow, docs/overflow.md); the decision is mapped back
// onto the caller's messages exactly as Trim maps it, so the output holds
// the caller's pointers, notices marked in Extra[KindKey] and elided
// results as Trim renders them. Pass the options the request was trimmed
// with (history.WithCalibration records the sizes the error states).
// Pins (history.WithPin) index msgs, one for one.
//
// Errors are the core's: history.ErrNotOverflow when providerErr is not a
// context overflow (a rate limit, an auth failure, nil), with msgs itself
// (clipped) and an identity Result: handle the error some other way; a
// *history.RecoverError (wrapping history.ErrCannotRecover and
// providerErr) when only the prefix and the latest turn are left, with
// those messages: surface the error instead of retrying. A message that
// does not convert gives an error wrapping ErrInvalidMessage and no
// messages. RecoverOverflow never modifies msgs.
//
// A retry loop with at most two retries (ChatModel does this for you):
//
//	send, res, err := eino.Trim(msgs, budget, opts...)
//	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
//		return nil, err
//	}
//	reply, err := chatModel.Generate(ctx, send)
//	for attempt := 1; err != nil && attempt <= 2; attempt++ {
//		var rerr error
//		if send, res, rerr = eino.RecoverOverflow(send, err, attempt, opts...); rerr != nil {
//			break // not an overflow, or nothing left to drop: err stands
//		}
//		reply, err = chatModel.Generate(ctx, send)
//	}
//	if err != nil {
//		return nil, err
//	}
//	cal.Observe(res.TokensAfter, reply.ResponseMeta.Usage.PromptTokens)
func RecoverOverflow(msgs []*schema.Message, providerErr error, attempt int, opts ...history.Option) ([]*schema.Message, history.Result, error) {
	return codec.RecoverOverflow(struct{}{}, msgs, providerErr, attempt, opts)
}

// wireTool is one entry of the "tools" array of an OpenAI-style chat
// request, as the Eino chat models of OpenAI-compatible endpoints send it.
type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters"`
}

// Overhead returns the tokens the tool definitions tools cost a request
// besides its messages, counted with c (nil: history.Heuristic()): the
// tools are encoded to JSON as the "tools" array of an OpenAI-style chat
// request (what Eino's OpenAI, Ark, DeepSeek, Qwen and Ollama models send:
// {"type":"function","function":{"name","description","parameters"}},
// parameters being the tool's ParamsOneOf as JSON Schema) and that text
// is counted as one system message. Pass it to Trim and RecoverOverflow
// with history.WithOverhead, so that the budget leaves room for the tools
// and Result.TokensAfter counts the whole request, what
// history.Calibration.Observe takes. Providers with another tool format
// (Claude, Gemini) encode the same schemas at a similar size; a
// Calibration absorbs the difference.
//
// No tools (nil or empty) cost 0. A nil tool is skipped; a tool whose
// parameters do not convert to JSON Schema is counted by its name and
// description (the chat model rejects it anyway). Overhead never modifies
// tools.
func Overhead(tools []*schema.ToolInfo, c history.Counter) int {
	wire := make([]wireTool, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		w := wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Desc}}
		if js, err := t.ToJSONSchema(); err == nil && js != nil {
			w.Function.Parameters = js
		}
		wire = append(wire, w)
	}
	if len(wire) == 0 {
		return 0
	}
	b, err := json.Marshal(wire)
	if err != nil { // a schema whose JSON encoding fails: count the names
		for i := range wire {
			wire[i].Function.Parameters = nil
		}
		b, _ = json.Marshal(wire)
	}
	return adapt.Overhead(c, string(b))
}
