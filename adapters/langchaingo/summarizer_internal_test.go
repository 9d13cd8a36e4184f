package langchaingo

import (
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// TestSummaryCall: the cache-safe form appends the instruction and the cap
// alone; it is refused for a call that forces a tool call or JSON.
func TestSummaryCall(t *testing.T) {
	tests := []struct {
		name   string
		opts   []llms.CallOption
		ok     bool
		reason string
	}{
		{name: "none", ok: true, reason: "the common case"},
		{name: "auto", opts: []llms.CallOption{llms.WithToolChoice("auto")}, ok: true, reason: "the model may answer in text"},
		{name: "none choice", opts: []llms.CallOption{llms.WithToolChoice(llms.ToolChoice{Type: "none"})}, ok: true, reason: "no tool call at all"},
		{name: "required", opts: []llms.CallOption{llms.WithToolChoice("required")}, reason: "a forced tool call leaves no text"},
		{name: "any", opts: []llms.CallOption{llms.WithToolChoice("any")}, reason: "Anthropic's name for it"},
		{name: "named", opts: []llms.CallOption{llms.WithToolChoice(llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: "read"}})},
			reason: "a forced tool call leaves no text"},
		{name: "named pointer", opts: []llms.CallOption{llms.WithToolChoice(&llms.ToolChoice{Type: "function"})}, reason: "either form"},
		{name: "json", opts: []llms.CallOption{llms.WithJSONMode()}, reason: "a JSON reply is no summary"},
		{name: "json MIME", opts: []llms.CallOption{llms.WithResponseMIMEType("application/json")}, reason: "a JSON reply is no summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := lcCall{msgs: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, opts: tt.opts}
			r, ok := lcSummaryCall(c, "summarise", 300)
			if ok != tt.ok || (ok && (len(r.msgs) != 2 || len(c.msgs) != 1 || applied(r.opts).MaxTokens != 300)) {
				t.Errorf("lcSummaryCall = %v, %d messages (%s)", ok, len(r.msgs), tt.reason)
			}
		})
	}
}
