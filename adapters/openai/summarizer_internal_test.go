package openai

import (
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// TestSummaryRequest: the cache-safe form changes the cap alone (in the
// field the request caps with), and is refused for a request that cannot
// carry a summary.
func TestSummaryRequest(t *testing.T) {
	base := func() openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	}
	tests := []struct {
		name   string
		edit   func(p *openai.ChatCompletionNewParams)
		ok     bool
		check  func(r openai.ChatCompletionNewParams) bool
		reason string
	}{
		{name: "plain", edit: func(*openai.ChatCompletionNewParams) {}, ok: true,
			check: func(r openai.ChatCompletionNewParams) bool {
				return r.MaxCompletionTokens.Value == 300 && param.IsOmitted(r.MaxTokens)
			},
			reason: "max_completion_tokens caps the reply"},
		{name: "legacy cap", edit: func(p *openai.ChatCompletionNewParams) { p.MaxTokens = param.NewOpt[int64](4096) }, ok: true,
			check: func(r openai.ChatCompletionNewParams) bool {
				return r.MaxTokens.Value == 300 && param.IsOmitted(r.MaxCompletionTokens)
			},
			reason: "a request capped with max_tokens keeps that field: both at once are refused"},
		{name: "stream options", edit: func(p *openai.ChatCompletionNewParams) {
			p.StreamOptions.IncludeUsage = param.NewOpt(true)
			p.N = param.NewOpt[int64](3)
		}, ok: true,
			check: func(r openai.ChatCompletionNewParams) bool {
				return param.IsOmitted(r.StreamOptions) && param.IsOmitted(r.N)
			},
			reason: "the summary is one reply, not streamed"},
		{name: "required", edit: func(p *openai.ChatCompletionNewParams) {
			p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt("required")}
		}, reason: "a forced tool call leaves no text"},
		{name: "named tool", edit: func(p *openai.ChatCompletionNewParams) {
			p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "read"})
		}, reason: "a forced tool call leaves no text"},
		{name: "json schema", edit: func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "x"}}
		}, reason: "a structured reply is no summary"},
		{name: "audio", edit: func(p *openai.ChatCompletionNewParams) { p.Modalities = []string{"text", "audio"} },
			reason: "an audio reply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.edit(&p)
			r, ok := summaryRequest(p, "summarise", 300)
			if ok != tt.ok || (ok && (len(r.Messages) != 2 || len(p.Messages) != 1 || !tt.check(r))) {
				t.Errorf("summaryRequest = %v, %d messages (%s)", ok, len(r.Messages), tt.reason)
			}
		})
	}
}
