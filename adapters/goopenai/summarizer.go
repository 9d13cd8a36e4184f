package goopenai

import (
	"context"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
	openai "github.com/sashabaranov/go-openai"
)

// Summarizer is a ready-made [history.Summarizer] on go-openai's
// CreateChatCompletion (docs/summaries.md): Summarize, Sent(req), which
// records each request the conversation sends, and Option, for a
// history.Trimmer over the conversation (this adapter has no Trimmer of
// its own: convert with ToHistory and map back with history.ApplyFunc):
//
//	sum := hgoopenai.NewSummarizer(client, hgoopenai.SummarizerConfig{})
//	tr := history.NewTrimmer(sum.Option(), history.WithLowWater(0.7))
//	// before every request:
//	hist, _ := hgoopenai.ToHistory(transcript)
//	res, err := tr.Trim(hist, window)
//	req.Messages = history.ApplyFunc(transcript, res, render) // see ExampleNewSummarizer
//	sum.Sent(req)
//	resp, err := client.CreateChatCompletion(ctx, req)
//
// Its summary request is the last request recorded, the instruction
// appended as a user message and max_completion_tokens set (max_tokens
// when the request capped with it), not streamed, so that the provider
// reads the conversation from its prompt cache. It sends a request of its
// own instead when that request forces a tool call (ToolChoice "required"
// or a named tool, FunctionCall named) or a JSON reply (ResponseFormat),
// and in the other cases docs/summaries.md lists. A reply cut at its cap
// (finish_reason "length") is an error. It is safe for concurrent use;
// use one per conversation.
type Summarizer = summarize.Summarizer[openai.ChatCompletionRequest]

// SummarizerConfig configures a [Summarizer]; every adapter's is this
// one type (docs/summaries.md lists its fields).
type SummarizerConfig = summarize.Config

// NewSummarizer returns a [Summarizer] that sends its requests with
// client.CreateChatCompletion.
func NewSummarizer(client *openai.Client, cfg SummarizerConfig) *Summarizer {
	return summarize.New(&summarize.Codec[openai.ChatCompletionRequest]{
		Name: "goopenai",
		Prefix: func(last openai.ChatCompletionRequest, c history.Counter) ([]history.Message, int, error) {
			msgs, err := ToHistory(last.Messages)
			return msgs, Overhead(last, c), err
		},
		Model:     func(last openai.ChatCompletionRequest) string { return last.Model },
		CacheSafe: summaryRequest,
		Plain: func(model string, _ *openai.ChatCompletionRequest, system, user string, tokens int) openai.ChatCompletionRequest {
			return openai.ChatCompletionRequest{Model: model, MaxCompletionTokens: tokens, Messages: []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleSystem, Content: system}, {Role: openai.ChatMessageRoleUser, Content: user}}}
		},
		Send: func(ctx context.Context, req openai.ChatCompletionRequest) (string, bool, error) {
			r, err := client.CreateChatCompletion(ctx, req)
			if err != nil || len(r.Choices) == 0 {
				return "", false, err
			}
			return r.Choices[0].Message.Content, r.Choices[0].FinishReason == openai.FinishReasonLength, nil
		},
	}, cfg)
}

// summaryRequest is the cache-safe form: last, text appended as a user
// message, the reply capped at tokens (in the field last caps it with),
// one choice, not streamed. false when last forces a tool call or a JSON
// reply.
func summaryRequest(last openai.ChatCompletionRequest, text string, tokens int) (openai.ChatCompletionRequest, bool) {
	structured := last.ResponseFormat != nil && last.ResponseFormat.Type != "" && last.ResponseFormat.Type != openai.ChatCompletionResponseFormatTypeText
	//lint:ignore SA1019 a request may still force a function with the deprecated field.
	fc := last.FunctionCall
	if structured || forcesTool(last.ToolChoice) || (fc != nil && !isMode(fc)) {
		return last, false
	}
	req := last
	req.Messages = append(slices.Clip(last.Messages), openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text})
	//lint:ignore SA1019 a request capped with the deprecated field keeps it: both at once are refused.
	if last.MaxTokens > 0 && last.MaxCompletionTokens == 0 {
		//lint:ignore SA1019 as above.
		req.MaxTokens = tokens
	} else {
		req.MaxCompletionTokens = tokens
	}
	req.N, req.Stream, req.StreamOptions = 0, false, nil
	return req, true
}

// forcesTool reports whether a request's ToolChoice makes the model call a
// tool rather than answer in text: "required", or a named tool.
func forcesTool(choice any) bool {
	switch c := choice.(type) {
	case nil:
		return false
	case string:
		return c == "required"
	}
	return true
}

// isMode reports whether a deprecated function_call is a mode ("none",
// "auto") rather than a named function.
func isMode(fc any) bool {
	_, ok := fc.(string)
	return ok
}
