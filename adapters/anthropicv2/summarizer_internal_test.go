package anthropicv2

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// TestSummaryRequest: the cache-safe form appends the instruction and sets
// max_tokens alone, above the thinking budget, or, with thinking that has
// no budget, at least the last request's; it is refused for a request
// that forces a tool call or a JSON reply.
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
		{name: "thinking disabled", edit: func(p *anthropic.MessageNewParams) {
			p.Thinking = anthropic.ThinkingConfigParamUnion{OfDisabled: &anthropic.ThinkingConfigDisabledParam{}}
		}, max: 300, reason: "no thinking, no room for it"},
		{name: "adaptive", edit: func(p *anthropic.MessageNewParams) {
			p.Thinking = anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
		}, max: 8192, reason: "adaptive thinking draws on max_tokens: the last request's, above the cap"},
		{name: "adaptive small", edit: func(p *anthropic.MessageNewParams) {
			p.Thinking = anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
			p.MaxTokens = 200
		}, max: 300, reason: "never below the reply's cap"},
		{name: "between_tools", edit: func(p *anthropic.MessageNewParams) {
			p.Thinking = anthropic.ThinkingConfigParamUnion{OfBetweenTools: &anthropic.ThinkingConfigBetweenToolsParam{}}
		}, max: 8192, reason: "between_tools has no budget either"},
		{name: "tool choice auto", edit: func(p *anthropic.MessageNewParams) {
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
		}, max: 300, reason: "auto leaves the model free to answer in text"},
		{name: "tool choice none", edit: func(p *anthropic.MessageNewParams) {
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
		}, max: 300, reason: "none asks for text"},
		{name: "tool choice any", edit: func(p *anthropic.MessageNewParams) {
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
		}, reason: "a forced tool call leaves no text"},
		{name: "tool choice tool", edit: func(p *anthropic.MessageNewParams) { p.ToolChoice = anthropic.ToolChoiceParamOfTool("read") },
			reason: "a forced tool call leaves no text"},
		{name: "json", edit: func(p *anthropic.MessageNewParams) {
			p.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: map[string]any{"type": "object"}}
		}, reason: "a structured reply is no summary"},
		{name: "effort", edit: func(p *anthropic.MessageNewParams) { p.OutputConfig.Effort = anthropic.OutputConfigEffortLow },
			max: 300, reason: "effort leaves the reply text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 8192,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
			tt.edit(&p)
			r, ok := summaryRequest(p, "summarise", 300)
			if ok != (tt.max > 0) || (ok && (r.MaxTokens != tt.max || len(r.Messages) != 2 || len(p.Messages) != 1 ||
				r.Messages[1].OfUser == nil || r.Thinking != p.Thinking)) {
				t.Errorf("summaryRequest = %v, max_tokens %d, %d messages; want max_tokens %d (%s)", ok, r.MaxTokens, len(r.Messages), tt.max, tt.reason)
			}
		})
	}
}
