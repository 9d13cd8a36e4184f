package beta

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// TestSummaryRequest: the beta params' own ways of not carrying a summary
// (the older top-level output_format, a message thread) refuse the
// cache-safe form as the GA ones do; the budget rules are the GA
// package's (generated).
func TestSummaryRequest(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(p *anthropic.BetaMessageNewParams)
		max    int64 // 0: refused
		reason string
	}{
		{name: "plain", edit: func(*anthropic.BetaMessageNewParams) {}, max: 300, reason: "max_tokens caps the reply"},
		{name: "thinking", edit: func(p *anthropic.BetaMessageNewParams) { p.Thinking = anthropic.BetaThinkingConfigParamOfEnabled(2048) },
			max: 2348, reason: "budget_tokens must stay below max_tokens"},
		{name: "adaptive", edit: func(p *anthropic.BetaMessageNewParams) {
			p.Thinking = anthropic.BetaThinkingConfigParamUnion{OfAdaptive: &anthropic.BetaThinkingConfigAdaptiveParam{}}
		}, max: 8192, reason: "adaptive thinking draws on max_tokens"},
		{name: "tool choice any", edit: func(p *anthropic.BetaMessageNewParams) {
			p.ToolChoice = anthropic.BetaToolChoiceUnionParam{OfAny: &anthropic.BetaToolChoiceAnyParam{}}
		}, reason: "a forced tool call leaves no text"},
		{name: "json", edit: func(p *anthropic.BetaMessageNewParams) {
			p.OutputConfig.Format = anthropic.BetaJSONOutputFormatParam{Schema: map[string]any{"type": "object"}}
		}, reason: "a structured reply is no summary"},
		{name: "output_format", edit: func(p *anthropic.BetaMessageNewParams) {
			//lint:ignore SA1019 callers still set the deprecated field.
			p.OutputFormat = anthropic.BetaJSONOutputFormatParam{Schema: map[string]any{"type": "object"}}
		}, reason: "the older field of a structured reply"},
		{name: "thread create", edit: func(p *anthropic.BetaMessageNewParams) {
			p.Thread = anthropic.BetaMessageThreadParamUnion{OfCreate: &anthropic.BetaThreadCreateParams{}}
		}, reason: "the summary request would start the server's thread"},
		{name: "thread continue", edit: func(p *anthropic.BetaMessageNewParams) {
			p.Thread = anthropic.BetaMessageThreadParamOfContinue("msg_01")
		}, reason: "the summary request would join the server's thread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := anthropic.BetaMessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 8192,
				Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("hi"))}}
			tt.edit(&p)
			r, ok := summaryRequest(p, "summarise", 300)
			if ok != (tt.max > 0) || (ok && (r.MaxTokens != tt.max || len(r.Messages) != 2 || len(p.Messages) != 1)) {
				t.Errorf("summaryRequest = %v, max_tokens %d, %d messages; want max_tokens %d (%s)", ok, r.MaxTokens, len(r.Messages), tt.max, tt.reason)
			}
		})
	}
}
