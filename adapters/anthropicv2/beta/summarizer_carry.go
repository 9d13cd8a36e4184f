package beta

import (
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// uncarrying reports whether last cannot carry a summary request: it
// forces a tool call (tool_choice any or tool), which leaves no text; it
// asks for a JSON reply (output_config.format, or the older top-level
// output_format), which is no summary; or it names a message thread
// (thread create or continue), whose history the server keeps and which
// the summary request would write to. Unlike summarizer.go it is not
// generated: the GA params have no output_format or thread.
func uncarrying(last *anthropic.BetaMessageNewParams) bool {
	//lint:ignore SA1019 the deprecated output_format is still sent, and still asks for JSON.
	oldFormat := !param.IsOmitted(last.OutputFormat)
	return last.ToolChoice.OfAny != nil || last.ToolChoice.OfTool != nil ||
		!param.IsOmitted(last.OutputConfig.Format) || oldFormat || !param.IsOmitted(last.Thread)
}
