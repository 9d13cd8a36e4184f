package langchaingo

import (
	"encoding/json"
	"fmt"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/tmc/langchaingo/llms"
)

// Overhead returns what the tool definitions a request sends (the tools
// given with llms.WithTools) cost besides its messages, in c's units (nil
// means history.Heuristic()), for history.WithOverhead: the JSON encoding
// of tools, which is what OpenAI-compatible providers receive key for key,
// counted as the content of one system message. No tools cost 0. A tool
// whose parameters do not encode to JSON (the provider could not send it
// either) is counted with its parameters in their printed form instead. Overhead never modifies
// tools.
//
// A trim given history.WithOverhead(Overhead(tools, c)) fits the messages
// into what the tools leave of the budget, and its Result.TokensAfter is
// the whole request, the figure history.Calibration.Observe takes. A
// response schema configured on the provider client rather than in the call
// (openai.WithResponseFormat) is not among the tools: count its JSON the
// same way and add it.
func Overhead(tools []llms.Tool, c history.Counter) int {
	if len(tools) == 0 {
		return 0
	}
	text, err := json.Marshal(tools)
	if err != nil {
		text = printable(tools)
	}
	return adapt.Overhead(c, string(text))
}

// printable encodes tools with the parameters that do not encode to JSON
// replaced by their printed form.
func printable(tools []llms.Tool) []byte {
	safe := make([]llms.Tool, len(tools))
	for i, t := range tools {
		if t.Function != nil {
			f := *t.Function
			if _, err := json.Marshal(f.Parameters); err != nil {
				f.Parameters = fmt.Sprint(f.Parameters)
			}
			t.Function = &f
		}
		safe[i] = t
	}
	text, _ := json.Marshal(safe) // every field now encodes
	return text
}
