package fantasy

import (
	"charm.land/fantasy"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// Overhead returns the tokens a call's tools cost besides its messages,
// counted with c (nil: history.Heuristic()): the tools encoded as the
// "tools" array of an OpenAI-style request (a function tool as
// {"type":"function","function":{"name","description","parameters"}}, a
// provider-defined tool as its id, name and arguments), counted as the
// text of one system message. Pass it with history.WithOverhead, so that
// the messages fit the budget together with the tools and
// Result.TokensAfter counts the whole request, the figure
// history.Calibration.Observe takes. No tools cost 0.
func Overhead(tools []fantasy.Tool, c history.Counter) int {
	if len(tools) == 0 {
		return 0
	}
	type function struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters,omitempty"`
	}
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		switch t := t.(type) {
		case fantasy.FunctionTool:
			out = append(out, map[string]any{"type": "function", "function": function{t.Name, t.Description, t.InputSchema}})
		case *fantasy.FunctionTool:
			if t != nil {
				out = append(out, map[string]any{"type": "function", "function": function{t.Name, t.Description, t.InputSchema}})
			}
		case nil:
		default:
			out = append(out, t)
		}
	}
	return adapt.Overhead(c, adapt.JSON(out))
}

// PromptTokens returns the provider's count of the request's input from a
// response's usage: the input tokens with the cache reads and writes
// fantasy's providers report apart (OpenAI's prompt_tokens less its cached
// tokens; Anthropic's three counts).
func PromptTokens(u fantasy.Usage) int {
	return int(u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens)
}
