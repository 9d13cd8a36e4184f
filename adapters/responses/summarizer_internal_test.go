package responses

import (
	"testing"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// TestSummaryRequest: the cache-safe form appends the instruction and sets
// the cap alone, and is refused for a request that cannot carry a summary.
func TestSummaryRequest(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(p *responses.ResponseNewParams)
		ok     bool
		reason string
	}{
		{name: "items", edit: func(*responses.ResponseNewParams) {}, ok: true, reason: "the common case"},
		{name: "string input", edit: func(p *responses.ResponseNewParams) {
			p.Input = responses.ResponseNewParamsInputUnion{OfString: param.NewOpt("hi")}
		}, ok: true, reason: "a string input is one user message"},
		{name: "previous response", edit: func(p *responses.ResponseNewParams) { p.PreviousResponseID = param.NewOpt("resp_1") },
			ok: true, reason: "a new response off the chain changes nothing of it"},
		{name: "conversation", edit: func(p *responses.ResponseNewParams) {
			p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: param.NewOpt("conv_1")}
		}, reason: "the summary exchange would join the server's conversation"},
		{name: "required", edit: func(p *responses.ResponseNewParams) {
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: param.NewOpt(responses.ToolChoiceOptionsRequired)}
		}, reason: "a forced tool call leaves no text"},
		{name: "function", edit: func(p *responses.ResponseNewParams) {
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "read"}}
		}, reason: "a forced tool call leaves no text"},
		{name: "json", edit: func(p *responses.ResponseNewParams) {
			p.Text.Format = responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "x"}}
		}, reason: "a structured reply is no summary"},
		{name: "background", edit: func(p *responses.ResponseNewParams) { p.Background = param.NewOpt(true) },
			reason: "a background response answers before it is written"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := responses.ResponseNewParams{Model: "gpt-5", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: []Item{
				responses.ResponseInputItemParamOfMessage("hi", responses.EasyInputMessageRoleUser)}}}
			tt.edit(&p)
			r, ok := summaryRequest(p, "summarise", 8)
			if ok != tt.ok || (ok && (len(r.Input.OfInputItemList) != 2 || r.MaxOutputTokens.Value != 16 || r.PreviousResponseID != p.PreviousResponseID)) {
				t.Errorf("summaryRequest = %v, %+v (%s)", ok, r, tt.reason)
			}
		})
	}
}
