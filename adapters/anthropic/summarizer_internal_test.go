package anthropic

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
)

// TestSummaryRequest: the cache-safe form appends the instruction and sets
// max_tokens alone, above the thinking budget; it is refused for a
// request that forces a tool call or a JSON reply.
func TestSummaryRequest(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(p *anthropic.MessageNewParams)
		max    int64 // 0: refused
		reason string
	}{
		{name: "plain", edit: func(*anthropic.MessageNewParams) {}, max: 300, reason: "max_tokens caps the reply"},
		{name: "thinking", edit: func(p *anthropic.MessageNewParams) { p.Thinking = anthropic.ThinkingConfigParamOfEnabled(2048) },
			max: 2348, reason: "budget_tokens must stay below max_tokens, and the thinking setting must not change"},
		{name: "tool choice auto", edit: func(p *anthropic.MessageNewParams) {
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
		}, max: 300, reason: "auto leaves the model free to answer in text"},
		{name: "tool choice any", edit: func(p *anthropic.MessageNewParams) {
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
		}, reason: "a forced tool call leaves no text"},
		{name: "tool choice tool", edit: func(p *anthropic.MessageNewParams) { p.ToolChoice = anthropic.ToolChoiceParamOfTool("read") },
			reason: "a forced tool call leaves no text"},
		{name: "json", edit: func(p *anthropic.MessageNewParams) {
			p.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: map[string]any{"type": "object"}}
		}, reason: "a structured reply is no summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 8192,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
			tt.edit(&p)
			r, ok := summaryRequest(p, "summarise", 300)
			if ok != (tt.max > 0) || (ok && (r.MaxTokens != tt.max || len(r.Messages) != 2 || len(p.Messages) != 1)) {
				t.Errorf("summaryRequest = %v, max_tokens %d, %d messages; want max_tokens %d (%s)", ok, r.MaxTokens, len(r.Messages), tt.max, tt.reason)
			}
		})
	}
}
