package goopenai

import (
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestSummaryRequest: the cache-safe form changes the cap alone (in the
// field the request caps with), not streamed, and is refused for a
// request that forces a tool call or a JSON reply.
func TestSummaryRequest(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(r *openai.ChatCompletionRequest)
		ok     bool
		check  func(r openai.ChatCompletionRequest) bool
		reason string
	}{
		{name: "plain", edit: func(*openai.ChatCompletionRequest) {}, ok: true,
			//lint:ignore SA1019 the deprecated cap must stay unset.
			check:  func(r openai.ChatCompletionRequest) bool { return r.MaxCompletionTokens == 300 && r.MaxTokens == 0 },
			reason: "max_completion_tokens caps the reply"},
		//lint:ignore SA1019 requests still cap with the deprecated field.
		{name: "legacy cap", edit: func(r *openai.ChatCompletionRequest) { r.MaxTokens = 4096 }, ok: true,
			//lint:ignore SA1019 the deprecated cap is the one set.
			check:  func(r openai.ChatCompletionRequest) bool { return r.MaxTokens == 300 && r.MaxCompletionTokens == 0 },
			reason: "a request capped with max_tokens keeps that field"},
		{name: "stream", edit: func(r *openai.ChatCompletionRequest) {
			r.Stream, r.N, r.StreamOptions = true, 2, &openai.StreamOptions{IncludeUsage: true}
		}, ok: true,
			check:  func(r openai.ChatCompletionRequest) bool { return !r.Stream && r.N == 0 && r.StreamOptions == nil },
			reason: "CreateChatCompletion refuses a streamed request"},
		//lint:ignore SA1019 requests still set the deprecated function_call.
		{name: "auto", edit: func(r *openai.ChatCompletionRequest) { r.ToolChoice, r.FunctionCall = "auto", "auto" }, ok: true,
			check: func(openai.ChatCompletionRequest) bool { return true }, reason: "the model may answer in text"},
		{name: "required", edit: func(r *openai.ChatCompletionRequest) { r.ToolChoice = "required" }, reason: "a forced tool call leaves no text"},
		{name: "named", edit: func(r *openai.ChatCompletionRequest) {
			r.ToolChoice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: "read"}}
		}, reason: "a forced tool call leaves no text"},
		//lint:ignore SA1019 requests still set the deprecated function_call.
		{name: "function call", edit: func(r *openai.ChatCompletionRequest) { r.FunctionCall = openai.FunctionCall{Name: "read"} },
			reason: "the deprecated form of a named tool"},
		{name: "json", edit: func(r *openai.ChatCompletionRequest) {
			r.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
		}, reason: "a JSON reply is no summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := openai.ChatCompletionRequest{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hi"}}}
			tt.edit(&p)
			r, ok := summaryRequest(p, "summarise", 300)
			if ok != tt.ok || (ok && (len(r.Messages) != 2 || len(p.Messages) != 1 || !tt.check(r))) {
				t.Errorf("summaryRequest = %v, %d messages (%s)", ok, len(r.Messages), tt.reason)
			}
		})
	}
}
