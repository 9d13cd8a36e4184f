package anthropicv2

import (
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// uncarrying reports whether last cannot carry a summary request: it
// forces a tool call (tool_choice any or tool), which leaves no text, or
// a JSON reply (output_config.format), which is no summary. It is kept
// apart from summarizer.go, which the beta package generates from it,
// since the beta params have more such fields.
func uncarrying(last *anthropic.MessageNewParams) bool {
	return last.ToolChoice.OfAny != nil || last.ToolChoice.OfTool != nil || !param.IsOmitted(last.OutputConfig.Format)
}
